import Foundation
import SentinelCore
import SentinelWire

/// CVAT for video 1.1 XML (and CVAT for images with track ids), read by the strict reader.
extension TrackFile {
    /// CVAT for video 1.1 (`<track>`s of `<box>`es) or CVAT for images 1.1 (`<image>`s of `<box>`es, each with its
    /// track's id in a `track_id` attribute, as CVAT and datumaro write tracks split by frame), read by `XMLReader`.
    static func readCVAT(_ data: Data, _ path: String) throws(LabelError) -> TrackSet {
        var state = CVATState(path: path)
        do {
            try XMLReader.read(data) { event, line in try state.take(event, line: line) }
        } catch let error as LabelError {
            throw error
        } catch let fault as XMLReader.Fault {
            throw LabelError(.malformed, path, "\(fault.line)", fault.reason)
        } catch {
            throw LabelError(.malformed, path, nil, "\(error)")
        }
        return try state.finish()
    }

    /// What reading a CVAT file has gathered so far, element by element.
    struct CVATState {
        let path: String
        var open: [String] = []
        var text = ""
        var width: Int?
        var height: Int?
        var size: Int?
        var entries: [TrackSet.Entry] = []
        var trackIDs = Set<String>()
        /// The `<track>`s Sentinel wrote (`source="sentinel"`), which CVAT's own export never names so.
        var sentinelTracks = 0
        /// The `<track>` or `<image>` being read, and its place for errors.
        var track: (id: String, place: String)?
        var image: (frame: Int, place: String)?
        /// A box of an image, waiting for its `<attribute name="track_id">`.
        var pending: (box: Box, id: String?, place: String)?
        /// The name of the `<attribute>` being read.
        var attribute: String?
        var sawImageBox = false

        init(path: String) { self.path = path }

        mutating func take(_ event: XMLReader.Event, line: Int) throws(LabelError) {
            let place = "\(line)"
            switch event {
            case .start(let name, let attributes):
                open.append(name)
                text = ""
                if open.count == 1, name != "annotations" {
                    throw LabelError(.malformed, path, place, "root <\(name)>, not <annotations>: not a CVAT 1.1 file")
                }
                switch (open.dropLast().last, name) {
                case ("annotations", "track"):
                    let id = attributes["id"] ?? String(trackIDs.count)
                    guard trackIDs.insert(id).inserted else {
                        throw LabelError(.duplicateID, path, place, "track id \(id) is used for two tracks")
                    }
                    track = (id, place)
                    if attributes["source"] == "sentinel" { sentinelTracks += 1 }
                case ("track", "box"):
                    guard let id = track?.id, let frame = try frameNumber(attributes["frame"], place, "a <box>")
                    else { return }
                    if attributes["outside"] == "1" { return }
                    entries.append(.init(frame: frame, id: id, box: try corners(attributes, place)))
                case ("annotations", "image"):
                    guard let frame = try frameNumber(attributes["id"], place, "an <image>") else { return }
                    image = (frame, place)
                    if width == nil, let w = attributes["width"], let h = attributes["height"] {
                        width = try count(w, place, "<image width>", upTo: 1 << 16)
                        height = try count(h, place, "<image height>", upTo: 1 << 16)
                    }
                case ("image", "box"):
                    sawImageBox = true
                    pending = (try corners(attributes, place), attributes["track_id"], place)
                case ("box", "attribute"):
                    attribute = attributes["name"]
                default: break
                }
            case .text(let characters):
                if text.utf8.count < 64 { text += characters }
            case .end(let name):
                let parent = open.dropLast().last
                let value = text.trimmingCharacters(in: .whitespacesAndNewlines)
                switch open.suffix(3).joined(separator: "/") {
                case "meta/task/size", "meta/job/size": size = try count(value, place, "<size>", upTo: maxFrames)
                case "task/original_size/width", "job/original_size/width":
                    width = try count(value, place, "<width>", upTo: 1 << 16)
                case "task/original_size/height", "job/original_size/height":
                    height = try count(value, place, "<height>", upTo: 1 << 16)
                default: break
                }
                if name == "attribute", parent == "box", attribute == "track_id" { pending?.id = value }
                if name == "box", parent == "image", let box = pending, let frame = image?.frame {
                    // A box of an image without a track id has no identity to score.
                    if let id = box.id {
                        entries.append(.init(frame: frame, id: id, box: box.box))
                    } else {
                        throw LabelError(
                            .malformed, path, box.place,
                            "CVAT for images: a <box> without a track_id attribute; tracking needs each box's track (export the task as CVAT for video 1.1)"
                        )
                    }
                    pending = nil
                }
                if name == "track" { track = nil }
                if name == "image" { image = nil }
                open.removeLast()
                text = ""
            }
        }

