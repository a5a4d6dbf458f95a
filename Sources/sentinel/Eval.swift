import ArgumentParser
import Foundation
import Logging
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelModels
import SentinelPipeline
import SentinelPrivacy
import SentinelTuning
import SentinelVision
import SentinelWire

struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure accuracy against ground truth.",
        subcommands: [Tracking.self, Tracks.self, Detections.self, Masking.self, EmotionCommand.self],
        defaultSubcommand: Tracking.self)

    struct Tracking: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a pipeline on recordings and score its tracks against their labels.",
            discussion: """
                Labels: Sentinel's .truth.json (Schemas/ground-truth.v1.json), MOT Challenge (.txt), CVAT for video \
                1.1 (.xml) or Label Studio video (.json), given with --truth for one recording, or beside each \
                recording with its name (a folder is every video in it). Prints HOTA (DetA, AssA, LocA), IDF1, IDP, \
                IDR, MOTA, MOTP (mean IoU distance of the matches), ID switches and fragmentations, as py-motmetrics \
                and TrackEval compute them; with Sentinel's own labels also the zone timing and the dwell error per \
                visitor. --json writes the figures of all recordings combined at its top level and each one's under \
                "sequences".
                """)

        @Argument(help: "Recordings, or folders of recordings (default: Recordings/out/showroom-640x480.mp4).")
        var recordings: [String] = ["Recordings/out/showroom-640x480.mp4"]

        @Option(help: "The labels of the recording (one recording only); default: the file beside it.")
        var truth: String?

        @Option(help: "Pipeline file.")
        var pipeline = "Pipelines/showroom.yml"

        @Option(parsing: .upToNextOption, help: "Detectors to compare (default: the pipeline's).")
        var detectors: [DetectorKind] = []

        @Option(help: "Also write the figures as JSON to this file.")
        var json: String?

        @OptionGroup var settings: SettingOverrides
        @OptionGroup var models: ModelOptions

        func validate() throws {
            if truth != nil, try Labels.videos(recordings).count != 1 {
                throw ValidationError("--truth names the labels of one recording; give labels beside each instead")
            }
        }

        func run() throws {
            var definition = try loadPipeline(pipeline, models: models, overrides: try settings.overrides)
            let store = try models.store()
            var sequences: [String: Labels.Sequence] = [:]
            // A recording that cannot be scored (its labels refused, its video unreadable) does not end the others:
            // it is said at once, listed at the end with its reason, and the command then fails.
            var unscored: [(recording: String, reason: String)] = []
            let videos = try Labels.videos(recordings)
            for recording in videos {
                do {
                    try score(recording)
                } catch {
                    // The reason without the recording's name where it begins with it.
                    let text = "\(error)"
                    let reason = text.hasPrefix("\(recording): ") ? String(text.dropFirst(recording.count + 2)) : text
                    unscored.append((recording, reason))
                    FileHandle.standardError.write(Data("\(recording): not scored: \(reason)\n".utf8))
                }
            }
            if !sequences.isEmpty { try Labels.report(sequences, json: json) }
            guard unscored.isEmpty else {
                // Each reason was said as it came: named here, not said again.
                throw CommandError(
                    "\(unscored.count) of \(videos.count) recordings could not be scored (said above): "
                        + unscored.map(\.recording).joined(separator: ", "))
            }

            func score(_ recording: String) throws {
                let labels = try Labels.read(
                    for: recording, named: truth, definition: definition, logger: makeLogger("sentinel.eval"))
                for kind in detectors.isEmpty ? [definition.detection.kind] : detectors {
                    if kind != definition.detection.kind {
                        definition.detection.kind = kind
                        definition.detectorModel = nil
                        definition.detectorSettings = .defaults(for: kind)
                    }
                    let runner = try SourceRunner(
                        definition: definition.forEvaluation, source: definition.sources[0], models: store,
                        input: recording, pace: .fastest, logger: makeLogger("sentinel.eval"))
                    let run = try runner.evaluationRun()
                    let name = "\(recording) \(kind.rawValue)"
                    let score = try labels.score(run, origin: runner.origin)
                    let sequence = Labels.Sequence(metrics: score.metrics, visitors: score.visits)
                    Self.print(name, sequence)
                    for line in run.summary(origin: runner.origin).lines { Swift.print("  " + line) }
                    sequences[name] = sequence
                }
            }
        }

        static func print(_ name: String, _ sequence: Labels.Sequence) {
            Swift.print(name)
            Labels.print(sequence.metrics)
            guard let s = sequence.visitors else { return }
            Swift.print(
                String(
                    format:
                        "  zone timing    entry error mean %.2f s max %.2f s; exit error mean %.2f s max %.2f s; %d missed, %d extra stays; time in a zone off by %.2f s on average, %.2f s at most",
                    s.meanEntryError, s.maxEntryError, s.meanExitError, s.maxExitError, s.missedStays, s.extraStays,
                    s.meanZoneDwellError, s.maxZoneDwellError))
            for v in s.visitors {
                Swift.print(
                    String(
                        format: "  %@  dwell true %.2f s  measured %.2f s  error %.2f s  visits %@", v.visitor,
                        v.trueDwell, v.measuredDwell, v.dwellError, v.visits.joined(separator: ",")))
            }
        }
    }

    struct Tracks: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Score another tracker's output against labels, without a video.",
            discussion: """
                Both in any of the label formats (MOT Challenge .txt, CVAT for video 1.1 .xml, Label Studio .json, \
                Sentinel's .truth.json), as pairs: the n-th --tracks is scored against the n-th --truth. The figures \
                are those of `sentinel eval tracking`, computed as py-motmetrics and TrackEval compute them.
                """)

        @Option(help: "Labels (repeat for several sequences).")
        var truth: [String] = []

        @Option(help: "Tracks to score, in the same order.")
        var tracks: [String] = []

        @Option(
            help:
                "The video the labels are of, in the same order (repeat for several): bounds both files by its length and size, gives Label Studio's percentages their pixels and picks the video's task from a project export."
        )
        var video: [String] = []

        @Option(help: "The largest IoU distance (1 - IoU) a match may have.")
        var threshold = 0.5

        @Option(help: "Also write the figures as JSON to this file.")
        var json: String?

        func validate() throws {
            guard !truth.isEmpty, truth.count == tracks.count else {
                throw ValidationError("give as many --tracks as --truth (\(tracks.count) and \(truth.count))")
            }
            guard video.isEmpty || video.count == truth.count else {
                throw ValidationError("give a --video for each --truth, or none (\(video.count) and \(truth.count))")
            }
            try checkRange(threshold, "threshold", 0.01...0.99)
        }

        func run() throws {
            var sequences: [String: Labels.Sequence] = [:]
            for (n, (truthPath, tracksPath)) in zip(truth, tracks).enumerated() {
                let given = try video.isEmpty ? nil : VideoBounds.of(video[n])
                let labels = try TrackFile.read(truthPath, video: given)
                // Without the video, the labels' own length and size bound the tracks.
                let bounds =
                    given
                    ?? labels.frameCount.flatMap { frames in
                        labels.width.flatMap { w in
                            labels.height.map { VideoBounds(frames: frames, width: w, height: $0) }
                        }
                    }
                let scored = try TrackFile.read(tracksPath, video: bounds)
                let metrics: TrackMetrics
                do {
                    metrics = try TrackMetrics.evaluate(truth: labels, tracks: scored, threshold: threshold)
                } catch {
                    throw CommandError("\(tracksPath) against \(truthPath): \(error.message)")
                }
                let sequence = Labels.Sequence(metrics: metrics, visitors: nil)
                // As given: two sequences may share a file name (MOT keeps each in its own folder).
                let name = tracksPath
                Swift.print(name)
                Labels.print(sequence.metrics)
                sequences[name] = sequence
            }
            try Labels.report(sequences, json: json)
        }
    }

    struct Detections: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Precision and recall of each face detector on recordings with ground truth.",
            discussion: """
                A detection is right when it overlaps a drawn face with IoU >= --iou; faces mostly hidden by \
                scenery count neither way. Recordings without a .truth.json beside them (such as real footage) \
                get detections per frame instead.
                """)

        @Argument(help: "Recordings (default: every .mp4 in Recordings/out).")
        var recordings: [String] = []

        @Option(parsing: .upToNextOption, help: "Detectors to measure (default: every one whose model is ready).")
        var detectors: [DetectorKind] = []

        @Option(help: "IoU a detection needs to match a drawn face.")
        var iou = 0.5

        func validate() throws { try checkRange(iou, "iou", 0.01...1) }

        @Option(help: "Also write the figures as JSON to this file.")
        var json: String?

        @OptionGroup var tuning: DetectorTuning
        @OptionGroup var models: ModelOptions

        func run() throws {
            let store = try models.store()
            let kinds =
                detectors.isEmpty
                ? DetectorKind.allCases.filter { (try? store.path(of: $0.defaultModel)) != nil }
                : detectors
            var paths = recordings
            if paths.isEmpty {
                let folder = URL(fileURLWithPath: "Recordings/out")
                paths = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
                    $0.hasSuffix(".mp4")
                }
                .sorted().map { folder.appendingPathComponent($0).path }
                guard !paths.isEmpty else {
                    throw CommandError("no recordings in Recordings/out: run `make recordings` first")
                }
            }
            var rows: [Row] = []
            print(
                "recording                        detector     frames   faces  found  false  missed  precision  recall  mean IoU   fps"
            )
            for path in paths {
                let truthURL = SceneRenderer.truthURL(for: URL(fileURLWithPath: path))
                let truth = try? JSONDecoder().decode(GroundTruth.self, from: Data(contentsOf: truthURL))
                for kind in kinds {
                    let detector = try DetectorOptions.make(kind, settings: tuning.settings(for: kind), store: store)
                    let source = try VideoFileSource(path: path)
                    var score = DetectionScore()
                    var perFrame: [Int] = []
                    let clock = ContinuousClock()
                    let start = clock.now
                    while let frame = try source.next() {
                        let boxes = try detector.detect(frame.image).map(\.box)
                        perFrame.append(boxes.count)
                        if let truth, frame.index < truth.frames.count {
                            score.add(truth: truth.frames[frame.index].faces, detections: boxes, iouThreshold: iou)
                        }
                    }
                    let fps = Double(perFrame.count) / (clock.now - start).seconds
                    let row = Row(
                        recording: URL(fileURLWithPath: path).lastPathComponent, detector: kind.rawValue,
                        score: truth == nil ? nil : score, frames: perFrame.count,
                        detectionsPerFrame: Double(perFrame.reduce(0, +)) / Double(max(1, perFrame.count)),
                        framesWithFaces: perFrame.filter { $0 > 0 }.count, fps: fps)
                    print(row.line)
                    rows.append(row)
                }
            }
            if let json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try OutputFile.write(encoder.encode(rows), to: json)
            }
        }
    }

    struct Masking: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "Count the face-frames a review video leaves recognisable, by how much of each face is in view.",
            discussion: """
                Replays the recording through the pipeline's privacy.review settings, then without tracker-predicted \
                masks, then with masks on the faces found only (no edge band, no held masks), and compares the \
                masked frames (as stills and the zone editor show them, without the review video's drawings) with the \
                original at every drawn face in view by at least 15 % of its box and 16 px each way: a leak keeps \
                more than --bound of its detail (variance of the Laplacian), or detail correlated above 0.5 with the \
                original's (whatever the blur's strength).
                """)

        @Argument(
            help:
                "Recording. Its faces are counted from --labels, else the .truth.json beside it (sentinel synth), else a second opinion: every detector set up, on each frame as it is and mirrored at its edges, at a low score (what they all miss is not counted)."
        )
        var recording = "Recordings/out/showroom-640x480.mp4"

        @Option(
            help:
                "The recording's face boxes, reviewed by a person (CVAT XML, MOT, Label Studio, as eval tracking reads them)."
        )
        var labels: String?

        @Option(help: "Pipeline file.")
        var pipeline = "Pipelines/showroom.yml"

        @Option(help: "Detail ratio above which a face-frame counts as leaked.")
        var bound = 0.25

        func validate() throws { try checkRange(bound, "bound", 0...100) }

        @Option(
            help:
                "Keep the review videos in this folder, with the faces counted (counted.truth.json; default: a temporary folder, removed)."
        )
        var keep: String?

        @OptionGroup var models: ModelOptions

        func run() throws {
            let definition = try loadPipeline(pipeline, models: models)
            let truth = try faces(review: definition.privacy.review)
            let folder = URL(fileURLWithPath: keep ?? NSTemporaryDirectory() + "sentinel-masking-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { if keep == nil { try? FileManager.default.removeItem(at: folder) } }
            if keep != nil {
                try JSONEncoder().encode(truth).write(to: folder.appendingPathComponent("counted.truth.json"))
            }
            let configured = definition.privacy.review
            var unfollowed = configured
            unfollowed.followTracks = false
            var found = configured
            found.settleSeconds = 0
            found.edgeBand = 0
            let variants = [
                ("as configured", "review-configured.avi", configured),
                ("without masks following tracks", "review-unfollowed.avi", unfollowed),
                ("faces found only", "review-faces-found.avi", found),
            ]
            for (name, file, settings) in variants {
                var definition = definition
                definition.privacy.review = settings
                let path = folder.appendingPathComponent(file).path
                let runner = try SourceRunner(
                    definition: definition, source: definition.sources[0], models: try models.store(), input: recording,
                    pace: .fastest,
                    logger: makeLogger("sentinel.eval"))
                let review = ReviewVideo(
                    path: path, fps: runner.nominalFPS, zones: runner.source.zones, settings: settings, drawings: false)
                try runner.run { step in
                    if let frame = step.frame { try review.write(frame) }
                }
                review.finish()
                let score = try MaskLeakScore.measure(original: recording, review: path, truth: truth, bound: bound)
                print(
                    String(
                        format:
                            "%@ %@ scale %.2f: %d of %d face-frames leaked (worst detail ratio %.3f, correlation %.3f)",
                        "\(name):", settings.mask.rawValue,
                        settings.scale,
                        score.leaked, score.faceFrames, score.worstRatio, score.worstCorrelation))
                print("  \(score.byVisibility)")
                for leak in score.leaks.prefix(20) {
                    print(
                        "  frame \(leak.frame) \(leak.visitor) \(Int((leak.visible * 100).rounded())) % in view: ratio \(leak.ratio), correlation \(leak.correlation)"
                    )
                }
            }

            /// The faces counted: a person's labels, the scene's own truth, or a second opinion (said on the first line).
            func faces(review: ReviewSettings) throws -> GroundTruth {
                if let labels {
                    let bounds = try VideoBounds.of(recording)
                    let tracks = try TrackFile.read(labels, video: bounds)
                    guard !tracks.unreviewed else {
                        throw CommandError(
                            "\(labels): Sentinel's own tracks, which no person has reviewed: masks measured against them "
                                + "count only what the pipeline itself found (correct them in CVAT or Label Studio first)"
                        )
                    }
                    let whole = Box(x: 0, y: 0, width: Double(bounds.width), height: Double(bounds.height))
                    let frames = Dictionary(grouping: tracks.entries, by: \.frame).map { index, entries in
                        GroundTruth.Frame(
                            index: index, time: .zero,
                            faces: entries.map {
                                .init(
                                    visitor: $0.id, box: $0.box,
                                    visible: ($0.box.intersection(whole)?.area ?? 0) / $0.box.area)
                            })
                    }
                    print("faces counted: \(labels), \(tracks.entries.count) boxes")
                    return GroundTruth(
                        recording: recording, width: bounds.width, height: bounds.height, fps: 0, zones: [],
                        frames: frames,
                        visitors: [])
                }
                let beside = SceneRenderer.truthURL(for: URL(fileURLWithPath: recording))
                if FileManager.default.fileExists(atPath: beside.path) {
                    do {
                        let truth = try JSONDecoder().decode(GroundTruth.self, from: Data(contentsOf: beside))
                        print("faces counted: \(beside.path), the scene's own")
                        return truth
                    } catch {
                        throw CommandError("\(beside.path): not the ground truth sentinel synth writes (\(error))")
                    }
                }
                let store = try models.store()
                var detectors: [any FaceDetector] = []
                var missing: [String] = []
                for kind in DetectorKind.allCases {
                    guard let path = try? store.path(of: kind.defaultModel) else {
                        missing.append(kind.rawValue)
                        continue
                    }
                    var settings = DetectorSettings.defaults(for: kind)
                    settings.scoreThreshold *= 0.5
                    detectors.append(try OpenCVFaceDetector(kind: kind, modelPath: path, settings: settings))
                }
                guard !detectors.isEmpty else {
                    throw CommandError(
                        "\(recording): nothing to count its faces by: no --labels, no .truth.json beside it, and no detector "
                            + "model set up for a second opinion (sentinel models setup)")
                }
                print(
                    "faces counted: a second opinion (\(detectors.map(\.name).joined(separator: ", ")) at half their score, "
                        + "on each frame as it is and mirrored at its edges"
                        + (missing.isEmpty ? "" : "; not set up: \(missing.joined(separator: ", "))")
                        + "): what they all miss is not counted")
                return try GroundTruth.secondOpinion(
                    of: recording, detectors: detectors, margin: max(review.edgeBand, 0.2))
            }
        }
    }

    struct Row: Codable {
        var recording: String
        var detector: String
        var score: DetectionScore?
        var frames: Int
        var detectionsPerFrame: Double
        var framesWithFaces: Int
        var fps: Double

        var line: String {
            func pad(_ s: String, _ n: Int) -> String {
                s.count >= n ? s : s + String(repeating: " ", count: n - s.count)
            }
            func lpad(_ s: String, _ n: Int) -> String {
                s.count >= n ? s : String(repeating: " ", count: n - s.count) + s
            }
            let head = pad(recording, 32) + " " + pad(detector, 10) + lpad("\(frames)", 8)
            guard let s = score else {
                return head + "  (no ground truth) \(String(format: "%.2f", detectionsPerFrame)) faces/frame, "
                    + "\(framesWithFaces) frames with a face" + lpad(String(format: "%.1f", fps), 40)
            }
            let faces = s.truePositives + s.falseNegatives
            return head + lpad("\(faces)", 8) + lpad("\(s.truePositives)", 7) + lpad("\(s.falsePositives)", 7)
                + lpad("\(s.falseNegatives)", 8) + lpad(String(format: "%.3f", s.precision), 11)
                + lpad(String(format: "%.3f", s.recall), 8) + lpad(String(format: "%.3f", s.meanIoU), 10)
                + lpad(String(format: "%.1f", fps), 6)
        }
    }
}

