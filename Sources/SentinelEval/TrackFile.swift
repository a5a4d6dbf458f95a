public import Foundation
public import SentinelCore
import SentinelWire

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
        message = ([file, location].compactMap { $0 }.joined(separator: ":") + ": " + reason).controlCharactersShown
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
    /// The most boxes a file may hold (Label Studio's once its keyframes are interpolated): scoring takes about 235
    /// bytes a box (measured: 40 M boxes, 9.4 GB), so a file costs at most about 1.2 GB. Five hours of four faces at
    /// 60 fps; a labelled clip is minutes.
    public static let maxBoxes = 5_000_000
    /// The most frames interpolated between two Label Studio keyframes when neither the labels nor a video say the
    /// video's length: an hour at 30 fps.
    public static let maxUndeclaredSpan = 108_000
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
        guard tracks.entries.count <= maxBoxes else {
            throw LabelError(.malformed, path, nil, "more than \(maxBoxes) boxes: more than scoring can hold")
        }
        var inFrame = (frame: -1, boxes: 0)
        var previous: TrackSet.Entry?
        for entry in tracks.entries {
            defer { previous = entry }
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
            // Ordered by frame, then id: an id's two boxes in one frame are neighbours.
            guard previous?.frame != entry.frame || previous?.id != entry.id else {
                throw LabelError(
                    .duplicateID, path, location,
                    "id \(entry.id) has two boxes in one frame (used for two tracks at once)")
            }
        }
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
