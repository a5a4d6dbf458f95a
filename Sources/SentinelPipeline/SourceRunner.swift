import Foundation
import Logging
import SentinelCore
import SentinelModels
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

    /// What one frame produced, for evaluation: the visits seen and their boxes (never published).
    public struct FrameResult {
        public var index: Int
        public var time: MediaTime
        public var observed: [(faceId: String, box: Box)]
    }

    /// Opens the source and loads the models. `input` and `pace` override the pipeline's.
    public init(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore, input: String? = nil,
        pace: Pacing? = nil, logger: Logger
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
        switch spec {
        case .file(let path), .folder(let path):
            // A recording's events are placed at its file time, so every replay gives the same dates.
            origin = (try? FileManager.default.attributesOfItem(atPath: path)[.modificationDate] as? Date) ?? Date(timeIntervalSince1970: 0)
        case .live:
            origin = Date()
        }
    }

    /// The frame count the container declares, for progress.
    public var expectedFrames: Int? {
        (frames.unpaced as? VideoFileSource)?.declaredFrameCount
    }

    /// Runs to the end of the source (or until `shouldStop` says so), then ends the open visits.
    public func run(
        onEvent: (VisitorEvent) throws -> Void, onFrame: ((FrameResult) -> Void)? = nil, shouldStop: () -> Bool = { false }
    ) throws {
        var stage: VisitorStage?
        while !shouldStop(), let frame = try frames.next() {
            if stage == nil {
                let zones = source.zones.map { $0.definition(width: frame.image.width, height: frame.image.height) }
                stage = VisitorStage(sourceID: source.id, origin: origin, zones: zones, settings: definition.visitors)
            }
            let detections = try detector.detect(frame.image)
            let classifier = classifier
            let result = try stage!.process(time: frame.time, detections: detections) { box in
                try classifier?.classify(frame.image, face: box)
            }
            for event in result.events { try onEvent(event) }
            onFrame?(FrameResult(index: frame.index, time: frame.time, observed: result.observed))
        }
        if let file = frames.unpaced as? VideoFileSource, let reason = file.endReason {
            logger.warning("source ended early", metadata: ["source.id": "\(source.id)", "reason": "\(reason)"])
        }
        for event in stage?.finish(reason: shouldStop() ? "shutdown" : "endOfStream") ?? [] { try onEvent(event) }
    }
}
