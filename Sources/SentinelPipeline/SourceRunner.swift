public import Foundation
public import Logging
public import SentinelConfig
public import SentinelCore
public import SentinelModels
public import SentinelPrivacy
public import SentinelVision
import SentinelVisitors
import SentinelWire

/// Drives one `Pipeline` with the frames of one source, from its first frame to its end, and ends the open visits
/// on every exit path (a stage that throws must not leave visitors present forever).
///
/// Frames are read on a thread of their own through a `CaptureEdge`, so decoding overlaps analysis. Its policy is the
/// boundary's: `replay` and `eval` lose nothing (the reader waits for analysis); under `sentinel run` a camera or a
/// recording played at a pace never waits for analysis (the oldest waiting frame is dropped, and counted). With
/// `detector.maxFps`, frames between two detections are not analysed: the tracker carries the visitors across them,
/// the same way in replay and in run, by media time.
public final class SourceRunner {
    private var pipeline: Pipeline
    /// Where every frame comes from. The source behind it belongs to the edge's capture thread.
    public let edge: CaptureEdge
    /// What the source declared when it was opened.
    private let declared: (fps: Double, frames: Int?)
    /// Whether a silent source moves media time on by the clock: a live camera under `sentinel run`.
    private let ticksWhenIdle: Bool
    private let logger: Logger

    /// How `sentinel run` takes frames: through a capture edge, a live source retried from the start.
    public struct Capture: Sendable {
        /// Frames waiting for analysis at most: `burstFrames` unless told.
        public var capacity = Capture.burstFrames
        /// Half a second at 15 fps: enough to carry a camera through a burst (every camera of a box detecting the
        /// same new faces at once) without a drop, and little enough that what is analysed is still what the camera
        /// sees (docs/benchmarks.md, Sizing).
        public static let burstFrames = 8
        /// The box's budget for the frames beyond each edge's own two (`CaptureEdge.ownFrames`), shared by its
        /// sources: no edge holds `capacity` frames of its own.
        public var pool: FramePool
        /// Ends capture and the run.
        public var stop: StopFlag
        /// A live source's state changes (reconnecting, running).
        public var onStatus: @Sendable (LiveSource.Status) -> Void

        public init(
            stop: StopFlag, pool: FramePool, onStatus: @escaping @Sendable (LiveSource.Status) -> Void = { _ in }
        ) {
            self.stop = stop
            self.pool = pool
            self.onStatus = onStatus
        }
    }

    /// Drives `pipeline` with the frames of `frames`, read through a capture edge with `policy` (`.block` loses
    /// nothing). `shutdown` ends capture at once. `ticksWhenIdle`: a second without a frame moves media time on by
    /// the monotonic clock (a live camera that is down).
    public init(
        pipeline: Pipeline, frames: sending any FrameSource, policy: CaptureEdge.Policy = .block, capacity: Int = 2,
        pool: FramePool? = nil, shutdown: StopFlag? = nil, ticksWhenIdle: Bool = false, logger: Logger
    ) {
        self.pipeline = pipeline
        self.ticksWhenIdle = ticksWhenIdle
        self.logger = logger
        switch frames.unpaced {
        case let file as VideoFileSource: declared = (file.nominalFPS, file.declaredFrameCount)
        case let folder as ImageFolderSource: declared = (folder.fps, folder.files.count)
        default: declared = (15, nil)
        }
        edge = CaptureEdge(frames, capacity: capacity, policy: policy, pool: pool, shutdown: shutdown)
    }

