public import Foundation
public import SentinelCore
import SentinelVision

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
        // A file's ids and values reach a terminal: control characters (escape sequences, newlines) are shown, not
        // sent.
        let text = [file, location].compactMap { $0 }.joined(separator: ":") + ": " + reason
        message = String(
            String.UnicodeScalarView(
                text.unicodeScalars.flatMap { scalar in
                    scalar.properties.generalCategory == .control
                        ? Array("\\u{\(String(scalar.value, radix: 16))}".unicodeScalars) : [scalar]
                }))
    }
}

/// The video a label file belongs to: its length and frame size bound everything the file says, and its name picks
/// the task of a Label Studio project export that holds several.
public struct VideoBounds: Sendable, Equatable {
    public var frames: Int
    public var width: Int
    public var height: Int
    /// The video's file name, when known.
    public var name: String?
    /// The video's length in frames, when its container says it (`frames` beyond any video's means "not known").
    var length: Int? { frames <= TrackFile.maxFrames ? frames : nil }
    public init(frames: Int, width: Int, height: Int, name: String? = nil) {
        self.frames = frames
        self.width = width
        self.height = height
        self.name = name
    }
}

/// The label formats Sentinel reads and writes, chosen by the file's extension:
/// - `.txt`: MOT Challenge (`frame,id,left,top,width,height,conf,x,y,z`; 1-based frames, rows with conf 0 ignored);
/// - `.xml`: CVAT for video 1.1 (`<track>` with `<box frame xtl ytl xbr ybr outside …>`, 0-based frames; `outside="1"`
///   ends a span), or CVAT for images 1.1 (`<image id>` with `<box>`es whose `track_id` gives the identity);
/// - `.json`: Label Studio video (`videorectangle` keyframes in percent of the frame, interpolated linearly between
///   keyframes as Label Studio does, `enabled: false` ending a span), or Sentinel's own `.truth.json`
///   (`Schemas/ground-truth.v1.json`).
/// Every reader checks what it reads before it uses it: a file is at most `maxFileBytes`, numbers are checked before
/// any arithmetic, and nothing is allocated by a size the file declares.
public enum TrackFile {
    public enum Format: String, Sendable, CaseIterable {
        case mot, cvat, labelStudio, sentinel
    }

    /// The largest label file read (a 24-hour CVAT file of ten faces at 30 fps is about 300 MB).
    public static let maxFileBytes = 512 << 20
    /// The most boxes a file may hold once Label Studio's keyframes are interpolated.
    public static let maxBoxes = 20_000_000
    /// The most boxes one frame may hold.
    public static let maxBoxesPerFrame = 1_000
    /// The longest video a label file may speak of when no video is given: 24 hours at 120 fps.
    public static let maxFrames = 24 * 3600 * 120

    /// The format a file's extension names (`sentinel` and `labelStudio` share `.json`: told apart by content).
    public static func format(of path: String) throws(LabelError) -> Format {
        switch URL(fileURLWithPath: path).pathExtension.lowercased() {
        case "txt": return .mot
        case "xml": return .cvat
        case "json": return path.hasSuffix(".truth.json") ? .sentinel : .labelStudio
        default:
            throw LabelError(
                .unknownFormat, path, nil,
                "unknown label format: .txt (MOT Challenge), .xml (CVAT for video or for images 1.1) or .json (Label Studio, or a .truth.json) expected"
            )
        }
    }

    /// Reads a label file. `video`, when known, bounds what the file may say: its length, its frame size, and for a
    /// Label Studio project export which task is this video's.
    public static func read(_ path: String, video: VideoBounds? = nil) throws(LabelError) -> TrackSet {
        try parse(try contents(of: path), format: try format(of: path), path: path, video: video)
    }

    /// The bytes of a regular file of at most `maxFileBytes` (a FIFO or a device would block or never end).
    static func contents(of path: String) throws(LabelError) -> Data {
        let attributes: [FileAttributeKey: Any]
        do { attributes = try FileManager.default.attributesOfItem(atPath: path) } catch {
            throw LabelError(.unreadable, path, nil, "cannot read the file (\(error.localizedDescription))")
        }
        guard attributes[.type] as? FileAttributeType == .typeRegular else {
            throw LabelError(.unreadable, path, nil, "not a regular file")
        }
        if let size = attributes[.size] as? Int, size > maxFileBytes {
            throw LabelError(
                .unreadable, path, nil, "\(size) bytes: larger than the \(maxFileBytes) bytes a label file may be")
        }
        do { return try Data(contentsOf: URL(fileURLWithPath: path)) } catch {
            throw LabelError(.unreadable, path, nil, "cannot read the file (\(error.localizedDescription))")
        }
    }

