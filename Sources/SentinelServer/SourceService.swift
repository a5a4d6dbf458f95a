import Foundation
import CoreMetrics
import Logging
import Metrics
import SentinelCore
import SentinelModels
import SentinelPipeline
import SentinelPrivacy
import SentinelVision
import ServiceLifecycle

/// One source, run on a thread of its own (OpenCV calls block; they must not hold the few threads Swift's
/// concurrency runs on). Masked events go to the hub. A recording can loop; a source that fails is logged and
/// marked failed in /healthz, and the rest of the service goes on.
public final class SourceService: Service, @unchecked Sendable {
    let definition: PipelineDefinition
    let source: PipelineDefinition.SourceDefinition
    let models: ModelStore
    let pace: Pacing?
    let loop: Bool
    let keys: PseudonymKeyRing
    let hub: Hub
    let live: LiveState
    let telemetry: Telemetry
    let logger: Logger
    private let stopFlag = StopFlag()

    public init(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore, pace: Pacing?, loop: Bool,
        keys: PseudonymKeyRing, hub: Hub, live: LiveState, telemetry: Telemetry, logger: Logger
    ) {
        self.definition = definition
        self.source = source
        self.models = models
        self.pace = pace
        self.loop = loop
        self.keys = keys
        self.hub = hub
        self.live = live
        self.telemetry = telemetry
        var logger = logger
        logger[metadataKey: "source.id"] = "\(source.id)"
        self.logger = logger
    }

    public func run() async throws {
        await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
                    let thread = Thread { [self] in
                        Self.blockShutdownSignals()
                        runSource()
                        done.resume()
                    }
                    thread.name = "source \(source.id)"
                    thread.start()
                }
            } onCancel: {
                stopFlag.set()
            }
        } onGracefulShutdown: {
            self.stopFlag.set()
        }
    }

    /// Leaves SIGTERM and SIGINT to the service group. Its handler reads them through a signalfd, which only sees a
    /// signal that every thread blocks; this thread, and the decoder and OpenCV threads it starts, would otherwise
    /// take the default action and kill the process mid-write.
    private static func blockShutdownSignals() {
        var signals = sigset_t()
        sigemptyset(&signals)
        sigaddset(&signals, SIGTERM)
        sigaddset(&signals, SIGINT)
        pthread_sigmask(SIG_BLOCK, &signals, nil)
    }

    /// Runs the source until it ends (or forever, looping a recording) or until shutdown.
    private func runSource() {
        let fps = telemetry.fps(source: source.id)
        let dropped = telemetry.droppedFrames(source: source.id)
        let detectTimer = telemetry.stage("detect")
        let visitorsTimer = telemetry.stage("visitors")
        let maskTimer = telemetry.stage("mask")
        let hub = hub, live = live, source = source, definition = definition
        repeat {
            do {
                // In a service, a recording is played as if live: placed on the wall clock when it starts.
                let runner = try SourceRunner(definition: definition, source: source, models: models, pace: pace, origin: Date(), logger: logger)
                live.updateSource(source.id) {
                    $0.state = .running
                    $0.message = nil
                }
                logger.info("source started", metadata: ["input": "\(runner.sourceName)"])
                var mask = PrivacyMask(policy: definition.privacy, keys: keys)
                var rate = FrameRate()
                let interval = 1 / max(runner.nominalFPS, 1)
                try runner.run(
                    mask: &mask,
                    onEvent: { masked in
                        let start = ContinuousClock.now
                        hub.submit(masked)
                        maskTimer.recordInterval(since: start)
                    },
                    onFrame: { frame in
                        let now = Date()
                        hub.tick(time: runner.origin.addingTimeInterval(frame.time.seconds))
                        detectTimer.record(duration: frame.timings.detect)
                        visitorsTimer.record(duration: frame.timings.visitors)
                        if let missed = rate.add(frame.time.seconds, interval: interval), missed > 0 { dropped.increment(by: missed) }
                        fps.record(rate.fps)
                        live.updateSource(source.id) {
                            $0.lastFrameAt = now
                            $0.fps = rate.fps
                        }
                    },
                    shouldStop: { stopFlag.isSet })
                live.updateSource(source.id) { $0.state = .ended }
                logger.info("source ended")
            } catch {
                logger.error("source failed", metadata: ["error": "\(error)"])
                live.updateSource(source.id) {
                    $0.state = .failed
                    $0.message = "\(error)"
                }
                // A recording that cannot be read will not be readable a moment later either, but a camera may be.
                if loop, !stopFlag.isSet { stopFlag.wait(seconds: 5) }
            }
        } while loop && !stopFlag.isSet
    }
}

/// Frames per second over the last second, and frames missed (gaps in timestamps longer than 1.5 intervals).
struct FrameRate {
    private var last: Double?
    private(set) var fps = 0.0
    private let wall = ContinuousClock()
    private var wallTimes: [ContinuousClock.Instant] = []

    /// Adds a frame at media time `time`; returns the frames missed since the previous one.
    mutating func add(_ time: Double, interval: Double) -> Int? {
        let now = wall.now
        wallTimes.append(now)
        wallTimes.removeAll { now - $0 > .seconds(1) }
        fps = Double(wallTimes.count)
        defer { last = time }
        guard let last, time > last + 1.5 * interval else { return nil }
        return Int(((time - last) / interval).rounded()) - 1
    }
}

/// A flag set once, from any thread, that a thread can also sleep on.
final class StopFlag: @unchecked Sendable {
    private let condition = NSCondition()
    private var stopped = false

    var isSet: Bool { condition.withLock { stopped } }

    func set() {
        condition.withLock {
            stopped = true
            condition.broadcast()
        }
    }

    /// Sleeps until set or `seconds` pass.
    func wait(seconds: Double) {
        condition.withLock {
            let deadline = Date().addingTimeInterval(seconds)
            while !stopped, condition.wait(until: deadline) {}
        }
    }
}