/// Labels beside recordings, and the figures of scoring against them.
enum Labels {
    /// One recording's (or tracks file's) figures: the standard ones, and with Sentinel's own labels the visits'.
    struct Sequence: Encodable {
        var metrics: TrackMetrics
        var visitors: VisitScore?
    }

    static let videoExtensions: Set<String> = ["mp4", "avi", "mkv", "mov", "webm", "m4v"]

    /// The recordings: each file, and each video in a folder.
    static func videos(_ paths: [String]) throws -> [String] {
        try paths.flatMap { path -> [String] in
            var folder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: path, isDirectory: &folder) else {
                throw CommandError("\(path): no such file or folder")
            }
            guard folder.boolValue else { return [path] }
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            let videos = names.filter { videoExtensions.contains(URL(fileURLWithPath: $0).pathExtension.lowercased()) }
            guard !videos.isEmpty else { throw CommandError("\(path): no video in this folder") }
            return videos.sorted().map { URL(fileURLWithPath: path).appendingPathComponent($0).path }
        }
    }

    /// Where labels beside a recording may be, in the order they are looked for: `NAME.truth.json`, `NAME.xml`,
    /// `NAME.txt`, `NAME.json`.
    static func candidates(beside recording: String) -> [String] {
        let stem = URL(fileURLWithPath: recording).deletingPathExtension().path
        return [".truth.json", ".xml", ".txt", ".json"].map { stem + $0 }
    }

    /// The labels beside a recording: the first of `candidates(beside:)` that exists.
    static func beside(_ recording: String) throws -> String {
        let candidates = candidates(beside: recording)
        guard let found = candidates.first(where: { FileManager.default.fileExists(atPath: $0) }) else {
            throw CommandError(
                "\(recording): no labels beside it (looked for \(candidates.map { URL(fileURLWithPath: $0).lastPathComponent }.joined(separator: ", "))); give them with --truth"
            )
        }
        return found
    }

    /// The labels a recording is scored against: `named` (`--truth`), else those beside it. Which file it is is
    /// printed with the figures, and labels that are Sentinel's own unreviewed tracks are refused unless named: against
    /// them every setting scores perfectly, and nothing would tell the operator.
    static func read(for recording: String, named: String?, definition: PipelineDefinition, logger: Logger) throws
        -> RecordingLabels
    {
        let path = try named ?? beside(recording)
        let labels = try RecordingLabels.read(path, derive: .of(recording, definition, logger: logger))
        let said = "\(recording): scored against \(path)"
        guard labels.tracks.unreviewed else {
            Swift.print(said)
            return labels
        }
        guard named != nil else {
            throw CommandError(
                "\(path) holds Sentinel's own tracks as sentinel replay --tracks wrote them, not reviewed by a person: "
                    + "scored against them, every setting looks perfect. Correct them in CVAT or Label Studio "
                    + "(docs/tuning.md, step 1) and save the export in their place, or name them with --truth to score "
                    + "against them anyway")
        }
        Swift.print(said + ", Sentinel's own unreviewed tracks: the figures measure the pipeline against itself")
        return labels
    }

    static func print(_ m: TrackMetrics) {
        Swift.print(
            String(
                format: "  HOTA %.3f (DetA %.3f AssA %.3f LocA %.3f)  IDF1 %.3f (IDP %.3f IDR %.3f)", m.hota, m.detA,
                m.assA, m.locA, m.idf1, m.idp, m.idr))
        Swift.print(
            String(
                format:
                    "  MOTA %.3f  MOTP %.3f  ID switches %d  fragmentations %d  tracked mostly %d partly %d lost %d  (%d boxes, %d tracked, %d false, %d missed)",
                m.mota, m.motp, m.idSwitches, m.fragmentations, m.mostlyTracked, m.partiallyTracked, m.mostlyLost,
                m.objects, m.predictions, m.falsePositives, m.misses))
    }

    /// Prints the combined figures when there are several, and writes the JSON: the combined figures at the top
    /// level (fractions, not percent), each sequence's under `sequences`.
    static func report(_ sequences: [String: Sequence], json: String?) throws {
        let combined = TrackMetrics.combined(sequences.keys.sorted().map { sequences[$0]!.metrics })
        if sequences.count > 1 {
            Swift.print("combined")
            print(combined)
        }
        guard let json else { return }
        struct Report: Encodable {
            var combined: TrackMetrics
            var sequences: [String: Sequence]
            func encode(to encoder: any Encoder) throws {
                try combined.encode(to: encoder)
                var container = encoder.container(keyedBy: Key.self)
                try container.encode(sequences, forKey: Key(stringValue: "sequences"))
            }
            struct Key: CodingKey {
                var stringValue: String
                var intValue: Int? { nil }
                init(stringValue: String) { self.stringValue = stringValue }
                init?(intValue: Int) { nil }
            }
        }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try OutputFile.write(encoder.encode(Report(combined: combined, sequences: sequences)), to: json)
    }
}
