import ArgumentParser
import Foundation
import SentinelCore
import SentinelEval
import SentinelModels
import SentinelPipeline
import SentinelPrivacy
import SentinelSynth
import SentinelVision

struct Eval: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Measure accuracy against ground truth.",
        subcommands: [Tracking.self, Detections.self, Masking.self],
        defaultSubcommand: Tracking.self)

    struct Tracking: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Run a pipeline on a recording and compare visitors, zones and dwell with its ground truth.",
            discussion: """
                Prints detection precision and recall of tracked faces, ID switches, fragments, IDF1 and MOTA, the \
                timing error of zone entries and exits, and the dwell error per visitor; --json writes it all.
                """)

        @Argument(help: "Recordings with a .truth.json beside them (default: Recordings/out/showroom-640x480.mp4).")
        var recordings: [String] = ["Recordings/out/showroom-640x480.mp4"]

        @Option(help: "Pipeline file.")
        var pipeline = "Pipelines/showroom.yml"

        @Option(parsing: .upToNextOption, help: "Detectors to compare (default: the pipeline's).")
        var detectors: [DetectorKind] = []

        @Option(help: "Also write the figures as JSON to this file.")
        var json: String?

        @OptionGroup var models: ModelOptions

        func run() throws {
            var definition = try loadPipeline(pipeline, models: models)
            let store = try models.store()
            var results: [String: TrackingScore] = [:]
            for recording in recordings {
                let truth = try JSONDecoder().decode(
                    GroundTruth.self,
                    from: Data(contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: recording))))
                for kind in detectors.isEmpty ? [definition.detector] : detectors {
                    if kind != definition.detector {
                        definition.detector = kind
                        definition.detectorModel = nil
                        definition.detectorSettings = .defaults(for: kind)
                    }
                    let score = try Self.score(definition, recording: recording, truth: truth, store: store)
                    let name = "\(URL(fileURLWithPath: recording).lastPathComponent) \(kind.rawValue)"
                    Self.print(name, score)
                    results[name] = score
                }
            }
            if let json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try OutputFile.write(encoder.encode(results), to: json)
            }
        }

        static func score(_ definition: PipelineDefinition, recording: String, truth: GroundTruth, store: ModelStore)
            throws -> TrackingScore
        {
            let runner = try SourceRunner(
                definition: definition.forEvaluation, source: definition.sources[0], models: store, input: recording,
                pace: .fastest, logger: makeLogger("sentinel.eval"))
            return try runner.score(against: truth).score
        }

        static func print(_ name: String, _ s: TrackingScore) {
            Swift.print(name)
            Swift.print(
                String(
                    format: "  tracked faces  precision %.3f  recall %.3f  (%d of %d drawn, %d false)", s.precision,
                    s.recall, s.matches, s.truthBoxes, s.falsePositives))
            Swift.print(
                String(
                    format: "  identity       IDF1 %.3f  MOTA %.3f  ID switches %d  fragments %d", s.idf1, s.mota,
                    s.idSwitches, s.fragments))
            Swift.print(
                String(
                    format:
                        "  zone timing    entry error mean %.2f s max %.2f s; exit error mean %.2f s max %.2f s; %d missed, %d extra stays",
                    s.meanEntryError, s.maxEntryError, s.meanExitError, s.maxExitError, s.missedStays, s.extraStays))
            for v in s.visitors {
                Swift.print(
                    String(
                        format: "  %@  dwell true %.2f s  measured %.2f s  error %.2f s  visits %@", v.visitor,
                        v.trueDwell, v.measuredDwell, v.dwellError, v.visits.joined(separator: ",")))
            }
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
                "Count the face-frames a review video leaves recognisable, with and without tracker-predicted masks.",
            discussion: """
                Replays the recording twice through the pipeline's privacy.review settings, once masking where the \
                tracker predicts faces and once masking detections only, and compares every drawn face's detail \
                (variance of the Laplacian) in the review video with the original: above --bound of it is a leak.
                """)

        @Argument(help: "Recording with a .truth.json beside it.")
        var recording = "Recordings/out/showroom-640x480.mp4"

        @Option(help: "Pipeline file.")
        var pipeline = "Pipelines/showroom.yml"

        @Option(help: "Detail ratio above which a face-frame counts as leaked.")
        var bound = 0.25

        func validate() throws { try checkRange(bound, "bound", 0...100) }

        @Option(help: "Keep the two review videos in this folder (default: a temporary one, removed).")
        var keep: String?

        @OptionGroup var models: ModelOptions

        func run() throws {
            let definition = try loadPipeline(pipeline, models: models)
            let truth = try JSONDecoder().decode(
                GroundTruth.self, from: Data(contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: recording))))
            let folder = URL(fileURLWithPath: keep ?? NSTemporaryDirectory() + "sentinel-masking-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { if keep == nil { try? FileManager.default.removeItem(at: folder) } }
            for follow in [true, false] {
                var settings = definition.privacy.review
                settings.followTracks = follow
                let path = folder.appendingPathComponent(
                    follow ? "review-following-tracks.avi" : "review-detections-only.avi"
                ).path
                let runner = try SourceRunner(
                    definition: definition, source: definition.sources[0], models: try models.store(), input: recording,
                    pace: .fastest,
                    logger: makeLogger("sentinel.eval"))
                let review = ReviewVideo(
                    path: path, fps: runner.nominalFPS, zones: runner.source.zones, settings: settings)
                try runner.run { step in
                    if let frame = step.frame { try review.write(frame) }
                }
                review.finish()
                let score = try MaskLeakScore.measure(original: recording, review: path, truth: truth, bound: bound)
                print(
                    String(
                        format: "%@ %@ scale %.2f: %d of %d face-frames leaked (worst detail ratio %.3f)",
                        follow ? "masks following tracks:" : "masks on detections only:", settings.mask.rawValue,
                        settings.scale,
                        score.leaked, score.faceFrames, score.worstRatio))
                for leak in score.leaks.prefix(20) {
                    print("  frame \(leak.frame) \(leak.visitor) ratio \(leak.ratio)")
                }
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

extension SourceRunner {
    /// Runs to the end, then scores where the pipeline placed each visitor and what it stored against `truth`. The
    /// pipeline should be made `forEvaluation`, so stored times are exact. Also returns the frames it took.
    func score(against truth: GroundTruth) throws -> (score: TrackingScore, frames: Int) {
        var observed: [Int: [(faceId: String, box: Box)]] = [:]
        var events: [VisitorEvent] = []
        try run { step in
            events += step.events.map { $0[.store]!.event }
            if let frame = step.frame { observed[frame.index] = frame.tracked.map { ($0.label, $0.box) } }
        }
        return (
            TrackingScore.evaluate(truth: truth, observed: observed, events: events, origin: origin), observed.count
        )
    }
}
