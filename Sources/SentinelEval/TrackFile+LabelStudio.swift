import Foundation
import SentinelCore
import SentinelWire

/// Label Studio video tasks: exports, projects and the tasks Sentinel writes.
extension TrackFile {
    /// A Label Studio task as its exports and imports hold it: the video (or image) in `data`, the frame size in `meta`
    /// (which Label Studio keeps), boxes as `videorectangle` results of annotations or predictions, an image's label as
    /// a `choices` result (`EmotionLabels`). What Sentinel writes names
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
            var choices: [String]?
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
        var id: Loose?
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
            // A project export is a list of tasks, an import one task: decoded as what the file opens with, so that
            // a wrong value deep inside is named by its field, not as "found an array" from the other reading.
            let first = data.first { ![UInt8(ascii: " "), 0x0A, 0x0D, 0x09].contains($0) }
            if first == UInt8(ascii: "[") {
                tasks = try JSONDecoder().decode([LabelStudioTask].self, from: data)
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
        let regions = (annotation.result ?? []).enumerated().filter { $0.element.type == "videorectangle" }
        // The video's length as the labels declare it (each region carries it): read first, so that it bounds every
        // region, those before the first that says it too.
        var frameCount: Int?
        for (r, result) in regions {
            guard let count = result.value?.framesCount ?? result.value?.frameCount else { continue }
            guard (1...maxFrames).contains(count) else {
                throw LabelError(
                    .malformed, path, "\(place)\(kind)[\(a)].result[\(r)]",
                    "framesCount \(count) is not from 1 to \(maxFrames)")
            }
            frameCount = max(frameCount ?? 0, count)
        }
        // Keyframes are bounded before a frame between them is made: by the video, else by what the file says.
        let limit = video?.length ?? frameCount ?? maxFrames
        var ids = Set<String>()
        for (r, result) in regions {
            let id = result.id ?? String(r)
            let location = "\(place)\(kind)[\(a)].result[\(r)]"
            guard ids.insert(id).inserted else {
                throw LabelError(.duplicateID, path, location, "region id \(id) is used for two tracks")
            }
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
                // Without a length from the video or the labels (Label Studio writes framesCount), a span is at most
                // an hour at 30 fps: two keyframes far apart in a few bytes would otherwise cost millions of boxes.
                guard video?.length != nil || frameCount != nil || next.frame - keyframe.frame <= maxUndeclaredSpan
                else {
                    throw LabelError(
                        .malformed, path, location,
                        "keyframes \(keyframe.frame) and \(next.frame) are \(next.frame - keyframe.frame) frames apart, and neither the labels (framesCount) nor a video (--video) say how long the video is: at most \(maxUndeclaredSpan) frames are interpolated without"
                    )
                }
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
        var tracks = TrackSet(entries, width: declared?.width, height: declared?.height, frameCount: frameCount)
        tracks.unreviewed = kind == "predictions"
        return tracks
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
        do { return String(decoding: try encoder.encode([task]), as: UTF8.self) + "\n" } catch {
            throw LabelError(.malformed, path, nil, "cannot write the task: \(error)")
        }
    }
}