    /// Opens the source and the pipeline a definition describes. `input` and `pace` override the pipeline's; `keys`
    /// default to the pipeline's pseudonym settings. `origin` places media time 0 on the wall clock; by default a
    /// recording starts at its file's modification time (so every replay gives the same dates) and a live source
    /// when it was opened. Without `capture` the edge loses nothing; with it (`sentinel run`) it drops the oldest
    /// frame when analysis is behind, but for a recording read as fast as possible, and a live source that cannot be
    /// opened yet is retried. A recording starts `from` that many seconds into it.
    public convenience init(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore,
        keys: PseudonymKeyRing? = nil, input: String? = nil, pace: Pacing? = nil,
        paceClock: any PaceClock = WallClock(), origin: Date? = nil, capture: Capture? = nil, from start: Double = 0,
        logger: Logger
    ) throws {
        var source = source
        if let input { source.resolvedInput = input }
        let spec = SourceSpec(source.resolvedInput)
        let pacing = pace ?? source.pace
        let opened = try spec.open(
            pacing: pacing, clock: paceClock, folderFPS: source.folderFPS, retryLive: capture != nil, from: start,
            logger: logger,
            onStatus: capture.map(\.onStatus) ?? { @Sendable _ in })
        let isLive: Bool = if case .live = spec { true } else { false }
        let lossless = capture == nil || (!isLive && pacing == .fastest)
        let originDate: Date =
            switch (origin, spec) {
            case (let origin?, _): origin
            // A recording's events are placed at its file time, so every replay gives the same dates.
            case (nil, .file(let path)), (nil, .folder(let path)):
                (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
                    ?? Date(timeIntervalSince1970: 0)
            case (nil, .live): Date()
            }
        let pipeline = try Pipeline.make(
            definition: definition, source: source, models: models,
            keys: try keys ?? PseudonymKeyRing(settings: definition.privacy.pseudonyms), origin: originDate)
        self.init(
            pipeline: pipeline, frames: opened, policy: lossless ? .block : .dropOldest,
            capacity: capture?.capacity ?? 2, pool: lossless ? nil : capture?.pool, shutdown: capture?.stop,
            ticksWhenIdle: capture != nil && isLive,
            logger: logger)
    }

    /// The source as the pipeline defines it (its input resolved), with its zones.
    public var source: PipelineDefinition.SourceDefinition { pipeline.source }

    /// Where media time 0 sits on the wall clock.
    public var origin: Date { pipeline.origin }

    /// Frames per second the source declares (a folder's configured rate; 15 assumed for a camera), for
    /// writing review video.
    public var nominalFPS: Double { declared.fps }

    /// The source as messages name it: its path, device or URL (credentials redacted).
    public var sourceName: String { edge.name }

    /// The frame count the container declares, for progress.
    public var expectedFrames: Int? { declared.frames }

    /// Runs to the end of the source (or until `stop` is set), then ends the open visits: `onStep` hears every
    /// frame, every tick of a silent source, and the end. If anything throws, the open visits still end (their
    /// events go to `onStep`) before the error is rethrown.
    ///
    /// Through a capture edge that ticks when idle, a source that delivers nothing for a second (a camera that is
    /// down) still moves media time on, by the monotonic clock from its last frame's capture: visits end as `lost` on
    /// time, not when the camera comes back.
    public func run(stop: StopFlag = StopFlag(), onStep: (Pipeline.Step) throws -> Void) throws {
        edge.start()
        defer {
            for note in edge.notes {
                logger.warning(
                    "\(note.message)",
                    metadata: note.details.merging(["source.id": source.id]) { $1 }.mapValues { .string($0) })
            }
        }
        func deliver(_ step: Pipeline.Step) throws {
            for event in step.events {
                logger.debug("visitor event", metadata: event.published.logMetadata.mapValues { .string($0) })
            }
            try onStep(step)
        }
        // With `detector.workers` above 1, frames are detected ahead on threads of their own, one OpenCV thread each.
        let detectors = pipeline.detectors
        let workers = detectors.count > 1 ? DetectionWorkers(detectors, name: source.id) : nil
        if workers != nil { OpenCVFaceDetector.useThreads(1) }
        defer { workers?.stop() }
        var feed = FramesAhead(edge, workers: workers)
        do {
            var last: (time: MediaTime, capturedAt: ContinuousClock.Instant)?
            frames: while !stop.isSet {
                switch try feed.next(idleAfter: ticksWhenIdle ? 1 : nil) {
                case .end:
                    break frames
                case .frame(let frame, let detected):
                    if let capturedAt = frame.capturedAt { last = (frame.time, capturedAt) }
                    try deliver(try pipeline.process(frame, detected: detected))
                case .idle:
                    guard let last else { continue }
                    try deliver(
                        try pipeline.idle(
                            at: last.time + MediaTime(seconds: (ContinuousClock.now - last.capturedAt).seconds)))
                }
            }
        } catch {
            edge.stop()
            if let end = try? pipeline.finish(stop.isSet ? .shutdown : .endOfStream) { try? deliver(end) }
            throw error
        }
        edge.stop()
        try deliver(try pipeline.finish(stop.isSet ? .shutdown : .endOfStream))
    }
}