    /// Reads label data in `format`; `path` names it in errors. The entry point the fuzz targets drive.
    public static func parse(_ data: Data, format: Format, path: String, video: VideoBounds? = nil) throws(LabelError)
        -> TrackSet
    {
        guard data.count <= maxFileBytes else {
            throw LabelError(.unreadable, path, nil, "larger than the \(maxFileBytes) bytes a label file may be")
        }
        var tracks: TrackSet
        switch format {
        case .mot: tracks = try readMOT(data, path)
        case .cvat: tracks = try readCVAT(data, path)
        case .labelStudio, .sentinel:
            if let truth = try? JSONDecoder().decode(GroundTruth.self, from: data) {
                tracks = TrackSet(truth)
            } else {
                tracks = try readLabelStudio(data, path, video: video)
            }
        }
        if let video {
            try bound(tracks, by: video, path)
            tracks.frameCount = video.length ?? tracks.frameCount
            tracks.width = video.width
            tracks.height = video.height
        }
        try check(tracks, path)
        return tracks
    }

    /// Labels of another video are refused, naming both figures: a frame size other than the video's, or a length
    /// that differs by more than Label Studio's rounding of duration x rate (2 frames, or 1 %).
    static func bound(_ tracks: TrackSet, by video: VideoBounds, _ path: String) throws(LabelError) {
        if let width = tracks.width, let height = tracks.height, width != video.width || height != video.height {
            throw LabelError(
                .outOfVideo, path, nil,
                "the labels are of a \(width)x\(height) video, the video is \(video.width)x\(video.height): labels of another video?"
            )
        }
        if let frames = tracks.frameCount, let length = video.length, abs(frames - length) > max(2, length / 100) {
            throw LabelError(
                .outOfVideo, path, nil,
                "the labels are of a \(frames)-frame video, the video has \(length) frames: labels of another video?")
        }
    }

