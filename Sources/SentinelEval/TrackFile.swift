import Foundation
public import SentinelCore

#if canImport(FoundationXML)
    import FoundationXML
#endif

/// A label file that cannot be read: which file, where in it (line, element) and why.
public struct LabelError: SentinelError, Equatable {
    public enum Code: String, Sendable, CustomStringConvertible {
        case unreadable, unknownFormat, malformed, outOfVideo, duplicateID
        public var description: String { rawValue }
    }
    public let code: Code
    public let message: String

    init(_ code: Code, _ file: String, _ location: String?, _ reason: String) {
        self.code = code
        message = [file, location].compactMap { $0 }.joined(separator: ":") + ": " + reason
    }
}

/// The label formats Sentinel reads and writes, chosen by the file's extension:
/// - `.txt`: MOT Challenge (`frame,id,left,top,width,height,conf,x,y,z`; 1-based frames, rows with conf 0 ignored);
/// - `.xml`: CVAT for video 1.1 (`<track>` with `<box frame xtl ytl xbr ybr outside …>`, 0-based frames; `outside="1"`
///   ends a span);
/// - `.json`: Label Studio video (`videorectangle` keyframes in percent of the frame, interpolated linearly between
///   keyframes as Label Studio does, `enabled: false` ending a span), or Sentinel's own `.truth.json`
///   (`Schemas/ground-truth.v1.json`).
public enum TrackFile {
    public enum Format: String, Sendable, CaseIterable {
        case mot, cvat, labelStudio, sentinel
    }

