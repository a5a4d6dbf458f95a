import Foundation
import Logging
import SentinelCore
import SentinelModels
import SentinelPrivacy
import SentinelVision
import SentinelVisitors

/// Drives one source through detection, tracking, zones and emotion, frame by frame. Events go to `onEvent` as they
/// happen.
///
/// Frames are read on a thread of their own through a `CaptureEdge`, so decoding overlaps analysis. Its policy is the
/// boundary's: `replay` and `eval` lose nothing (the reader waits for analysis); under `sentinel run` a camera or a
/// recording played at a pace never waits for analysis (the oldest waiting frame is dropped, and counted). With
/// `detector.maxFps`, frames between two detections are not analysed: the tracker carries the visitors across them,
/// the same way in replay and in run, by media time.
public final class SourceRunner {
    public let source: PipelineDefinition.SourceDefinition
    public let definition: PipelineDefinition
    private let detector: OpenCVFaceDetector
    private let classifier: FaceClassifier?
    /// Where every frame comes from. The source behind it belongs to the edge's capture thread.
    public let edge: CaptureEdge
    /// What the source declared when it was opened.
    private let declared: (fps: Double, frames: Int?, file: VideoFileSource?)
    /// Whether a silent source moves media time on by the clock: a live camera under `sentinel run`.
    private let ticksWhenIdle: Bool
    private let logger: Logger
    /// Where media time 0 sits on the wall clock.
    public let origin: Date

    /// What one frame produced, by internal visit id: for evaluation only, never published.
    public struct FrameResult {
        public var index: Int
        public var time: MediaTime
        public var image: Image
        /// Every face the detector reported, visitor or not yet.
        public var detections: [Box]
        public var observed: [(faceId: String, box: Box)]
        /// On a frame between two detections (the cadence): the visits the tracker carries, where it puts them.
        public var carried: [(faceId: String, box: Box)]
        /// Visits not detected in this frame, where the tracker predicts them, and how long they have gone unseen.
        public var predicted: [(faceId: String, box: Box, unseenSeconds: Double)]
        /// Time spent detecting faces, and following them into visitors (with emotion), on this frame.
        public var timings: StageTimings
        /// False for a frame between two detections (the cadence): the tracker only carried the visitors.
        public var analysed: Bool
        /// When the capture edge received the frame.
        public var capturedAt: ContinuousClock.Instant?

        /// Where the pipeline places each visit in this frame: detected, or carried between two detections. This is
        /// what accuracy is scored on, every frame alike.
        public var tracked: [(faceId: String, box: Box)] { observed + carried }

        /// The frame with each visit's id replaced by its pseudonym.
        public func masked(by mask: inout PrivacyMask) throws(PrivacyError) -> MaskedFrame {
            var faces: [MaskedFrame.Face] = []
            for (faceId, box) in observed {
                faces.append(.init(label: try mask.pseudonym(of: faceId), box: box, unseenSeconds: 0))
            }
            for (faceId, box, unseen) in predicted {
                faces.append(.init(label: try mask.pseudonym(of: faceId), box: box, unseenSeconds: unseen))
            }
            return MaskedFrame(
                index: index, time: time, image: image, detections: detections, faces: faces, timings: timings,
                analysed: analysed,
                capturedAt: capturedAt)
        }
    }

    /// What one frame produced, for a review video: pseudonymous labels only.
    public struct MaskedFrame {
        public var index: Int
        public var time: MediaTime
        public var image: Image
        public var detections: [Box]
        public var faces: [Face]
        public var timings: StageTimings
        public var analysed: Bool
        public var capturedAt: ContinuousClock.Instant?

        /// A followed visitor: seen in this frame, or predicted after `unseenSeconds` without a detection.
        public struct Face {
            public var label: String
            public var box: Box
            public var unseenSeconds: Double
            public var predicted: Bool { unseenSeconds > 0 }
        }
    }

    /// Seconds a frame spent in each stage.
    public struct StageTimings: Sendable {
        public var detect: Duration
        public var visitors: Duration
    }

    /// How `sentinel run` takes frames: through a capture edge, a live source retried from the start.
    public struct Capture: Sendable {
        /// Frames waiting for analysis at most.
        public var capacity = 2
        /// Ends capture and the run.
        public var stop: StopFlag
        /// A live source's state changes (reconnecting, running).
        public var onStatus: @Sendable (LiveSource.Status) -> Void

        public init(stop: StopFlag, onStatus: @escaping @Sendable (LiveSource.Status) -> Void = { _ in }) {
            self.stop = stop
            self.onStatus = onStatus
        }
    }

