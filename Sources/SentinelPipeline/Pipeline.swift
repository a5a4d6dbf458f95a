public import Foundation
public import SentinelConfig
public import SentinelCore
public import SentinelModels
public import SentinelPrivacy
public import SentinelVision
public import SentinelVisitors
public import SentinelWire

/// One source's analysis, frame by frame: detector, then visitor stage (tracking, zones, emotion), then the privacy
/// mask. Every entry point drives this one value through a `SourceRunner`: `sentinel run` per source, `replay`,
/// `eval`, the benches and the tests, so they all produce the same events from the same frames.
///
/// What comes out has passed the mask: events as each output may see them, and each frame with pseudonymous labels.
/// The gauge comes after it (`SentimentGauge`, fed the published events and the steps' dates), one per box since it
/// spans every camera. The detector and the classifier are injected: the loop runs under test with scripted
/// detections and no model.
public struct Pipeline {

    public let source: PipelineDefinition.SourceDefinition
    /// Where media time 0 sits on the wall clock.
    public let origin: Date
    private let detector: any FaceDetector
    /// More detectors like `detector`, for `detector.workers` above 1: with it, one per worker (`SourceRunner`).
    let moreDetectors: [any FaceDetector]
    /// The search for faces the edges cut runs on this thread, while workers may be detecting frames ahead with
    /// `detector`: a detector of its own (an OpenCV network is used by one thread at a time).
    private let edgeDetector: any FaceDetector
    private let emotion: EmotionReader?
    private let settings: VisitorSettings
    /// The detector's score: detections below it (reported for the masks, see `detector(_:from:)`) are no visitors.
    private let scoreThreshold: Double
    /// Which frames are detected, and where, under `detector.maxFps`.
    private var gate: MotionGate
    private var mask: PrivacyMask
    /// Made on the first frame, once the zones can be placed on its size.
    private var stage: VisitorStage?
    private var lastTime = MediaTime.zero
    /// The opening of the source the last frame came from (`Frame.opening`).
    private var opening = 0
    /// Every face the detector last reported, visitor or not, where it has not looked since: masked on the frames
    /// between (carried, or detected only in squares elsewhere), as a followed visitor is masked where predicted.
    private var reported: [(box: Box, time: MediaTime)] = []
    /// Faces the frame's edges cut, from the last search (`FaceDetector.detectAtEdges`), masked until the next: at most
    /// every `edgeSearchSeconds` of media time, on every frame the gate detects or not (someone waiting half in view,
    /// holding still, changes nothing the gate would see), from the first frame on, unless the edge band has settled
    /// (`ForegroundWatch.bandSettled`: learned, nothing there).
    private var edgeFaces: [(box: Box, time: MediaTime)] = []
    private var lastEdgeSearch: MediaTime?
    /// The margin mirrored onto each side for it, as a fraction of the frame's shorter side (`privacy.review.edgeBand`:
    /// half a face up to twice as tall in view; 0: no search).
    private let edgeMargin: Double
    static let edgeSearchSeconds = 0.25
    /// How faces are masked in the frames shown to people, and where beyond the faces found (`ForegroundWatch`).
    private let masks: FaceMasks
    private var foreground: ForegroundWatch

    /// A frame's faces as a detection worker found them ahead of the pipeline, and the time its detector took: the
    /// detect stage's time, wherever it ran.
    public struct Detected: Sendable {
        public var faces: [Detection]
        public var took: Duration
    }

    /// What one step produced: a frame analysed or carried, a tick of a silent source, or the end.
    public struct Step {
        /// Media time of the step.
        public var time: MediaTime
        /// `time` on the wall clock: what the gauge is ticked with.
        public var date: Date
        /// The frame, with pseudonymous labels; nil for a tick without a frame and for the end.
        public var frame: MaskedFrame?
        /// Visitor events, each as every output may see it, in order.
        public var events: [Masked]
    }

    public init(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, detector: any FaceDetector,
        emotion: EmotionReader?, keys: PseudonymKeyRing, origin: Date, moreDetectors: [any FaceDetector] = [],
        edgeDetector: (any FaceDetector)? = nil
    ) {
        self.source = source
        self.origin = origin
        self.detector = detector
        self.moreDetectors = moreDetectors
        self.edgeDetector = edgeDetector ?? detector
        self.emotion = emotion
        settings = definition.visitors
        scoreThreshold = definition.detectorSettings.scoreThreshold
        gate = MotionGate(maxFPS: definition.detection.maxFps, gated: definition.detection.onChange)
        mask = PrivacyMask(policy: definition.privacy, keys: keys)
        masks = FaceMasks(settings: definition.privacy.review)
        foreground = ForegroundWatch(settings: definition.privacy.review)
        edgeMargin = definition.privacy.review.edgeBand
    }

