import ArgumentParser
import Foundation
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

struct BenchPipeline: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pipeline",
        abstract: "End-to-end frames per second of a pipeline on recordings, beside plain C++ and a naive Python loop.",
        discussion: """
            For each recording and each detector:scale given: Sentinel's whole pipeline (decode on its own thread, \
            detect, track, zones, emotion, events) as `replay` runs it, with tracked-face recall and IDF1 as `sentinel eval \
            tracking` computes them and the worst per-visitor dwell error, against ground truth; sentinel-cxx-loop (decode + detect, plain OpenCV C++); and, \
            for retinaface, Tests/Peers/naive_pipeline.py (python3-opencv: decode, detect and classify every face of \
            every frame, the program a user would write instead) with its detection recall. Build in release.
            """)

    @Argument(help: "Recordings with ground truth (default: the 640x480 and 1280x720 samples).")
    var recordings: [String] = ["Recordings/out/showroom-640x480.mp4", "Recordings/out/showroom-1280x720.mp4"]

    @Option(help: "Pipeline file.")
    var pipeline = "Pipelines/showroom.yml"

    @Option(
        parsing: .upToNextOption,
        help: "Detector and scale pairs to run, as kind:scale (default: the pipeline's, and centerface:640 beside it).")
    var configs: [String] = []

    @Option(help: "Frame rate of the live figure's camera stand-in (0: skip the live figure).")
    var liveFps = 30.0

    func validate() throws { try checkRange(liveFps, "live-fps", 0...240) }

    @OptionGroup var models: ModelOptions

    func run() throws {
        let base = try loadPipeline(pipeline, models: models)
        let store = try models.store()
        var pairs: [(DetectorKind, Int)] = [(base.detection.kind, base.detectorSettings.longestSide)]
        if base.detection.kind != .centerface { pairs.append((.centerface, 640)) }
        if !configs.isEmpty {
            pairs = try configs.map { text in
                let parts = text.split(separator: ":")
                guard parts.count == 2, let kind = DetectorKind(rawValue: String(parts[0])), let scale = Int(parts[1]),
                    scale > 0
                else {
                    throw ValidationError("--configs \(text): expected kind:scale, such as retinaface:320")
                }
                return (kind, scale)
            }
        }
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        let loop = here.appendingPathComponent("sentinel-cxx-loop").path
        print(
            "recording              detector:scale   program                              fps   recall   IDF1   worst dwell error"
        )
        for recording in recordings {
            let truth = try JSONDecoder().decode(
                GroundTruth.self, from: Data(contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: recording))))
            let labels = RecordingLabels(truth)
            let name = URL(fileURLWithPath: recording).lastPathComponent
            for (kind, scale) in pairs {
                var definition = base
                if kind != base.detection.kind {
                    definition.detection.kind = kind
                    definition.detectorModel = nil
                    definition.detectorSettings = .defaults(for: kind)
                }
                definition.detectorSettings.longestSide = scale
                let config = "\(kind.rawValue):\(scale)"
                func row(_ program: String, fps: Double, recall: Double?, idf1: Double? = nil, dwell: Double? = nil) {
                    let cells: [String] = [recall, idf1].map { $0.map { String(format: "%6.3f", $0) } ?? "     -" }
                    var line = name.padding(toLength: 22, withPad: " ", startingAt: 0)
                    line += " " + config.padding(toLength: 16, withPad: " ", startingAt: 0)
                    line += " " + program.padding(toLength: 32, withPad: " ", startingAt: 0)
                    line += String(format: " %7.1f  ", fps) + cells.joined(separator: " ")
                    if let dwell { line += String(format: "   %.2f s", dwell) }
                    print(line)
                }
                func ratio(_ text: String) {
                    print(
                        name.padding(toLength: 22, withPad: " ", startingAt: 0) + " "
                            + config.padding(toLength: 16, withPad: " ", startingAt: 0) + " " + text)
                }
                // Sentinel, as replay runs it: its frames per second, with its row.
                func sentinel(_ program: String, _ definition: PipelineDefinition) throws -> Double {
                    let runner = try SourceRunner(
                        definition: definition.forEvaluation, source: definition.sources[0], models: store,
                        input: recording, pace: .fastest, logger: makeLogger("sentinel.bench"))
                    let clock = ContinuousClock()
                    let start = clock.now
                    let run = try runner.evaluationRun()
                    let fps = Double(run.frames.count) / (clock.now - start).seconds
                    let score = try labels.score(run, origin: runner.origin)
                    row(
                        program, fps: fps, recall: score.metrics.recall, idf1: score.metrics.idf1,
                        dwell: score.visits?.visitors.map(\.dwellError).max())
                    return fps
                }
                // One detector (OpenCV's own threads on each frame); then, with every frame detected, a detector per
                // core on consecutive frames (`detector.workers: 0`, the default for one source).
                var single = definition
                single.detection.workers = 1
                let sentinelFPS = try sentinel("sentinel, one detector", single)
                var parallelFPS: Double?
                if definition.detection.maxFps == 0 {
                    var parallel = definition
                    parallel.detection.workers = 0
                    parallelFPS = try sentinel(
                        "sentinel, workers: 0 (\(parallel.detection.resolvedWorkers()))", parallel)
                    // The workers set OpenCV to one thread per call for the process: back to its default.
                    OpenCVFaceDetector.useThreads(0)
                }
                let modelPath = try store.path(of: definition.resolvedDetectorModel)
                let s = definition.detectorSettings
                let arguments = [
                    recording, kind.rawValue, modelPath, "\(scale)", "\(s.scoreThreshold)", "\(s.nmsThreshold)",
                    "\(s.minFaceSize)", "\(s.blankThreshold)", "100000",
                ]
                // The most a program that detects every frame gets from this box: two plain loops side by side, one
                // thread each (OpenCV's own two threads on one frame do less), their rates added.
                var ceiling: Double?
                if FileManager.default.isExecutableFile(atPath: loop) {
                    let (one, two) = try Self.cxxLoops(loop, arguments)
                    ceiling = two
                    row("C++ loop (decode + detect)", fps: one, recall: nil)
                    row("C++ loop x2, 1 thread each", fps: two, recall: nil)
                    if let parallelFPS {
                        ratio(
                            String(
                                format: "Sentinel / two C++ loops: %.2fx one detector, %.2fx workers: 0",
                                sentinelFPS / two, parallelFPS / two))
                    }
                }
                if kind == .retinaface {
                    let naive = try Self.naiveLoop(
                        recording, truth: truth,
                        arguments: [
                            modelPath, try store.path(of: definition.emotionModel), "\(scale)", "\(s.scoreThreshold)",
                            "\(s.nmsThreshold)",
                        ])
                    row("naive python3-opencv loop", fps: naive.fps, recall: naive.recall)
                    var ratios = String(format: "Sentinel / naive: %.2fx one detector", sentinelFPS / naive.fps)
                    if let parallelFPS { ratios += String(format: ", %.2fx workers: 0", parallelFPS / naive.fps) }
                    if let ceiling {
                        ratios += String(format: "; every frame detected, at most %.2fx here", ceiling / naive.fps)
                    }
                    ratio(ratios)
                }
            }
        }
        if liveFps > 0 { try live() }
    }

    /// The live figure: the sample scene rendered at `liveFps`, served in real time by Debian's GStreamer RTSP server
    /// (the tests' camera stand-in), analysed by the pipeline as `sentinel run` analyses a camera. Prints frames
    /// captured, analysed and dropped, capture-to-event latency and each visitor's dwell error.
    /// sentinel-cxx-loop's frames per second alone, and of two copies side by side with one OpenCV thread each.
    static func cxxLoops(_ loop: String, _ arguments: [String]) throws -> (one: Double, two: Double) {
        func fps(_ output: String) -> Double {
            let values = pairs(output)
            return (values["frames"] ?? 0) / max(values["seconds"] ?? 1, 1e-9)
        }
        let one = fps(try run(loop, arguments)[0])
        let two = try run(loop, arguments, copies: 2, environment: ["OPENCV_FOR_THREADS_NUM": "1"]).map(fps)
        return (one, two.reduce(0, +))
    }

    /// Tests/Peers/naive_pipeline.py on `recording`: its frames per second and its detection recall against `truth`.
    static func naiveLoop(_ recording: String, truth: GroundTruth, arguments: [String]) throws -> (
        fps: Double, recall: Double
    ) {
        let output = try run("/usr/bin/python3", ["Tests/Peers/naive_pipeline.py", recording] + arguments)[0]
        var detections = DetectionScore()
        var frames = 0.0
        var seconds = 1.0
        for line in output.split(separator: "\n") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                continue
            }
            if let index = object["frame"] as? Int, let faces = object["faces"] as? [[String: Any]],
                index < truth.frames.count
            {
                func value(_ face: [String: Any], _ key: String) -> Double {
                    (face[key] as? NSNumber)?.doubleValue ?? .nan
                }
                let boxes = faces.map {
                    Box(x: value($0, "x"), y: value($0, "y"), width: value($0, "width"), height: value($0, "height"))
                }
                detections.add(truth: truth.frames[index].faces, detections: boxes)
            } else if let n = object["frames"] as? NSNumber, let t = object["seconds"] as? NSNumber {
                (frames, seconds) = (n.doubleValue, t.doubleValue)
            }
        }
        return (frames / seconds, detections.recall)
    }

    func live() throws {
        let definition = try loadPipeline(pipeline, models: models)
        var spec = try SceneSpec.load("Recordings/showroom.yml")
        spec.fps = liveFps
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sentinel-bench-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let video = folder.appendingPathComponent("live.mp4")
        let truth = try SceneRenderer(spec: spec, folder: URL(fileURLWithPath: "Recordings")).render(
            width: 640, height: 480, video: video)
        let camera = Process()
        camera.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        camera.arguments = ["Tests/SentinelTestSupport/rtsp_camera.py", "cam=\(video.path)"]
        let input = Pipe()
        let output = Pipe()
        (camera.standardInput, camera.standardOutput, camera.standardError) = (input, output, FileHandle.nullDevice)
        try camera.run()
        defer { camera.terminate() }
        let banner = String(decoding: output.fileHandleForReading.availableData, as: UTF8.self)
        guard let port = banner.firstMatch(of: /PORT (\d+)/).flatMap({ Int($0.1) }) else {
            throw CommandError("the RTSP camera stand-in did not start: \(banner)")
        }
        let stop = StopFlag()
        let runner = try SourceRunner(
            definition: definition, source: definition.sources[0], models: try models.store(),
            input: "rtsp://127.0.0.1:\(port)/cam",
            capture: .init(stop: stop, pool: FramePool(bytes: FramePool.runBytes)), logger: makeLogger("sentinel.bench")
        )
        var latencies: [Double] = []
        var entered: [String] = []
        var exited: [String: Double] = [:]
        let deadline = ContinuousClock.now + .seconds(spec.duration + 20)
        try runner.run(stop: stop) { step in
            if ContinuousClock.now > deadline { stop.set() }
            for event in step.events.map(\.stored.event) {
                if let capturedAt = step.frame?.capturedAt {
                    latencies.append((ContinuousClock.now - capturedAt).seconds)
                }
                if event.type == .entered { entered.append(event.visitor.faceId) }
                if event.type == .exited { exited[event.visitor.faceId] = event.visitor.dwellSeconds }
            }
            // The first playback is over once its visitors have all left.
            if entered.count >= truth.visitors.count,
                entered.prefix(truth.visitors.count).allSatisfy({ exited[$0] != nil })
            {
                stop.set()
            }
        }
        let counts = runner.edge.snapshot
        latencies.sort()
        print("")
        print(
            String(
                format: "live: camera stand-in at %.0f fps (RTSP, 640x480), %@ at %d px", liveFps,
                definition.detection.kind.rawValue,
                definition.detectorSettings.longestSide))
        print(
            String(
                format: "  frames captured %d, analysed %d, dropped %d (%.0f %%)", counts.captured, counts.delivered,
                counts.dropped,
                100 * Double(counts.dropped) / Double(max(counts.captured, 1))))
        print(
            String(
                format: "  capture-to-event latency p50 %.0f ms, p99 %.0f ms (%d events)",
                latencies.percentile(0.5) * 1000,
                latencies.percentile(0.99) * 1000,
                latencies.count))
        for (visitor, faceId) in zip(truth.visitors.sorted { $0.firstSeen < $1.firstSeen }, entered) {
            let expected = (visitor.lastSeen - visitor.firstSeen).seconds
            let measured = exited[faceId] ?? .nan
            print(
                String(
                    format: "  %@ dwell true %.2f s, measured %.2f s, error %.2f s", visitor.id, expected, measured,
                    abs(measured - expected)))
        }
    }

    /// Runs `copies` of a program at once, with `environment` added, to their end; the standard output of each.
    static func run(_ executable: String, _ arguments: [String], copies: Int = 1, environment: [String: String] = [:])
        throws -> [String]
    {
        let started = try (0..<copies).map { _ in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = arguments
            process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
            let pipe = Pipe()
            process.standardOutput = pipe
            process.standardError = FileHandle.nullDevice
            try process.run()
            return (process, pipe)
        }
        return try started.map { process, pipe in
            let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
            process.waitUntilExit()
            guard process.terminationStatus == 0 else {
                throw CommandError("\(executable) \(arguments.first ?? "") failed (exit \(process.terminationStatus))")
            }
            return output
        }
    }

    /// `key=value` words of a line such as sentinel-cxx-loop prints.
    static func pairs(_ text: String) -> [String: Double] {
        var values: [String: Double] = [:]
        for pair in text.split(whereSeparator: { $0 == " " || $0 == "\n" }) {
            let parts = pair.split(separator: "=")
            if parts.count == 2 { values[String(parts[0])] = Double(parts[1]) }
        }
        return values
    }
}