    /// Writes `tracks` in the format the extension of `path` names. `video` (its path or URL, as the labeling tool will
    /// find it) goes into a Label Studio task's `data.video`; `role` says whether the task's boxes are annotations or a
    /// model's predictions. A MOT file named `gt.txt` gets the ground-truth layout, any other the results layout.
    public static func write(
        _ tracks: TrackSet, to path: String, video: String? = nil, fps: Double? = nil,
        as role: LabelStudioRole = .annotations
    ) throws(LabelError) {
        let text: String
        switch try format(of: path) {
        case .mot: text = mot(tracks, layout: MOTLayout(path))
        case .cvat: text = cvat(tracks)
        case .labelStudio: text = try labelStudio(tracks, path, video: video, fps: fps, as: role)
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
        var inFrame = (frame: -1, boxes: 0)
        for entry in tracks.entries {
            let location = "frame \(entry.frame)"
            inFrame = inFrame.frame == entry.frame ? (entry.frame, inFrame.boxes + 1) : (entry.frame, 1)
            // Scoring matches a frame's boxes pairwise: no showroom's frame holds a thousand faces.
            guard inFrame.boxes <= maxBoxesPerFrame else {
                throw LabelError(.malformed, path, location, "more than \(maxBoxesPerFrame) boxes in one frame")
            }
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
        // Bytes, not characters: a 100 MB file of a long video is read at the disk's pace.
        let separators: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        for (number, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(whereSeparator: separators.contains).map { String(decoding: $0, as: UTF8.self) }
            if fields.isEmpty { continue }
            let location = "\(number + 1)"
            guard fields.count >= 6 else {
                throw LabelError(
                    .malformed, path, location,
                    "\(fields.count) fields; frame,id,left,top,width,height[,conf,…] expected")
            }
            guard let frame = Int(fields[0]), frame >= 1 else {
                throw LabelError(.malformed, path, location, "frame \"\(fields[0])\" is not a number from 1")
            }
            guard frame <= maxFrames else {
                throw LabelError(
                    .outOfVideo, path, location, "frame \(frame) is beyond any video (\(maxFrames) frames)")
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

    /// MOT Challenge's two layouts of a row after the box: ground truth `conf,class,visibility` (1: to be
    /// evaluated, 1: pedestrian, 1: fully visible; datumaro's `mot_seq` and TrackEval read these), results
    /// `conf,x,y,z` (world coordinates -1: none). A ground-truth file is named `gt.txt`, as in MOT's folders.
    public enum MOTLayout: String, Sendable {
        case groundTruth, results
        public init(_ path: String) {
            self = URL(fileURLWithPath: path).lastPathComponent == "gt.txt" ? .groundTruth : .results
        }
        var tail: String { self == .groundTruth ? ",1,1,1\n" : ",1,-1,-1,-1\n" }
    }

    /// MOT ids are numbers: other ids (pseudonyms) are numbered from 1 in id order.
    static func mot(_ tracks: TrackSet, layout: MOTLayout) -> String {
        let numbers =
            tracks.ids.allSatisfy { Int($0) != nil }
            ? nil : Dictionary(uniqueKeysWithValues: tracks.ids.enumerated().map { ($1, String($0 + 1)) })
        return tracks.entries.map { e in
            "\(e.frame + 1),\(numbers?[e.id] ?? e.id),\(number(e.box.x)),\(number(e.box.y)),\(number(e.box.width)),\(number(e.box.height))"
                + layout.tail
        }.joined()
    }

    /// The shortest decimal that reads back as the same Double.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
    }

    // MARK: CVAT for video 1.1

    /// CVAT for video 1.1 (`<track>`s of `<box>`es) or CVAT for images 1.1 (`<image>`s of `<box>`es, each with its
    /// track's id in a `track_id` attribute, as CVAT and datumaro write tracks split by frame), read by `XMLReader`.
    static func readCVAT(_ data: Data, _ path: String) throws(LabelError) -> TrackSet {
        var state = CVATState(path: path)
        do {
            try XMLReader.read(Array(data)) { event, line in try state.take(event, line: line) }
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
            return TrackSet(entries, width: width, height: height, frameCount: size)
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

    // MARK: Label Studio video

    /// A Label Studio task as its exports and imports hold it: the video in `data`, the frame size in `meta` (which
    /// Label Studio keeps), boxes as `videorectangle` results of annotations or predictions. What Sentinel writes names
    /// the labeling config's controls (`LabelStudioConfig`) in `from_name` and `to_name`.
    struct LabelStudioTask: Decodable {
        struct Annotation: Decodable {
            var result: [Result]?
            var wasCancelled: Bool?
            enum CodingKeys: String, CodingKey {
                case result
                case wasCancelled = "was_cancelled"
            }
        }
        struct Result: Decodable {
            var id: String?
            var type: String?
            var value: Value?
        }
        struct Value: Decodable {
            var framesCount: Int?
            var frameCount: Int?
            var sequence: [Keyframe]?
        }
        struct Keyframe: Codable {
            var frame: Int
            var enabled: Bool?
            var x: Double
            var y: Double
            var width: Double
            var height: Double
            var rotation: Double?
            var time: Double?
        }
        /// Any JSON value: a task's `data` and `meta` may hold numbers, lists and objects beside the strings read.
        struct Loose: Decodable {
            var string: String?
            var number: Int?
            var object: [String: Loose]?
            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                string = try? container.decode(String.self)
                number = try? container.decode(Int.self)
                object = try? container.decode([String: Loose].self)
            }
        }
        /// A prediction as an import holds it; a project export lists predictions by id only (nil here).
        struct Prediction: Decodable {
            var annotation: Annotation?
            init(from decoder: any Decoder) throws { annotation = try? Annotation(from: decoder) }
        }
        var annotations: [Annotation]?
        var predictions: [Prediction]?
        var data: [String: Loose]?
        var meta: [String: Loose]?
        /// Where Sentinel 1.x wrote the frame's size (Label Studio drops it on import: `meta` is kept).
        var sentinel: [String: Loose]?

        var video: String? { data?["video"]?.string }

        /// The frame's size as the task carries it: `meta.frameWidth`/`meta.frameHeight`, or Sentinel 1.x's field.
        var frameSize: (width: Int, height: Int)? {
            if let w = meta?["frameWidth"]?.number, let h = meta?["frameHeight"]?.number { return (w, h) }
            if let w = sentinel?["width"]?.number, let h = sentinel?["height"]?.number { return (w, h) }
            return nil
        }
    }

    /// The names the labeling config gives its controls: Label Studio's "Video Object Tracking" template with one
    /// label, `face`. docs/integrations.md shows the whole config.
    public enum LabelStudioConfig {
        public static let video = "video"
        public static let box = "box"
        public static let labels = "videoLabels"
        public static let xml = """
            <View>
              <Labels name="\(labels)" toName="\(video)" allowEmpty="true">
                <Label value="face" background="red"/>
              </Labels>
              <Video name="\(video)" value="$\(video)" framerate="15"/>
              <VideoRectangle name="\(box)" toName="\(video)"/>
            </View>
            """
    }

    static func readLabelStudio(_ data: Data, _ path: String, video: VideoBounds?) throws(LabelError) -> TrackSet {
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
        let (index, task) = try labelStudioTask(tasks, path, video: video)
        let place = tasks.count > 1 ? "[\(index)]." : ""
        // A person's annotation first (the first not cancelled), else a model's prediction.
        let chosen =
            task.annotations?.enumerated().first { !($0.element.wasCancelled ?? false) }.map { ("annotations", $0) }
            ?? task.predictions?.enumerated().compactMap { n, p in p.annotation.map { (n, $0) } }.first.map {
                ("predictions", $0)
            }
        guard let (kind, (a, annotation)) = chosen else {
            throw LabelError(
                .malformed, path, place + "annotations",
                task.predictions?.isEmpty == false
                    ? "predictions only, and a project export lists them by id without their boxes: accept them as an annotation in Label Studio, or give the file they were imported from"
                    : "no annotations or predictions: not a Label Studio video task")
        }
        let declared = task.frameSize
        guard let size = video.map({ (width: $0.width, height: $0.height) }) ?? declared else {
            throw LabelError(
                .malformed, path, place + "meta",
                "Label Studio keeps boxes in percent of the frame: the frame's size is needed (\"meta\": {\"frameWidth\": …, \"frameHeight\": …} in the task, or the video given with it)"
            )
        }
        guard (1...(1 << 16)).contains(size.width), (1...(1 << 16)).contains(size.height) else {
            throw LabelError(
                .malformed, path, place + "meta", "frame size \(size.width)x\(size.height): each side from 1 to 65536")
        }
        var entries: [TrackSet.Entry] = []
        var frameCount: Int?
        var ids = Set<String>()
        for (r, result) in (annotation.result ?? []).enumerated() where result.type == "videorectangle" {
            let id = result.id ?? String(r)
            let location = "\(place)\(kind)[\(a)].result[\(r)]"
            guard ids.insert(id).inserted else {
                throw LabelError(.duplicateID, path, location, "region id \(id) is used for two tracks")
            }
            if let count = result.value?.framesCount ?? result.value?.frameCount {
                guard (1...maxFrames).contains(count) else {
                    throw LabelError(.malformed, path, location, "framesCount \(count) is not from 1 to \(maxFrames)")
                }
                frameCount = count
            }
            // Keyframes are bounded before a frame between them is made: by the video, else by what the file says.
            let limit = video?.length ?? frameCount ?? maxFrames
            guard let sequence = result.value?.sequence else {
                throw LabelError(.malformed, path, location, "a videorectangle without a sequence of keyframes")
            }
            let keyframes = sequence.sorted { $0.frame < $1.frame }
            func pixels(_ k: LabelStudioTask.Keyframe) -> Box {
                Box(
                    x: k.x * Double(size.width) / 100, y: k.y * Double(size.height) / 100,
                    width: k.width * Double(size.width) / 100, height: k.height * Double(size.height) / 100)
            }
            for keyframe in keyframes {
                guard keyframe.frame >= 1 else {
                    throw LabelError(.malformed, path, location, "keyframe \(keyframe.frame): frames count from 1")
                }
                guard keyframe.frame <= limit else {
                    throw LabelError(
                        .outOfVideo, path, location, "keyframe \(keyframe.frame) is beyond the video (\(limit) frames)")
                }
            }
            for (k, keyframe) in keyframes.enumerated() {
                entries.append(.init(frame: keyframe.frame - 1, id: id, box: pixels(keyframe)))
                // Enabled: interpolated linearly up to the next keyframe; disabled: the span ends here.
                guard keyframe.enabled ?? true, k + 1 < keyframes.count else { continue }
                let next = keyframes[k + 1]
                guard entries.count + (next.frame - keyframe.frame) <= maxBoxes else {
                    throw LabelError(
                        .malformed, path, location, "more than \(maxBoxes) boxes once keyframes are interpolated")
                }
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
        return TrackSet(entries, width: declared?.width, height: declared?.height, frameCount: frameCount)
    }

    /// The task of `video` in a project export; a file of one task is that task.
    static func labelStudioTask(_ tasks: [LabelStudioTask], _ path: String, video: VideoBounds?) throws(LabelError)
        -> (Int, LabelStudioTask)
    {
        if tasks.count == 1 { return (0, tasks[0]) }
        guard !tasks.isEmpty else { throw LabelError(.malformed, path, nil, "no Label Studio task in the file") }
        let videos = tasks.map { $0.video.map { URL(fileURLWithPath: $0).lastPathComponent } ?? "" }
        guard let name = video?.name else {
            throw LabelError(
                .malformed, path, nil,
                "\(tasks.count) Label Studio tasks: give the video, whose name picks its task (\(videos.prefix(5).joined(separator: ", ")))"
            )
        }
        // Label Studio stores an upload as "<8 hex digits>-<name>".
        var matches = videos.indices.filter { videos[$0] == name || videos[$0].hasSuffix("-" + name) }
        // Several tasks of one video (a person's, and a model's predictions): the one a person annotated.
        if matches.count > 1 {
            matches = matches.filter { tasks[$0].annotations?.contains { !($0.wasCancelled ?? false) } ?? false }
        }
        guard matches.count == 1, let index = matches.first else {
            throw LabelError(
                .malformed, path, nil,
                "\(matches.count) of \(tasks.count) Label Studio tasks are of the video \(name); one expected")
        }
        return (index, tasks[index])
    }

    /// A Label Studio task for `tracks`: importable as annotations (`as: .annotations`) or as a model's predictions.
    public enum LabelStudioRole: String, Sendable { case annotations, predictions }

    /// A video region's value needs its duration (Label Studio refuses a prediction without), and each keyframe
    /// its time: both from `fps` (15 when unknown, the template's default rate).
    static func labelStudio(
        _ tracks: TrackSet, _ path: String, video: String? = nil, fps: Double? = nil,
        as role: LabelStudioRole = .annotations
    ) throws(LabelError) -> String {
        let rate = fps.flatMap { $0.isFinite && $0 > 0 ? $0 : nil } ?? 15
        guard let width = tracks.width, let height = tracks.height, width > 0, height > 0 else {
            throw LabelError(
                .malformed, path, nil, "Label Studio needs the frame's size, which these tracks do not have")
        }
        let frames = tracks.frameCount ?? ((tracks.entries.map(\.frame).max() ?? -1) + 1)
        let byID = Dictionary(grouping: tracks.entries, by: \.id)
        struct Value: Encodable {
            var framesCount: Int
            var duration: Double
            var sequence: [LabelStudioTask.Keyframe]
            var labels: [String]
        }
        struct Result: Encodable {
            var id: String
            var type = "videorectangle"
            var fromName = LabelStudioConfig.box
            var toName = LabelStudioConfig.video
            var origin: String
            var value: Value
            enum CodingKeys: String, CodingKey {
                case id, type, origin, value
                case fromName = "from_name"
                case toName = "to_name"
            }
        }
        struct Annotation: Encodable {
            var result: [Result]
            var modelVersion: String?
            enum CodingKeys: String, CodingKey {
                case result
                case modelVersion = "model_version"
            }
        }
        struct Task: Encodable {
            var data: [String: String]
            var meta: [String: Int]
            var annotations: [Annotation]?
            var predictions: [Annotation]?
        }
        let results = tracks.ids.map { id in
            let boxes = byID[id]!.sorted { $0.frame < $1.frame }
            // Every frame a keyframe (exact after import); the last of each span disabled, so no interpolation
            // bridges a gap.
            let sequence = boxes.enumerated().map { k, e in
                LabelStudioTask.Keyframe(
                    frame: e.frame + 1, enabled: k + 1 < boxes.count && boxes[k + 1].frame == e.frame + 1,
                    x: e.box.x * 100 / Double(width), y: e.box.y * 100 / Double(height),
                    width: e.box.width * 100 / Double(width), height: e.box.height * 100 / Double(height), rotation: 0,
                    time: Double(e.frame) / rate)
            }
            return Result(
                id: id, origin: role == .annotations ? "manual" : "prediction",
                value: .init(framesCount: frames, duration: Double(frames) / rate, sequence: sequence, labels: ["face"])
            )
        }
        let annotation = Annotation(result: results, modelVersion: role == .predictions ? "sentinel" : nil)
        let task = Task(
            data: [LabelStudioConfig.video: video ?? ""], meta: ["frameWidth": width, "frameHeight": height],
            annotations: role == .annotations ? [annotation] : nil,
            predictions: role == .predictions ? [annotation] : nil)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .prettyPrinted]
        return String(decoding: (try? encoder.encode([task])) ?? Data(), as: UTF8.self) + "\n"
    }

    /// A decoding error as the field's path and what was wrong, without the value.
    public static func describe(_ error: any Error) -> String {
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

extension VideoBounds {
    /// The bounds of the video file at `path`: the length and frame size its container states.
    public static func of(_ path: String) throws -> VideoBounds {
        let file = try VideoFileSource(path: path)
        return VideoBounds(
            frames: file.declaredFrameCount ?? .max, width: file.width, height: file.height,
            name: URL(fileURLWithPath: path).lastPathComponent)
    }
}
