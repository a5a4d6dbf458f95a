import CoreMetrics
import Foundation
public import Logging
import Metrics
public import SentinelConfig
public import SentinelCore
public import SentinelModels
import SentinelPipeline
public import SentinelPrivacy
public import SentinelVision
import SentinelVisitors
import SentinelWire
public import ServiceLifecycle

/// One source, run on a thread of its own (OpenCV calls block; they must not hold the few threads Swift's
/// concurrency runs on). Masked events go to the hub. A recording can loop; a source that fails is logged and
/// marked failed in /healthz, and the rest of the service goes on.
public final class SourceService: Service, Sendable {
    let definition: PipelineDefinition
    let source: PipelineDefinition.SourceDefinition
    let models: ModelStore
    let pace: Pacing?
    let loop: Bool
    let keys: PseudonymKeyRing
    let hub: Hub
    let live: LiveState
    let telemetry: Telemetry
    /// The box's budget for frames waiting beyond each source's own (`FramePool`).
    let pool: FramePool
    let logger: Logger
    /// Set on shutdown: ends capture at once and the run after the frame in hand.
    private let stopFlag = StopFlag()

    public init(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore, pace: Pacing?,
        loop: Bool,
        keys: PseudonymKeyRing, hub: Hub, live: LiveState, telemetry: Telemetry, pool: FramePool, logger: Logger
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
        self.pool = pool
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

    /// Masks and encodes `frame` for those waiting for a still of this source (on this thread: the frame is in hand).
    private func deliverStill(_ frame: MaskedFrame, at date: Date) {
        do {
            live.stills.deliver(
                try SourceSnapshot(frame, masks: FaceMasks(settings: definition.privacy.review)), at: date,
                for: source.id)
        } catch {
            logger.warning("no still", metadata: ["error": "\(error)"])
        }
    }

    /// Runs the source until it ends (or forever, looping a recording) or until shutdown.
    private func runSource() {
        var metrics = SourceMetrics(telemetry: telemetry, source: source.id)
        let hub = hub
        let live = live
        let source = source
        let definition = definition
        let logger = logger
        let capture = SourceRunner.Capture(stop: stopFlag, pool: pool) { status in
            live.updateSource(source.id) { health in
                switch status {
                case .running:
                    health.state = .running
                    health.reconnectAttempt = nil
                    health.nextRetryAt = nil
                    health.message = nil
                case .reconnecting(let attempt, let retryIn, let error):
                    health.state = .reconnecting
                    health.reconnectAttempt = attempt
                    health.nextRetryAt = Date().addingTimeInterval(retryIn.seconds)
                    health.message = error
                }
            }
        }
        repeat {
            do {
                // In a service, a recording is played as if live: placed on the wall clock when it starts.
                let runner = try SourceRunner(
                    definition: definition, source: source, models: models, keys: keys, pace: pace, origin: Date(),
                    capture: capture, logger: logger)
                logger.info("source started", metadata: ["input": "\(runner.sourceName)"])
                metrics.newEdge()
                var watch = RateWatch()
                var refusalLogged: Date?
                var refusedCount = 0
                try runner.run(stop: stopFlag) { step in
                    let capturedAt = step.frame?.capturedAt
                    for masked in step.events { hub.submit(masked, capturedAt: capturedAt) }
                    hub.tick(time: step.date)
                    guard let frame = step.frame else { return }
                    if live.stills.wanted(source.id) { deliverStill(frame, at: step.date) }
                    let lag =
                        capturedAt.map {
                            (ContinuousClock.now - $0).seconds - frame.timings.detect.seconds
                                - frame.timings.visitors.seconds
                        } ?? 0
                    if frame.analysed {
                        metrics.detect.record(duration: frame.timings.detect)
                        metrics.visitors.record(duration: frame.timings.visitors)
                    }
                    for why in frame.timings.unread { metrics.unread[why]?.increment() }
                    if let why = frame.timings.refused.first {
                        metrics.refused.increment(by: frame.timings.refused.count)
                        refusedCount += frame.timings.refused.count
                        // The first of a run of refusals, then one a minute: each says the gauge is missing faces.
                        if refusalLogged.map({ Date().timeIntervalSince($0) >= 60 }) ?? true {
                            refusalLogged = Date()
                            logger.error(
                                "emotion readings refused: the model's output is no reading",
                                metadata: ["why": "\(why)", "since start": "\(refusedCount)"])
                        }
                    }
                    let counts = runner.edge.snapshot
                    let behind = watch.add(counts: counts, lag: lag)
                    let totals = metrics.update(counts: counts, fps: watch.fps)
                    live.updateSource(source.id) {
                        if $0.state != .reconnecting { $0.state = behind ? .behind : .running }
                        $0.lastFrameAt = Date()
                        $0.fps = watch.fps
                        $0.lagSeconds = (max(lag, 0) * 1000).rounded() / 1000
                        $0.frames = totals
                        $0.message =
                            behind ? "analysis cannot keep the source's rate: frames are dropped at capture" : nil
                    }
                }
                // A looping recording plays again at once: it has not ended, and /healthz and the dashboard do
                // not say so for the moment its next playback takes to open.
                if !loop || stopFlag.isSet { live.updateSource(source.id) { $0.state = .ended } }
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

/// One source's frame figures, for /metrics and /healthz alike: exact counts from its capture edge, totalled over
/// the source's life (each playback of a looping recording, each reconnection of a camera, has an edge of its own
/// that starts at zero; the source's totals only grow), analysis rate and stage times.
struct SourceMetrics {
    let captured, analysed, dropped: CoreMetrics.Counter
    let fps: CoreMetrics.Gauge
    let detect, visitors: CoreMetrics.Timer
    let refused: CoreMetrics.Counter
    let unread: [EmotionSettings.Unreadable: CoreMetrics.Counter]
    private var reported = CaptureEdge.Counts()
    private var totals = FrameCounts()

    init(telemetry: Telemetry, source: String) {
        (captured, analysed, dropped) = telemetry.frames(source: source)
        fps = telemetry.fps(source: source)
        detect = telemetry.stage("detect")
        visitors = telemetry.stage("visitors")
        refused = telemetry.refusedReadings(source: source)
        unread = Dictionary(
            uniqueKeysWithValues: EmotionSettings.Unreadable.allCases.map {
                ($0, telemetry.unreadFaces(source: source, why: $0.rawValue))
            })
    }

    /// A new playback (a loop): its edge counts from zero. (An edge whose counts fall is taken for a new one too.)
    mutating func newEdge() { reported = .init() }

    /// Counters move by what changed since the last report. Returns the source's totals.
    mutating func update(counts: CaptureEdge.Counts, fps: Double) -> FrameCounts {
        if counts.captured < reported.captured { newEdge() }
        let added = FrameCounts(
            captured: counts.captured - reported.captured, analysed: counts.delivered - reported.delivered,
            dropped: counts.dropped - reported.dropped)
        captured.increment(by: added.captured)
        analysed.increment(by: added.analysed)
        dropped.increment(by: added.dropped)
        totals.captured += added.captured
        totals.analysed += added.analysed
        totals.dropped += added.dropped
        reported = counts
        self.fps.record(fps)
        return totals
    }
}

/// Analysis rate over the last second, and whether analysis is behind its source: frames dropped at the capture
/// edge in the last five seconds (more than one in ten captured), or a frame that waited more than a second.
struct RateWatch {
    private let wall = ContinuousClock()
    private var frames: [ContinuousClock.Instant] = []
    private var samples: [(time: ContinuousClock.Instant, counts: CaptureEdge.Counts)] = []
    private(set) var fps = 0.0

    mutating func add(counts: CaptureEdge.Counts, lag: Double) -> Bool {
        let now = wall.now
        frames.append(now)
        frames.removeAll { now - $0 > .seconds(1) }
        fps = Double(frames.count)
        samples.append((now, counts))
        samples.removeAll { now - $0.time > .seconds(5) }
        let first = samples.first!.counts
        let captured = counts.captured - first.captured
        let dropped = counts.dropped - first.dropped
        return lag > 1 || (captured > 0 && Double(dropped) > 0.1 * Double(captured))
    }
}
