import Foundation
import Logging
import SentinelCore
import SentinelModels
import SentinelPrivacy
import SentinelVision
import SentinelVisitors

/// Drives one source through detection, tracking, zones and emotion, frame by frame, pulling frames (a
/// recording loses nothing). Events go to `onEvent` as they happen.
public final class SourceRunner {
    public let source: PipelineDefinition.SourceDefinition
    public let definition: PipelineDefinition
    private let detector: OpenCVFaceDetector
    private let classifier: FaceClassifier?
    private let frames: any FrameSource
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
        /// Visits not detected in this frame, where the tracker predicts them, and how long they have gone unseen.
        public var predicted: [(faceId: String, box: Box, unseenSeconds: Double)]
        /// Time spent detecting faces, and following them into visitors (with emotion), on this frame.
        public var timings: StageTimings

        /// The frame with each visit's id replaced by its pseudonym.
        public func masked(by mask: inout PrivacyMask) throws(PrivacyError) -> MaskedFrame {
            var faces: [MaskedFrame.Face] = []
            for (faceId, box) in observed { faces.append(.init(label: try mask.pseudonym(of: faceId), box: box, unseenSeconds: 0)) }
            for (faceId, box, unseen) in predicted { faces.append(.init(label: try mask.pseudonym(of: faceId), box: box, unseenSeconds: unseen)) }
            return MaskedFrame(index: index, time: time, image: image, detections: detections, faces: faces, timings: timings)
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

    /// Opens the source and loads the models. `input` and `pace` override the pipeline's. `origin` places media
    /// time 0 on the wall clock; by default a recording starts at its file's modification time (so every replay
    /// gives the same dates) and a live source when it was opened.
    public init(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore, input: String? = nil,
        pace: Pacing? = nil, origin: Date? = nil, logger: Logger
    ) throws {
        self.definition = definition
        var source = source
        if let input { source.resolvedInput = input }
        self.source = source
        self.logger = logger
        do {
            let detectorPath = try models.path(of: definition.detectorModel ?? definition.detector.defaultModel)
            detector = try OpenCVFaceDetector(kind: definition.detector, modelPath: detectorPath, settings: definition.detectorSettings)
            classifier = definition.emotionEnabled
                ? try FaceClassifier(modelPath: try models.path(of: definition.emotionModel), format: .miniXception, labels: Emotion.allCases.map(\.rawValue))
                : nil
        } catch let error as ModelError {
            throw VisionError(.model, error.message)
        }
        let spec = SourceSpec(source.resolvedInput)
        frames = try spec.open(pacing: pace ?? source.pace, folderFPS: source.folderFPS, logger: logger)
        switch (origin, spec) {
        case (let origin?, _):
            self.origin = origin
        case (nil, .file(let path)), (nil, .folder(let path)):
            // A recording's events are placed at its file time, so every replay gives the same dates.
            self.origin = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? Date(timeIntervalSince1970: 0)
        case (nil, .live):
            self.origin = Date()
        }
    }

    /// Frames per second the source declares (a folder's configured rate; 15 assumed for a camera), for
    /// writing review video.
    public var nominalFPS: Double {
        switch frames.unpaced {
        case let file as VideoFileSource: file.nominalFPS
        case is ImageFolderSource: source.folderFPS
        default: 15
        }
    }

    /// The source as messages name it: its path, device or URL (credentials redacted).
    public var sourceName: String { frames.name }

    /// The frame count the container declares, for progress.
    public var expectedFrames: Int? {
        (frames.unpaced as? VideoFileSource)?.declaredFrameCount
    }

    /// Runs to the end of the source (or until `shouldStop` says so), then ends the open visits. Every event
    /// passes `mask` first; `onEvent` gets each output's copy, `onFrame` the frame with pseudonymous labels.
    public func run(
        mask: inout PrivacyMask, onEvent: ([PrivacyPolicy.Output: MaskedEvent]) throws -> Void,
        onFrame: ((MaskedFrame) throws -> Void)? = nil, shouldStop: () -> Bool = { false }
    ) throws {
        try evaluate(
            onEvent: { event in
                let masked = try mask.mask(event)
                if let published = masked[.events] { logger.debug("visitor event", metadata: published.logMetadata.mapValues { .string($0) }) }
                try onEvent(masked)
            },
            onFrame: { frame in try onFrame?(frame.masked(by: &mask)) }, shouldStop: shouldStop)
    }

    /// The same run with internal ids and unmasked events, for scoring against ground truth in-process. Nothing
    /// it yields may be published.
    public func evaluate(
        onEvent: (VisitorEvent) throws -> Void, onFrame: (FrameResult) throws -> Void = { _ in }, shouldStop: () -> Bool = { false }
    ) throws {
        var stage: VisitorStage?
        while !shouldStop(), let frame = try frames.next() {
            if stage == nil {
                let zones = source.zones.map { $0.definition(width: frame.image.width, height: frame.image.height) }
                stage = VisitorStage(sourceID: source.id, origin: origin, zones: zones, settings: definition.visitors)
            }
            let clock = ContinuousClock()
            let start = clock.now
            let detections = try detector.detect(frame.image)
            let detected = clock.now
            let classifier = classifier
            let result = try stage!.process(time: frame.time, detections: detections) { box in
                try classifier?.classify(frame.image, face: box)
            }
            let timings = StageTimings(detect: detected - start, visitors: clock.now - detected)
            for event in result.events { try onEvent(event) }
            try onFrame(
                FrameResult(
                    index: frame.index, time: frame.time, image: frame.image, detections: detections.map(\.box),
                    observed: result.observed, predicted: result.predicted, timings: timings))
        }
        if let file = frames.unpaced as? VideoFileSource, let reason = file.endReason {
            logger.warning("source ended early", metadata: ["source.id": "\(source.id)", "reason": "\(reason)"])
        }
        for event in stage?.finish(reason: shouldStop() ? "shutdown" : "endOfStream") ?? [] { try onEvent(event) }
    }
}