    /// Opens the source and loads the models. `input` and `pace` override the pipeline's. `origin` places media
    /// time 0 on the wall clock; by default a recording starts at its file's modification time (so every replay
    /// gives the same dates) and a live source when it was opened. Frames always come through a capture edge: without
    /// `capture` it loses nothing; with it (`sentinel run`) it drops the oldest frame when analysis is behind, but for a
    /// recording read as fast as possible, and a live source that cannot be opened yet is retried.
    public init(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore,
        input: String? = nil,
        pace: Pacing? = nil, paceClock: any PaceClock = WallClock(), origin: Date? = nil, capture: Capture? = nil,
        logger: Logger
    ) throws {
        self.definition = definition
        var source = source
        if let input { source.resolvedInput = input }
        self.source = source
        self.logger = logger
        do {
            let detectorPath = try models.path(of: definition.detectorModel ?? definition.detector.defaultModel)
            detector = try OpenCVFaceDetector(
                kind: definition.detector, modelPath: detectorPath, settings: definition.detectorSettings)
            classifier =
                definition.emotionEnabled
                ? try FaceClassifier(
                    modelPath: try models.path(of: definition.emotionModel), format: .miniXception,
                    labels: Emotion.allCases.map(\.rawValue))
                : nil
        } catch let error as ModelError {
            throw VisionError(.model, error.message)
        }
        let spec = SourceSpec(source.resolvedInput)
        let pacing = pace ?? source.pace
        var onStatus: @Sendable (LiveSource.Status) -> Void = { _ in }
        if let capture { onStatus = capture.onStatus }
        let opened = try spec.open(
            pacing: pacing, clock: paceClock, folderFPS: source.folderFPS, retryLive: capture != nil, logger: logger,
            onStatus: onStatus)
        let isLive: Bool = if case .live = spec { true } else { false }
        let lossless = capture == nil || (!isLive && pacing == .fastest)
        edge = CaptureEdge(
            opened, capacity: capture?.capacity ?? 2, policy: lossless ? .block : .dropOldest, shutdown: capture?.stop)
        ticksWhenIdle = capture != nil && isLive
        switch opened.unpaced {
        case let file as VideoFileSource: declared = (file.nominalFPS, file.declaredFrameCount, file)
        case is ImageFolderSource: declared = (source.folderFPS, nil, nil)
        default: declared = (15, nil, nil)
        }
        switch (origin, spec) {
        case (let origin?, _):
            self.origin = origin
        case (nil, .file(let path)), (nil, .folder(let path)):
            // A recording's events are placed at its file time, so every replay gives the same dates.
            self.origin =
                (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date)
                ?? Date(timeIntervalSince1970: 0)
        case (nil, .live):
            self.origin = Date()
        }
    }

    /// Frames per second the source declares (a folder's configured rate; 15 assumed for a camera), for
    /// writing review video.
    public var nominalFPS: Double { declared.fps }

    /// The source as messages name it: its path, device or URL (credentials redacted).
    public var sourceName: String { edge.name }

    /// The frame count the container declares, for progress.
    public var expectedFrames: Int? { declared.frames }

    /// Runs to the end of the source (or until `shouldStop` says so), then ends the open visits. Every event
    /// passes `mask` first; `onEvent` gets each output's copy, `onFrame` the frame with pseudonymous labels.
    public func run(
        mask: inout PrivacyMask, onEvent: ([PrivacyPolicy.Output: MaskedEvent]) throws -> Void,
        onFrame: ((MaskedFrame) throws -> Void)? = nil, onIdle: (MediaTime) throws -> Void = { _ in },
        stop: StopFlag = StopFlag()
    ) throws {
        try evaluate(
            onEvent: { event in
                let masked = try mask.mask(event)
                if let published = masked[.events] {
                    logger.debug("visitor event", metadata: published.logMetadata.mapValues { .string($0) })
                }
                try onEvent(masked)
            },
            onFrame: { frame in try onFrame?(frame.masked(by: &mask)) }, onIdle: onIdle, stop: stop)
    }