    /// The pipeline a definition describes, with its OpenCV detector and emotion model from `models`. Throws a
    /// `ModelError` for a model that is not there, a `VisionError` for one OpenCV cannot load.
    public static func make(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore,
        keys: PseudonymKeyRing, origin: Date
    ) throws -> Pipeline {
        let (detector, emotion) = try Self.models(definition, from: models)
        // Workers detect consecutive frames, so only when every frame is detected: under a cadence, whether a frame
        // is detected depends on what the tracker made of the one before.
        let workers = definition.detection.maxFps > 0 ? 1 : definition.detection.resolvedWorkers()
        let moreDetectors = try (1..<max(workers, 1)).map { _ in try Self.detector(definition, from: models) }
        let edgeDetector = definition.privacy.review.edgeBand > 0 ? try Self.detector(definition, from: models) : nil
        return Pipeline(
            definition: definition, source: source, detector: detector, emotion: emotion, keys: keys,
            origin: origin, moreDetectors: moreDetectors, edgeDetector: edgeDetector)
    }

    /// Every detector, for workers detecting frames ahead (`SourceRunner`); the pipeline then detects nothing itself.
    var detectors: [any FaceDetector] { [detector] + moreDetectors }

    /// The detector a definition names, and its emotion reader when emotion is on. Throws a `ModelError` for a model
    /// that is not there (or not a classifier), a `VisionError` for one OpenCV cannot load.
    public static func models(_ definition: PipelineDefinition, from models: ModelStore) throws -> (
        detector: OpenCVFaceDetector, emotion: EmotionReader?
    ) {
        let detector = try Self.detector(definition, from: models)
        guard definition.emotionEnabled else { return (detector, nil) }
        return (detector, try EmotionReader.make(definition, from: models))
    }

    /// The detector a definition names, reporting faces down to `privacy.review.scoreRatio` of its score for the
    /// masks; `process` gives the tracker only those at the score (no greedy suppression lets a weaker box remove a
    /// stronger one, so those are the same as the detector's at the score alone).
    public static func detector(_ definition: PipelineDefinition, from models: ModelStore) throws -> OpenCVFaceDetector
    {
        var settings = definition.detectorSettings
        settings.scoreThreshold *= definition.privacy.review.scoreRatio
        return try OpenCVFaceDetector(
            kind: definition.detection.kind,
            modelPath: try models.path(of: definition.resolvedDetectorModel),
            settings: settings)
    }

