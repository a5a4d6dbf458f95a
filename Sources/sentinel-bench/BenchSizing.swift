import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelModels
import SentinelPipeline
import SentinelTuning
import SentinelVision
import Synchronization

struct BenchSizing: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sizing",
        abstract:
            "How many cameras this box takes: cameras by resolution and detection cadence, without falling behind.",
        discussion: """
            For each scene, size and cadence (`detector.maxFps`, 0: every frame), N cameras analysed side by side in \
            one process as `sentinel run` analyses them (the cores shared among them): each plays the scene's \
            recording of that size at its own pace through a capture edge that drops the oldest frame when analysis \
            is behind, as a camera's does. All at once (the default): every camera starts together and sees the same \
            moment, as when a group walks in front of every camera of a showroom. Scenes: `showroom` (the demo's \
            traffic, four visitors in 40 s) and `quiet` (one visitor a minute; Recordings/quiet.yml, rendered by \
            make bench). With --stagger, camera i starts i/N of the scene later and plays it twice; frames, \
            detections and cores busy are then taken while all N run. A count keeps up when no camera dropped more \
            than 1 % of its frames. Per count: the worst camera's dropped share, capture-to-event latency p99 over \
            every camera's events, the worst dwell error of any visitor on any camera against the recording's ground \
            truth, frames analysed and detections (whole frames, and regions) a second over all cameras, and cores \
            busy. Counts are tried in the order given until one falls behind. Build in release; the machine should \
            be otherwise idle.
            """)

    @Option(parsing: .upToNextOption, help: "Scenes: showroom (the demo's traffic), quiet (one visitor a minute).")
    var scenes = ["showroom", "quiet"]

    @Option(
        parsing: .upToNextOption, help: "Recording sizes, as WxH; a size a scene was not rendered at is passed over.")
    var sizes = ["640x480", "1280x720"]

    @Option(parsing: .upToNextOption, help: "Detection cadences (detector.maxFps; 0: every frame).")
    var cadences = [5.0, 0]

    @Option(parsing: .upToNextOption, help: "Camera counts to try, in order.")
    var cameras = [1, 2, 4, 8, 12, 16, 24]

    @Option(help: "Frames each capture edge holds for analysis (sentinel run's).")
    var buffer = SourceRunner.Capture.burstFrames

    @Flag(help: "Start the cameras at other moments of the scene (else all at once).")
    var stagger = false

    @Option(help: "Pipeline file.")
    var pipeline = "Pipelines/showroom.yml"

    @OptionGroup var settings: SettingOverrides
    @OptionGroup var models: ModelOptions

    func validate() throws {
        for n in cameras { try checkRange(n, "cameras", 1...64) }
        for c in cadences { try checkRange(c, "cadences", 0...60) }
    }

    func run() throws {
        let base = try loadPipeline(pipeline, models: models, overrides: try settings.overrides)
        let store = try models.store()
        print(
            "scene     size       cadence        cameras  keeps up  dropped (worst)  capture-to-event p99  worst dwell error  frames/s  detections/s (regions)  cores busy  pool peak"
        )
        for scene in scenes {
            for size in sizes {
                let recording = "Recordings/out/\(scene)-\(size).mp4"
                guard FileManager.default.fileExists(atPath: recording) else {
                    guard scene == "showroom" || size == "640x480" else { continue }
                    throw ValidationError(
                        "\(recording): no such file (make bench renders it: sentinel synth Recordings/\(scene).yml)")
                }
                let labels = RecordingLabels(
                    try JSONDecoder().decode(
                        GroundTruth.self,
                        from: Data(contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: recording)))))
                for cadence in cadences {
                    var definition = base.forEvaluation
                    definition.detection.maxFps = cadence
                    for count in cameras {
                        let result = try Self.measure(
                            definition, count: count, buffer: buffer, stagger: stagger, recording: recording, labels,
                            store)
                        let keepsUp = result.worstDropped <= 0.01
                        print(
                            scene.padding(toLength: 9, withPad: " ", startingAt: 0) + " "
                                + size.padding(toLength: 10, withPad: " ", startingAt: 0) + " "
                                + (cadence == 0 ? "every frame" : "maxFps \(cadence.formatted())").padding(
                                    toLength: 14, withPad: " ", startingAt: 0)
                                + String(
                                    format:
                                        " %7d  %-8@  %13.1f %%  %17.0f ms  %15.2f s  %8.1f  %12.1f (%5.1f)  %10.2f  %6.0f MB",
                                    count, keepsUp ? "yes" : "no", result.worstDropped * 100, result.p99 * 1000,
                                    result.worstDwell, result.analysedFPS, result.detectionsPerSecond,
                                    result.regionsPerSecond, result.cores, Double(result.poolPeak) / 1e6))
                        if !keepsUp { break }
                    }
                }
            }
        }
    }

    struct Result {
        var worstDropped = 0.0
        var p99 = 0.0
        var worstDwell = 0.0
        /// Frames analysed a second, and frames detected on, all cameras together.
        var analysedFPS = 0.0
        var detectionsPerSecond = 0.0
        /// Of those, the frames detected by regions only (a fraction of a whole frame's cost).
        var regionsPerSecond = 0.0
        /// The process's CPU time over the wall time.
        var cores = 0.0
        /// The most bytes of frames the cameras held beyond their own at once (`FramePool`).
        var poolPeak = 0
    }

    /// `count` cameras on `recording` at its own pace, each on a thread of its own. Staggered, camera i starts i/count
    /// of the recording's length after the first and plays it twice (as `sentinel run --loop` does, a new run each
    /// time), so that for one length all of them run, each at another moment of the scene; the load figures are
    /// taken over that stretch. Together, all start at once and play it once.
    static func measure(
        _ definition: PipelineDefinition, count: Int, buffer: Int, stagger: Bool, recording: String,
        _ labels: RecordingLabels, _ store: ModelStore
    ) throws -> Result {
        let shared = definition.sharing(sources: count)
        let truth = labels.truth!
        let length = Double(truth.frames.count) / truth.fps
        let cameras = Cameras(count)
        // One OpenCV thread a camera when several run, its default for one: set here, between measurements, while no
        // detection runs (`shareCores` never goes back to the default, as a service never needs to).
        OpenCVFaceDetector.useThreads(count > 1 ? 1 : 0)
        // The frames beyond each camera's own, from one budget for all of them, as `sentinel run`'s.
        let pool = FramePool(bytes: FramePool.runBytes)
        let done = DispatchGroup()
        for index in 0..<count {
            done.enter()
            let thread = Thread {
                var camera = Camera()
                Thread.sleep(forTimeInterval: stagger ? length * Double(index) / Double(count) : 0)
                if index == count - 1 { cameras.mark() }
                do {
                    for _ in 0..<(stagger ? 2 : 1) {
                        var capture = SourceRunner.Capture(stop: StopFlag(), pool: pool)
                        capture.capacity = buffer
                        let runner = try SourceRunner(
                            definition: shared, source: shared.sources[0], models: store, input: recording,
                            pace: .realTime, capture: capture, logger: makeLogger("sentinel.bench"))
                        var recorder = RunRecorder()
                        try runner.run { step in
                            recorder.record(step)
                            if let frame = step.frame {
                                cameras.frame(detected: frame.analysed, regions: frame.timings.regions > 0)
                            }
                            if let capturedAt = step.frame?.capturedAt, !step.events.isEmpty {
                                camera.latencies.append((ContinuousClock.now - capturedAt).seconds)
                            }
                        }
                        let counts = runner.edge.snapshot
                        camera.captured += counts.captured
                        camera.dropped += counts.dropped
                        let score = try labels.score(recorder, origin: runner.origin)
                        camera.worstDwell = max(
                            camera.worstDwell, score.visits?.visitors.map(\.dwellError).max() ?? 0)
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
        let finished = cameras.all
        if let error = finished.compactMap(\.error).first { throw CommandError("a camera failed: \(error)") }
        var result = Result()
        var latencies: [Double] = []
        for camera in finished {
            result.worstDropped = max(result.worstDropped, Double(camera.dropped) / Double(max(camera.captured, 1)))
            latencies += camera.latencies
            result.worstDwell = max(result.worstDwell, camera.worstDwell)
        }
        latencies.sort()
        result.p99 = latencies.percentile(0.99)
        let load = cameras.load
        result.analysedFPS = Double(load.frames) / load.seconds
        result.detectionsPerSecond = Double(load.detections) / load.seconds
        result.regionsPerSecond = Double(load.regions) / load.seconds
        result.cores = load.cpu / load.seconds
        result.poolPeak = pool.used.most
        return result
    }

    /// User and system CPU time of this process so far.
    static func cpuSeconds() -> Double {
        var usage = rusage()
        getrusage(__rusage_who_t(RUSAGE_SELF.rawValue), &usage)
        func seconds(_ t: timeval) -> Double { Double(t.tv_sec) + Double(t.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// What each camera's thread leaves: its frames, the latency of its events, its worst dwell error, or why it
    /// failed.
    struct Camera: Sendable {
        var captured = 0
        var dropped = 0
        var latencies: [Double] = []
        var worstDwell = 0.0
        var error: String?
    }

    /// The cameras' results, each handed over by its thread when it ends, and the process's load from the moment
    /// the last camera starts (`mark`) to the moment the first one ends.
    final class Cameras: Sendable {
        typealias Load = (cpu: Double, seconds: Double, frames: Int, detections: Int, regions: Int)
        private struct State {
            var results: [Int: Camera] = [:]
            var marked: (wall: ContinuousClock.Instant, cpu: Double, frames: Int, detections: Int, regions: Int)?
            var load: Load?
            var frames = 0
            var detections = 0
            var regions = 0
        }
        private let state = Mutex(State())
        private let count: Int
        init(_ count: Int) { self.count = count }

        func mark() {
            let cpu = BenchSizing.cpuSeconds()
            state.withLock { $0.marked = (ContinuousClock.now, cpu, $0.frames, $0.detections, $0.regions) }
        }

        /// A frame analysed, detected on (whole or by regions) or not.
        func frame(detected: Bool, regions: Bool) {
            state.withLock {
                $0.frames += 1
                if detected { $0.detections += 1 }
                if regions { $0.regions += 1 }
            }
        }

        func done(_ index: Int, _ camera: Camera) {
            let cpu = BenchSizing.cpuSeconds()
            state.withLock {
                $0.results[index] = camera
                if $0.load == nil, let marked = $0.marked {
                    $0.load = (
                        cpu - marked.cpu, (ContinuousClock.now - marked.wall).seconds, $0.frames - marked.frames,
                        $0.detections - marked.detections, $0.regions - marked.regions
                    )
                }
            }
        }

        var all: [Camera] { state.withLock { state in (0..<count).map { state.results[$0] ?? Camera() } } }
        var load: Load { state.withLock { $0.load ?? (0, 1, 0, 0, 0) } }
    }
}
