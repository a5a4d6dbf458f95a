import ArgumentParser
import Foundation
import SentinelCommandLine
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelModels
import SentinelPipeline
import SentinelSynth
import SentinelTuning
import SentinelVision
import Synchronization

struct BenchSizing: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sizing",
        abstract:
            "How many cameras this box takes: cameras by resolution and detection cadence, without falling behind.",
        discussion: """
            For each size and cadence (`detector.maxFps`, 0: every frame), N cameras analysed side by side in one \
            process as `sentinel run` analyses them (the detection workers shared among them): each plays the sample \
            recording of that size at its own pace through a capture edge that drops the oldest frame when analysis \
            is behind, as a camera's does. A count keeps up when no camera dropped more than 1 % of its frames. Per \
            count: the worst camera's dropped share, capture-to-event latency p99 over every camera's events, and the \
            worst dwell error of any visitor on any camera against the recording's ground truth. Counts are tried in \
            the order given until one falls behind. Build in release; the machine should be otherwise idle.
            """)

    @Option(parsing: .upToNextOption, help: "Recording sizes, as WxH (the samples: 640x480, 1280x720).")
    var sizes = ["640x480", "1280x720"]

    @Option(parsing: .upToNextOption, help: "Detection cadences (detector.maxFps; 0: every frame).")
    var cadences = [5.0, 0]

    @Option(parsing: .upToNextOption, help: "Camera counts to try, in order.")
    var cameras = [1, 2, 4, 8, 12, 16]

    @Option(help: "Pipeline file.")
    var pipeline = "Pipelines/showroom.yml"

    @OptionGroup var models: ModelOptions

    func validate() throws {
        for n in cameras { try checkRange(n, "cameras", 1...64) }
        for c in cadences { try checkRange(c, "cadences", 0...60) }
    }

    func run() throws {
        let base = try loadPipeline(pipeline, models: models)
        let store = try models.store()
        print(
            "size       cadence        cameras  keeps up  dropped (worst)  capture-to-event p99  worst dwell error  analysed fps (all)"
        )
        for size in sizes {
            let recording = "Recordings/out/showroom-\(size).mp4"
            guard FileManager.default.fileExists(atPath: recording) else {
                throw ValidationError("\(recording): no such file (make recordings renders the samples)")
            }
            let labels = RecordingLabels(
                try JSONDecoder().decode(
                    GroundTruth.self,
                    from: Data(contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: recording)))))
            for cadence in cadences {
                var definition = base.forEvaluation
                definition.detection.maxFps = cadence
                for count in cameras {
                    let result = try Self.measure(definition, count: count, recording: recording, labels, store)
                    let keepsUp = result.worstDropped <= 0.01
                    print(
                        size.padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                            + (cadence == 0 ? "every frame" : "maxFps \(cadence.formatted())").padding(
                                toLength: 14, withPad: " ", startingAt: 0)
                            + String(
                                format: " %7d  %-8@  %13.1f %%  %17.0f ms  %15.2f s  %18.1f", count,
                                keepsUp ? "yes" : "no", result.worstDropped * 100, result.p99 * 1000,
                                result.worstDwell, result.analysedFPS))
                    if !keepsUp { break }
                }
            }
        }
    }

    struct Result {
        var worstDropped = 0.0
        var p99 = 0.0
        var worstDwell = 0.0
        var analysedFPS = 0.0
    }

    /// `count` cameras on `recording` at its own pace, each on a thread of its own, to the recording's end.
    static func measure(
        _ definition: PipelineDefinition, count: Int, recording: String, _ labels: RecordingLabels,
        _ store: ModelStore
    ) throws -> Result {
        var shared = definition
        shared.detection.workers = definition.detection.resolvedWorkers(sources: count)
        let runners = try (0..<count).map { _ in
            try SourceRunner(
                definition: shared, source: shared.sources[0], models: store, input: recording, pace: .realTime,
                capture: .init(stop: StopFlag()), logger: makeLogger("sentinel.bench"))
        }
        let cameras = Cameras(count)
        let done = DispatchGroup()
        let start = ContinuousClock.now
        for (index, runner) in runners.enumerated() {
            done.enter()
            nonisolated(unsafe) let runner = runner
            let thread = Thread {
                var camera = Camera()
                do {
                    try runner.run { step in
                        camera.recorder.record(step)
                        if let capturedAt = step.frame?.capturedAt, !step.events.isEmpty {
                            camera.latencies.append((ContinuousClock.now - capturedAt).seconds)
                        }
                    }
                } catch {
                    camera.error = "\(error)"
                }
                cameras.done(index, camera)
                done.leave()
            }
            thread.stackSize = 8 << 20
            thread.start()
        }
        done.wait()
        let seconds = (ContinuousClock.now - start).seconds
        OpenCVFaceDetector.useThreads(0)
        let finished = cameras.all
        if let error = finished.compactMap(\.error).first { throw CommandError("a camera failed: \(error)") }
        var result = Result()
        var latencies: [Double] = []
        var analysed = 0
        for (runner, camera) in zip(runners, finished) {
            let counts = runner.edge.snapshot
            result.worstDropped = max(result.worstDropped, Double(counts.dropped) / Double(max(counts.captured, 1)))
            latencies += camera.latencies
            analysed += counts.delivered
            let score = labels.score(camera.recorder, origin: runner.origin)
            result.worstDwell = max(result.worstDwell, score.visits?.visitors.map(\.dwellError).max() ?? 0)
        }
        latencies.sort()
        result.p99 = latencies.percentile(0.99)
        result.analysedFPS = Double(analysed) / seconds
        return result
    }

    /// What each camera's thread leaves: its run, the latency of its events, or why it failed.
    struct Camera: Sendable {
        var recorder = RunRecorder()
        var latencies: [Double] = []
        var error: String?
    }

    /// The cameras' results, each handed over by its thread when it ends.
    final class Cameras: Sendable {
        private let results: Mutex<[Int: Camera]> = Mutex([:])
        private let count: Int
        init(_ count: Int) { self.count = count }
        func done(_ index: Int, _ camera: Camera) { results.withLock { $0[index] = camera } }
        var all: [Camera] { results.withLock { results in (0..<count).map { results[$0] ?? Camera() } } }
    }
}