    /// Detects faces in `frame` (or, between two detections of the cadence, carries the visitors the tracker
    /// follows), follows them into visitors and masks what that produced. `detected`: the frame's detections, made
    /// by a worker ahead of it (every frame detected), and the time they took there.
    public mutating func process(_ frame: Frame, detected: Detected? = nil) throws -> Step {
        lastTime = frame.time
        let detectedAhead = detected?.took ?? .zero
        // Made at the first frame (zones in pixels need its size); taken out while it works, so it is not copied.
        var stage =
            self.stage.take()
            ?? VisitorStage(
                sourceID: source.id, origin: origin,
                zones: source.zones.map { $0.definition(width: frame.image.width, height: frame.image.height) },
                settings: settings)
        defer { self.stage = stage }
        // A camera reopened after it stopped delivering: nobody knows who came or went meanwhile, so every open
        // visit ends when it was last seen, a face after the gap is a new visit, and the first frame is detected whole.
        var ended: [Masked] = []
        let reopened = frame.opening != opening
        if reopened {
            opening = frame.opening
            ended = try masked(stage.finish(reason: .lost))
        }
        let clock = ContinuousClock()
        let start = clock.now
        try searchEdges(frame)
        let searched = clock.now - start
        let plan: MotionGate.Plan
        if detected != nil || reopened {
            plan = .whole
        } else {
            plan = try gate.plan(
                frame, unsure: stage.unsure(time: frame.time), followed: stage.followed(time: frame.time),
                regionSide: detector.regionSide(width: frame.image.width, height: frame.image.height))
        }
        let detections: [Detection]
        switch plan {
        case .none:
            let carried = stage.carry(time: frame.time)
            let timings = StageTimings(
                detect: searched, visitors: clock.now - start - searched, emotion: 0, readings: 0, refused: [],
                unread: [], regions: 0)
            return try step(frame, carried, detections: [], timings: timings, analysed: false, events: ended)
        case .whole:
            detections = try detected?.faces ?? detector.detect(frame.image)
            reported = []
        case .regions(let regions):
            detections = try detector.detect(frame.image, in: regions)
            // A square that holds a face's centre has looked at it again.
            reported.removeAll { face in
                let centre = face.box.center
                return regions.contains {
                    centre.x >= $0.x && centre.x <= $0.maxX && centre.y >= $0.y && centre.y <= $0.maxY
                }
            }
        }
        let detected = clock.now
        let emotion = emotion
        let faces = detections.filter { $0.score >= scoreThreshold }
        var reading = (cpu: 0.0, count: 0)
        var refused: [String] = []
        var unread: [EmotionSettings.Unreadable] = []
        let image = frame.image
        let emotionSettings = settings.emotion
        let result = try stage.process(time: frame.time, detections: faces) { face in
            guard let emotion else { return nil }
            let before = threadCPUSeconds()
            if let why = try emotionSettings.unreadable(
                face, width: Double(image.width), height: Double(image.height),
                sharpness: { () throws(VisionError) in try emotion.classifier.sharpness(image, face: face) })
            {
                unread.append(why)
                return nil
            }
            defer { reading = (reading.cpu + threadCPUSeconds() - before, reading.count + 1) }
            do { return try emotion.read(frame.image, face: face) } catch let error as VisionError
                where error.code == .refusedOutput
            {
                refused.append(error.message)
                return nil
            }
        }
        var regions = 0
        if case .regions(let squares) = plan { regions = squares.count }
        let timings = StageTimings(
            detect: detected - start + detectedAhead, visitors: clock.now - detected, emotion: reading.cpu,
            readings: reading.count,
            refused: refused, unread: unread, regions: regions)
        let step = try step(
            frame, result, detections: detections.map(\.box), timings: timings, analysed: true,
            events: try ended + masked(result.events))
        reported += detections.map { ($0.box, frame.time) }
        return step
    }

    /// Looks for faces the frame's edges cut when a search is due (masks only: detection, tracking and emotion read
    /// the frame as it is).
    private mutating func searchEdges(_ frame: Frame) throws(VisionError) {
        if foreground.bandSettled { edgeFaces = [] }
        guard edgeMargin > 0, !foreground.bandSettled,
            lastEdgeSearch.map({ (frame.time - $0).seconds >= Self.edgeSearchSeconds - 1e-9 || frame.time < $0 })
                ?? true
        else { return }
        lastEdgeSearch = frame.time
        let margin = Int((edgeMargin * Double(min(frame.image.width, frame.image.height))).rounded(.up))
        edgeFaces = try edgeDetector.detectAtEdges(frame.image, margin: margin).map { ($0.box, frame.time) }
    }

    /// A source that delivered nothing until `time` (a camera that is down): visits unseen for too long end on time.
    public mutating func idle(at time: MediaTime) throws(PrivacyError) -> Step {
        guard var stage else { return Step(time: time, date: date(time), frame: nil, events: []) }
        lastTime = time
        let events = stage.process(time: time, detections: [], classify: { _ in nil }).events
        self.stage = stage
        return Step(time: time, date: date(time), frame: nil, events: try masked(events))
    }

    /// Ends every open visit, at the last frame's time, with `reason`.
    public mutating func finish(_ reason: ExitReason) throws(PrivacyError) -> Step {
        let events = stage?.finish(reason: reason) ?? []
        stage = nil
        return Step(time: lastTime, date: date(lastTime), frame: nil, events: try masked(events))
    }

    private mutating func masked(_ events: [VisitorEvent]) throws(PrivacyError) -> [Masked] {
        var masked: [Masked] = []
        for event in events { masked.append(try mask.mask(event)) }
        return masked
    }

    private func date(_ time: MediaTime) -> Date { origin.addingTimeInterval(time.seconds) }