        func frameNumber(_ text: String?, _ place: String, _ what: String) throws(LabelError) -> Int? {
            guard let text, let frame = Int(text), frame >= 0 else {
                throw LabelError(.malformed, path, place, "\(what) without a frame number from 0")
            }
            guard frame < maxFrames else {
                throw LabelError(.outOfVideo, path, place, "frame \(frame) is beyond any video (\(maxFrames) frames)")
            }
            return frame
        }

        func corners(_ attributes: [String: String], _ place: String) throws(LabelError) -> Box {
            let corners = ["xtl", "ytl", "xbr", "ybr"].compactMap { attributes[$0].flatMap { Double($0) } }
            guard corners.count == 4, corners.allSatisfy(\.isFinite) else {
                throw LabelError(.malformed, path, place, "xtl, ytl, xbr, ybr of a <box> must be finite numbers")
            }
            return Box(x: corners[0], y: corners[1], width: corners[2] - corners[0], height: corners[3] - corners[1])
        }

        func count(_ text: String, _ place: String, _ what: String, upTo limit: Int) throws(LabelError) -> Int {
            guard let value = Int(text), value > 0, value <= limit else {
                throw LabelError(
                    .malformed, path, place, "\(what) \"\(text.prefix(40))\" is not a number from 1 to \(limit)")
            }
            return value
        }

        func finish() throws(LabelError) -> TrackSet {
            if sawImageBox, !trackIDs.isEmpty {
                throw LabelError(
                    .malformed, path, nil, "both <track>s and <image>s with boxes: one CVAT format per file")
            }
            var tracks = TrackSet(entries, width: width, height: height, frameCount: size)
            tracks.unreviewed = !trackIDs.isEmpty && sentinelTracks == trackIDs.count
            return tracks
        }
    }

    static func cvat(_ tracks: TrackSet) -> String {
        var text = """
            <?xml version="1.0" encoding="utf-8"?>
            <annotations>
              <version>1.1</version>
              <meta>
                <task>
                  <size>\(tracks.frameCount ?? ((tracks.entries.map(\.frame).max() ?? -1) + 1))</size>
                  <mode>interpolation</mode>
                  <original_size><width>\(tracks.width ?? 0)</width><height>\(tracks.height ?? 0)</height></original_size>
                  <labels><label><name>face</name><type>rectangle</type></label></labels>
                </task>
              </meta>

            """
        let byID = Dictionary(grouping: tracks.entries, by: \.id)
        for (index, id) in tracks.ids.enumerated() {
            let boxes = byID[id]!.sorted { $0.frame < $1.frame }
            text += "  <track id=\"\(index)\" label=\"face\" source=\"sentinel\">\n"
            for (k, e) in boxes.enumerated() {
                let b = e.box
                text +=
                    "    <box frame=\"\(e.frame)\" keyframe=\"1\" outside=\"0\" occluded=\"0\" xtl=\"\(number(b.x))\" ytl=\"\(number(b.y))\" xbr=\"\(number(b.x + b.width))\" ybr=\"\(number(b.y + b.height))\" z_order=\"0\"></box>\n"
                // A gap, or the track's end: the next frame is outside, as CVAT writes it.
                if k + 1 == boxes.count || boxes[k + 1].frame != e.frame + 1 {
                    text +=
                        "    <box frame=\"\(e.frame + 1)\" keyframe=\"1\" outside=\"1\" occluded=\"0\" xtl=\"\(number(b.x))\" ytl=\"\(number(b.y))\" xbr=\"\(number(b.x + b.width))\" ybr=\"\(number(b.y + b.height))\" z_order=\"0\"></box>\n"
                }
            }
            text += "  </track>\n"
        }
        return text + "</annotations>\n"
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}