    /// The same run with internal ids and unmasked events, for scoring against ground truth in-process. Nothing
    /// it yields may be published.
    ///
    /// Through a capture edge, a source that delivers nothing for a second (a camera that is down) still moves media
    /// time on, by the monotonic clock from its last frame's capture: visits end as `lost` on time, not when the
    /// camera comes back; `onIdle` hears each such tick.
    public func evaluate(
        onEvent: (VisitorEvent) throws -> Void, onFrame: (FrameResult) throws -> Void = { _ in },
        onIdle: (MediaTime) throws -> Void = { _ in }, stop: StopFlag = StopFlag()
    ) throws {
        var stage: VisitorStage?
        var cadence = DetectionCadence(maxFPS: definition.detectionMaxFPS)
        edge.start()
        // Every exit path ends the open visits: a stage that throws must not leave visitors present forever.
        defer {
            // Read once the edge has ended: the capture thread no longer touches the file.
            if let file = declared.file, let reason = file.endReason {
                logger.warning("source ended early", metadata: ["source.id": "\(source.id)", "reason": "\(reason)"])
            }
            if let file = declared.file, file.repairedTimestamps > 0 {
                logger.warning(
                    "unusable container timestamps replaced by the nominal frame rate",
                    metadata: ["source.id": "\(source.id)", "frames": "\(file.repairedTimestamps)"])
            }
        }
        do {
            var last: (time: MediaTime, capturedAt: ContinuousClock.Instant)?
            frames: while !stop.isSet {
                let frame: Frame
                switch try edge.next(idleAfter: ticksWhenIdle ? 1 : nil) {
                case .end: break frames
                case .frame(let taken): frame = taken
                case .idle:
                    guard let last, stage != nil else { continue }
                    let time = last.time + MediaTime(seconds: (ContinuousClock.now - last.capturedAt).seconds)
                    for event in stage!.process(time: time, detections: [], classify: { _ in nil }).events {
                        try onEvent(event)
                    }
                    try onIdle(time)
                    continue
                }
                if let capturedAt = frame.capturedAt { last = (frame.time, capturedAt) }
                if stage == nil {
                    let zones = source.zones.map { $0.definition(width: frame.image.width, height: frame.image.height) }
                    stage = VisitorStage(
                        sourceID: source.id, origin: origin, zones: zones, settings: definition.visitors)
                }
                let clock = ContinuousClock()
                let start = clock.now
                guard cadence.admits(frame.time, unsure: stage!.needsDetection) else {
                    let carried = stage!.carry(time: frame.time)
                    try onFrame(
                        FrameResult(
                            index: frame.index, time: frame.time, image: frame.image, detections: [], observed: [],
                            carried: carried.carried, predicted: carried.predicted,
                            timings: StageTimings(detect: .zero, visitors: clock.now - start),
                            analysed: false, capturedAt: frame.capturedAt))
                    continue
                }
                let detections = try detector.detect(frame.image)
                let detected = clock.now
                let classifier = classifier
                let result = try stage!.process(time: frame.time, detections: detections) { box in
                    try classifier?.classify(frame.image, face: box)
                }
                let timings = StageTimings(detect: detected - start, visitors: clock.now - detected)
                // The frame first, then what it produced: a consumer knows which frame (and capture time) the events
                // come from.
                try onFrame(
                    FrameResult(
                        index: frame.index, time: frame.time, image: frame.image, detections: detections.map(\.box),
                        observed: result.observed, carried: [], predicted: result.predicted, timings: timings,
                        analysed: true,
                        capturedAt: frame.capturedAt))
                for event in result.events { try onEvent(event) }
            }
        } catch {
            edge.stop()
            for event in stage?.finish(reason: stop.isSet ? .shutdown : .endOfStream) ?? [] { try? onEvent(event) }
            throw error
        }
        edge.stop()
        for event in stage?.finish(reason: stop.isSet ? .shutdown : .endOfStream) ?? [] { try onEvent(event) }
    }
}

/// Which frames get a detection under `detector.maxFps`: at most `maxFPS` per second of media time, evenly spread,
/// decided by media time alone so that a replay at any pace and a live run pick alike.
struct DetectionCadence {
    let interval: MediaTime?
    private var due: MediaTime?

    init(maxFPS: Double) { interval = maxFPS > 0 ? MediaTime(seconds: 1 / maxFPS) : nil }

    /// `unsure`: the tracker needs this frame detected (see `VisitorStage.needsDetection`); it is, and the schedule
    /// goes on from it.
    mutating func admits(_ time: MediaTime, unsure: Bool = false) -> Bool {
        guard let interval else { return true }
        if unsure {
            due = time + interval
            return true
        }
        // Half a millisecond of slack: container timestamps are rounded.
        if let due, time + MediaTime(microseconds: 500) < due { return false }
        // On schedule, or restarted after a gap (a reconnect) so that a burst cannot follow.
        due = due.map { $0 + interval > time ? $0 + interval : time + interval } ?? time + interval
        return true
    }
}