    private mutating func step(
        _ frame: Frame, _ output: VisitorStage.FrameOutput, detections: [Box], timings: StageTimings, analysed: Bool,
        events: [Masked]
    ) throws(VisionError) -> Step {
        func label(_ faceId: String) -> String {
            // A pseudonym is an HMAC of an id the stage made: only a broken key ring fails, and masking the events
            // of the same visits would have thrown first.
            (try? mask.pseudonym(of: faceId)) ?? "?"
        }
        var faces = output.observed.map { MaskedFrame.Face(label: label($0.faceId), box: $0.box, unseenSeconds: 0) }
        faces += output.predicted.map {
            MaskedFrame.Face(label: label($0.faceId), box: $0.box, unseenSeconds: $0.unseenSeconds)
        }
        let tracked = (output.observed + output.carried).map { (label: label($0.faceId), box: $0.box) }
        func unlabelled(_ found: [(box: Box, time: MediaTime)]) -> [MaskedFrame.Face] {
            found.map { MaskedFrame.Face(label: nil, box: $0.box, unseenSeconds: (frame.time - $0.time).seconds) }
        }
        let seen =
            (detections + edgeFaces.map(\.box)).map { masks.grown($0) } + output.observed.map { masks.grown($0.box) }
        let masked = MaskedFrame(
            index: frame.index, time: frame.time, image: frame.image, detections: detections,
            faces: faces + unlabelled(reported), edgeFaces: unlabelled(edgeFaces),
            uncertain: try foreground.regions(frame, seen: seen),
            tracked: tracked, notes: output.notes.map { ($0.faceId.map(label), $0.note) },
            read: output.read.map { (label($0.faceId), $0.box) },
            confirming: output.confirming.flatMap { visit in
                visit.seen.map { (label: label(visit.faceId), time: $0.time, box: $0.box) }
            }, timings: timings,
            analysed: analysed, capturedAt: frame.capturedAt)
        return Step(time: frame.time, date: date(frame.time), frame: masked, events: events)
    }
}

/// What one frame produced, for a review video and for scoring: pseudonymous labels only.
public struct MaskedFrame {
    public var index: Int
    public var time: MediaTime
    public var image: Image
    /// Every face the detector reported, down to `privacy.review.scoreRatio` of its score, visitor or not (empty on a
    /// frame between two detections).
    public var detections: [Box]
    /// Where faces must be masked beside `detections`: the visitors seen, where the tracker predicts those it did not
    /// see, and the faces reported earlier that no detection has looked at since.
    public var faces: [Face]
    /// Faces the frame's edges cut, found in it mirrored at its edges (masks only), at the last search.
    public var edgeFaces: [Face]
    /// Where a face may be that no detection found, masked as they are (`ForegroundWatch`): what moved in at the
    /// frame's edges, and what still differs from the empty scene under the masks of faces seen a moment ago.
    public var uncertain: [Box]
    /// Where the pipeline places each visitor in this frame: detected, or carried between two detections. This is
    /// what accuracy is scored on, every frame alike.
    public var tracked: [(label: String, box: Box)]
    /// Under `VisitorSettings.trace`: why the tracker did what it did, by visit label (nil: a track not yet a visit).
    public var notes: [(label: String?, note: TrackerNote)]
    /// The visitors whose face was read for emotion in this frame, where: the faces an operator collects to label
    /// (`replay --faces`).
    public var read: [(label: String, box: Box)]
    /// The visitors confirmed in this frame, where they were seen in earlier frames (by media time) before: the
    /// frames that confirmed them, which `tracked` held no label for then.
    public var confirming: [(label: String, time: MediaTime, box: Box)]
    public var timings: StageTimings
    /// False for a frame between two detections (the cadence): the tracker only carried the visitors.
    public var analysed: Bool
    /// When the capture edge received the frame.
    public var capturedAt: ContinuousClock.Instant?

    /// A face to mask: a followed visitor, seen in this frame or predicted after `unseenSeconds` without a
    /// detection; or, without a label, a face the detector reported `unseenSeconds` ago and has not looked at since
    /// (no visitor, or not yet one), where it was.
    public struct Face {
        public var label: String?
        public var box: Box
        public var unseenSeconds: Double
        public var predicted: Bool { unseenSeconds > 0 }
    }
}

/// Time a frame spent in each stage.
public struct StageTimings: Sendable {
    public var detect: Duration
    /// Tracking, zones and emotion: everything after detection.
    public var visitors: Duration
    /// CPU seconds of this thread in the emotion readings (part of `visitors`), and how many.
    public var emotion: Double
    public var readings: Int
    /// Readings refused because the model's output was no reading (`VisionError.Code.refusedOutput`), each why: no
    /// emotion is taken from them, and the service logs and counts them.
    public var refused: [String]
    /// Faces due a reading that were not read, each why (small, cut, turned, blurred...): counted, never read.
    public var unread: [EmotionSettings.Unreadable]
    /// Regions detected instead of the whole frame (0: the whole frame, or none).
    public var regions: Int
}

/// CPU seconds the calling thread has used: a cost measured apart from the other threads' work and from waiting.
func threadCPUSeconds() -> Double {
    var now = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now)
    return Double(now.tv_sec) + Double(now.tv_nsec) / 1e9
}