    /// The format a file's extension names (`sentinel` and `labelStudio` share `.json`: told apart by content).
    public static func format(of path: String) throws(LabelError) -> Format {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "txt": return .mot
        case "xml": return .cvat
        case "json": return path.hasSuffix(".truth.json") ? .sentinel : .labelStudio
        default:
            throw LabelError(
                .unknownFormat, path, nil,
                "unknown label format: .txt (MOT Challenge), .xml (CVAT for video 1.1) or .json (Label Studio, or a .truth.json) expected"
            )
        }
    }

    /// Reads a label file. `video` (frames, width, height), when known, bounds what the file may say.
    public static func read(_ path: String, video: (frames: Int, width: Int, height: Int)? = nil) throws(LabelError)
        -> TrackSet
    {
        let format = try format(of: path)
        let data: Data
        do { data = try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw LabelError(.unreadable, path, nil, "cannot read the file (\(error.localizedDescription))")
        }
        var tracks: TrackSet
        switch format {
        case .mot: tracks = try readMOT(data, path)
        case .cvat: tracks = try readCVAT(data, path)
        case .labelStudio, .sentinel:
            if let truth = try? JSONDecoder().decode(GroundTruth.self, from: data) {
                tracks = TrackSet(truth)
            } else {
                tracks = try readLabelStudio(data, path)
            }
        }
        if let video {
            tracks.frameCount = tracks.frameCount ?? video.frames
            tracks.width = tracks.width ?? video.width
            tracks.height = tracks.height ?? video.height
        }
        try check(tracks, path)
        return tracks
    }

    /// Writes `tracks` in the format the extension of `path` names.
    public static func write(_ tracks: TrackSet, to path: String) throws(LabelError) {
        let text: String
        switch try format(of: path) {
        case .mot: text = mot(tracks)
        case .cvat: text = cvat(tracks)
        case .labelStudio: text = try labelStudio(tracks, path)
        case .sentinel:
            throw LabelError(.unknownFormat, path, nil, "tracks are written as .txt, .xml or .json, not .truth.json")
        }
        do { try Data(text.utf8).write(to: URL(fileURLWithPath: path), options: .atomic) } catch {
            throw LabelError(.unreadable, path, nil, "cannot write the file (\(error.localizedDescription))")
        }
    }

    /// What every format must hold to: frames within the video, boxes within the frame (a box may stick out by up to
    /// half its size, as a face at the edge does), and one box per id and frame.
    static func check(_ tracks: TrackSet, _ path: String) throws(LabelError) {
        var seen = Set<String>()
        for entry in tracks.entries {
            let location = "frame \(entry.frame)"
            if let frames = tracks.frameCount, entry.frame >= frames {
                throw LabelError(
                    .outOfVideo, path, location, "frame \(entry.frame) is beyond the video (\(frames) frames, from 0)")
            }
            let box = entry.box
            guard [box.x, box.y, box.width, box.height].allSatisfy(\.isFinite), box.width > 0, box.height > 0 else {
                throw LabelError(
                    .malformed, path, location, "box of id \(entry.id) has no area or a number that is not finite")
            }
            if let width = tracks.width, let height = tracks.height,
                box.x + box.width / 2 < 0 || box.y + box.height / 2 < 0 || box.x + box.width / 2 > Double(width)
                    || box.y + box.height / 2 > Double(height)
            {
                throw LabelError(
                    .outOfVideo, path, location, "box of id \(entry.id) lies outside the \(width)x\(height) frame")
            }
            guard seen.insert("\(entry.frame)\u{0}\(entry.id)").inserted else {
                throw LabelError(
                    .duplicateID, path, location,
                    "id \(entry.id) has two boxes in one frame (used for two tracks at once)")
            }
        }
    }

    // MARK: MOT Challenge

    static func readMOT(_ data: Data, _ path: String) throws(LabelError) -> TrackSet {
        var entries: [TrackSet.Entry] = []
        for (number, line) in String(decoding: data, as: UTF8.self).split(
            omittingEmptySubsequences: false, whereSeparator: \.isNewline
        ).enumerated() {
            let text = line.trimmingCharacters(in: .whitespaces)
            if text.isEmpty { continue }
            let fields = text.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map(String.init)
            let location = "\(number + 1)"
            guard fields.count >= 6 else {
                throw LabelError(
                    .malformed, path, location,
                    "\(fields.count) fields; frame,id,left,top,width,height[,conf,…] expected")
            }
            guard let frame = Int(fields[0]), frame >= 1 else {
                throw LabelError(.malformed, path, location, "frame \"\(fields[0])\" is not a number from 1")
            }
            let numbers = fields[2...5].map { Double($0) }
            guard numbers.allSatisfy({ $0 != nil }) else {
                throw LabelError(.malformed, path, location, "left, top, width and height must be numbers")
            }
            // A ground-truth row with confidence 0 is to be ignored, as the benchmark's evaluation ignores it.
            if fields.count > 6, let confidence = Double(fields[6]), confidence == 0 { continue }
            entries.append(
                .init(
                    frame: frame - 1, id: fields[1],
                    box: Box(x: numbers[0]!, y: numbers[1]!, width: numbers[2]!, height: numbers[3]!)))
        }
        return TrackSet(entries)
    }

    /// MOT ids are numbers: other ids (pseudonyms) are numbered from 1 in id order.
    static func mot(_ tracks: TrackSet) -> String {
        let numbers =
            tracks.ids.allSatisfy { Int($0) != nil }
            ? nil : Dictionary(uniqueKeysWithValues: tracks.ids.enumerated().map { ($1, String($0 + 1)) })
        return tracks.entries.map { e in
            "\(e.frame + 1),\(numbers?[e.id] ?? e.id),\(number(e.box.x)),\(number(e.box.y)),\(number(e.box.width)),\(number(e.box.height)),1,-1,-1,-1\n"
        }.joined()
    }

    /// The shortest decimal that reads back as the same Double.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
    }

    // MARK: CVAT for video 1.1

    static func readCVAT(_ data: Data, _ path: String) throws(LabelError) -> TrackSet {
        let document: XMLDocument
        do { document = try XMLDocument(data: data) } catch {
            throw LabelError(.malformed, path, nil, "not XML (\(error.localizedDescription))")
        }
        guard let root = document.rootElement(), root.name == "annotations" else {
            throw LabelError(.malformed, path, nil, "no <annotations> root: not a CVAT for video 1.1 file")
        }
        func attribute(_ element: XMLElement, _ name: String) -> String? {
            element.attribute(forName: name)?.stringValue
        }
        let original =
            (try? root.nodes(forXPath: "meta/task/original_size") as? [XMLElement])?.first
            ?? (try? root.nodes(forXPath: "meta/job/original_size") as? [XMLElement])?.first
        let width = original.flatMap { ($0.elements(forName: "width").first?.stringValue).flatMap { Int($0) } }
        let height = original.flatMap { ($0.elements(forName: "height").first?.stringValue).flatMap { Int($0) } }
        let size = (try? root.nodes(forXPath: "meta/task/size") as? [XMLElement])?.first?.stringValue.flatMap {
            Int($0)
        }
        var entries: [TrackSet.Entry] = []
        var ids = Set<String>()
        for (t, track) in root.elements(forName: "track").enumerated() {
            let id = attribute(track, "id") ?? String(t)
            let element = "<track id=\"\(id)\">"
            guard ids.insert(id).inserted else {
                throw LabelError(.duplicateID, path, element, "track id \(id) is used for two tracks")
            }
            // Keyframes in order; `outside="1"` ends a span. CVAT writes every frame of a track, so no interpolation.
            for box in track.elements(forName: "box") {
                guard let frame = attribute(box, "frame").flatMap({ Int($0) }), frame >= 0 else {
                    throw LabelError(.malformed, path, element, "a <box> without a frame number from 0")
                }
                if attribute(box, "outside") == "1" { continue }
                let corners = ["xtl", "ytl", "xbr", "ybr"].map { attribute(box, $0).flatMap { Double($0) } }
                guard corners.allSatisfy({ $0 != nil }) else {
                    throw LabelError(
                        .malformed, path, "\(element) <box frame=\"\(frame)\">", "xtl, ytl, xbr, ybr must be numbers")
                }
                entries.append(
                    .init(
                        frame: frame, id: id,
                        box: Box(
                            x: corners[0]!, y: corners[1]!, width: corners[2]! - corners[0]!,
                            height: corners[3]! - corners[1]!)))
            }
        }
        return TrackSet(entries, width: width, height: height, frameCount: size)
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

    // MARK: Label Studio video

    struct LabelStudioTask: Codable {
        struct Annotation: Codable { var result: [Result] }
        struct Result: Codable {
            var id: String?
            var type: String
            var value: Value
        }
        struct Value: Codable {
            var framesCount: Int?
            var frameCount: Int?
            var duration: Double?
            var sequence: [Keyframe]
            var labels: [String]?
        }
        struct Keyframe: Codable {
            var frame: Int
            var enabled: Bool
            var x: Double
            var y: Double
            var width: Double
            var height: Double
            var time: Double?
        }
        var annotations: [Annotation]?
        var data: [String: String]?
        /// Sentinel's own addition on export: the frame's size in pixels (Label Studio keeps percentages only).
        var sentinel: Size?
        struct Size: Codable {
            var width: Int
            var height: Int
        }
    }

    static func readLabelStudio(_ data: Data, _ path: String) throws(LabelError) -> TrackSet {
        let tasks: [LabelStudioTask]
        do {
            if let list = try? JSONDecoder().decode([LabelStudioTask].self, from: data) {
                tasks = list
            } else {
                tasks = [try JSONDecoder().decode(LabelStudioTask.self, from: data)]
            }
        } catch {
            throw LabelError(
                .malformed, path, nil,
                "neither Sentinel's ground truth nor a Label Studio video task (\(describe(error)))")
        }
        guard tasks.count == 1, let task = tasks.first else {
            throw LabelError(.malformed, path, nil, "\(tasks.count) Label Studio tasks; one video per file expected")
        }
        guard let annotations = task.annotations, !annotations.isEmpty else {
            throw LabelError(.malformed, path, "annotations", "no annotations: not a Label Studio video task")
        }
        guard let size = task.sentinel else {
            throw LabelError(
                .malformed, path, "sentinel",
                "Label Studio keeps boxes in percent of the frame: the frame's size is needed (\"sentinel\": {\"width\": …, \"height\": …} beside \"annotations\", or the video given with it)"
            )
        }
        var entries: [TrackSet.Entry] = []
        var frameCount: Int?
        var ids = Set<String>()
        for (r, result) in annotations[0].result.enumerated() where result.type == "videorectangle" {
            let id = result.id ?? String(r)
            let location = "annotations[0].result[\(r)]"
            guard ids.insert(id).inserted else {
                throw LabelError(.duplicateID, path, location, "region id \(id) is used for two tracks")
            }
            frameCount = result.value.framesCount ?? result.value.frameCount ?? frameCount
            let keyframes = result.value.sequence.sorted { $0.frame < $1.frame }
            func pixels(_ k: LabelStudioTask.Keyframe) -> Box {
                Box(
                    x: k.x * Double(size.width) / 100, y: k.y * Double(size.height) / 100,
                    width: k.width * Double(size.width) / 100, height: k.height * Double(size.height) / 100)
            }
            for (k, keyframe) in keyframes.enumerated() {
                guard keyframe.frame >= 1 else {
                    throw LabelError(.malformed, path, location, "keyframe \(keyframe.frame): frames count from 1")
                }
                entries.append(.init(frame: keyframe.frame - 1, id: id, box: pixels(keyframe)))
                // Enabled: interpolated linearly up to the next keyframe; disabled: the span ends here.
                guard keyframe.enabled, k + 1 < keyframes.count else { continue }
                let next = keyframes[k + 1]
                let (a, b) = (pixels(keyframe), pixels(next))
                for frame in (keyframe.frame + 1)..<max(keyframe.frame + 1, next.frame) {
                    let t = Double(frame - keyframe.frame) / Double(next.frame - keyframe.frame)
                    entries.append(
                        .init(
                            frame: frame - 1, id: id,
                            box: Box(
                                x: a.x + (b.x - a.x) * t, y: a.y + (b.y - a.y) * t,
                                width: a.width + (b.width - a.width) * t, height: a.height + (b.height - a.height) * t))
                    )
                }
            }
        }
        return TrackSet(entries, width: size.width, height: size.height, frameCount: frameCount)
    }

    static func labelStudio(_ tracks: TrackSet, _ path: String) throws(LabelError) -> String {
        guard let width = tracks.width, let height = tracks.height, width > 0, height > 0 else {
            throw LabelError(
                .malformed, path, nil, "Label Studio needs the frame's size, which these tracks do not have")
        }
        let frames = tracks.frameCount ?? ((tracks.entries.map(\.frame).max() ?? -1) + 1)
        let byID = Dictionary(grouping: tracks.entries, by: \.id)
        let results = tracks.ids.map { id in
            let boxes = byID[id]!.sorted { $0.frame < $1.frame }
            // Every frame a keyframe (exact after import); the last of each span disabled, so no interpolation
            // bridges a gap.
            let sequence = boxes.enumerated().map { k, e in
                LabelStudioTask.Keyframe(
                    frame: e.frame + 1, enabled: k + 1 < boxes.count && boxes[k + 1].frame == e.frame + 1,
                    x: e.box.x * 100 / Double(width), y: e.box.y * 100 / Double(height),
                    width: e.box.width * 100 / Double(width), height: e.box.height * 100 / Double(height))
            }
            return LabelStudioTask.Result(
                id: id, type: "videorectangle",
                value: .init(framesCount: frames, frameCount: nil, duration: nil, sequence: sequence, labels: ["face"]))
        }
        let task = LabelStudioTask(
            annotations: [.init(result: results)], data: nil, sentinel: .init(width: width, height: height))
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return String(decoding: (try? encoder.encode([task])) ?? Data(), as: UTF8.self) + "\n"
    }

    static func describe(_ error: any Error) -> String {
        guard let decoding = error as? DecodingError else { return "\(error)" }
        switch decoding {
        case .keyNotFound(let key, let context):
            return "\((context.codingPath + [key]).map(\.stringValue).joined(separator: ".")): missing"
        case .typeMismatch(_, let context), .valueNotFound(_, let context), .dataCorrupted(let context):
            return "\(context.codingPath.map(\.stringValue).joined(separator: ".")): \(context.debugDescription)"
        @unknown default: return "\(error)"
        }
    }
}
