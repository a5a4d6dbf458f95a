public import Foundation
public import Logging
public import SentinelConfig
public import SentinelCore
public import SentinelModels
import SentinelPipeline
public import SentinelVision
public import SentinelWire

/// What the detector (and the emotion model) made of every frame of a recording, once: a sweep then varies the
/// tracker, zone, emotion and event settings over it without decoding or detecting again. Under a motion-gated cadence
/// a trial's detections of regions are the whole frame's faces inside them: close to a run's, not its very bytes. One cache per recording and
/// detector setting (the detector's kind, model and settings are its key).
public struct DetectionCache: Sendable {
    public struct Frame: Sendable {
        public var index: Int
        public var time: MediaTime
        public var detections: [Detection]
        /// The emotion model's output for each detection's box, before the head or calibration (empty when emotion is
        /// off).
        public var emotions: [Box: FaceOutput]
        /// Each detection's sharpness (`Image.sharpness`), which decides whether it is read (empty when emotion is off).
        public var sharpness: [Box: Double]
        /// The frame's thumbnail, under a cadence that watches for changes (`detector.onChange`): which frames it
        /// detects depends on the pictures.
        public var thumbnail: Image?
    }

    public let recording: String
    public let key: String
    public let width: Int
    public let height: Int
    /// Where the recording's media time 0 sits on the wall clock: its file time, as a replay places it.
    public let origin: Date
    public var frames: [Frame]
    /// The head or calibration the cache's pipeline reads with (a trial's pipeline varies none of the model's).
    public let readout: EmotionReadout
    /// Seconds the decoding and detection took, for the speed-up a sweep reports.
    public var seconds: Double

    /// The cache's key for a definition: what decides the detections, and whether thumbnails are kept.
    public static func key(_ definition: PipelineDefinition) -> String {
        ([definition.detection.kind.rawValue, definition.detectorModel ?? "default"]
            + DetectorSettings.settings.map { "\($0.key)=\($0.value(in: definition.detectorSettings))" }
            + [
                definition.emotionEnabled
                    ? "\(definition.emotionModel)|align=\(definition.emotionAlign)|mirror=\(definition.emotionMirror)|head=\(definition.emotionHead?.sha256 ?? "model's")|calibration=\(definition.emotionCalibration.map { "\($0)" } ?? "model's")"
                    : "no-emotion"
            ]
            + (watchesChanges(definition) ? ["thumbnails"] : [])).joined(separator: "|")
    }

    static func watchesChanges(_ definition: PipelineDefinition) -> Bool {
        definition.detection.maxFps > 0 && definition.detection.onChange
    }

    /// Decodes `recording` and runs the definition's detector (and emotion model, if on) on every frame.
    public static func make(
        recording: String, definition: PipelineDefinition, models: ModelStore, logger: Logger
    ) throws -> DetectionCache {
        let start = ContinuousClock.now
        let detector = try Pipeline.detector(definition, from: models)
        let emotion = definition.emotionEnabled ? try EmotionReader.make(definition, from: models) : nil
        let source = try SourceSpec(recording).open(pacing: .fastest, logger: logger)
        var frames: [Frame] = []
        var size = (width: 0, height: 0)
        while let frame = try source.next() {
            if frames.isEmpty { size = (frame.image.width, frame.image.height) }
            let detections = try detector.detect(frame.image)
            var emotions: [Box: FaceOutput] = [:]
            var sharpness: [Box: Double] = [:]
            if let classifier = emotion?.classifier {
                for detection in detections {
                    emotions[detection.box] = try classifier.classify(frame.image, face: detection)
                    sharpness[detection.box] = try classifier.sharpness(frame.image, face: detection)
                }
            }
            let thumbnail = watchesChanges(definition) ? try ChangeWatch.thumbnail(of: frame.image) : nil
            frames.append(
                Frame(
                    index: frame.index, time: frame.time, detections: detections, emotions: emotions,
                    sharpness: sharpness, thumbnail: thumbnail))
        }
        let origin =
            (try? FileManager.default.attributesOfItem(atPath: recording)[.modificationDate] as? Date)
            ?? Date(timeIntervalSince1970: 0)
        let elapsed = ContinuousClock.now - start
        return DetectionCache(
            recording: recording, key: key(definition), width: size.width, height: size.height, origin: origin,
            frames: frames,
            readout: emotion?.readout ?? .calibration(.identity),
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        )
    }
}

/// Hands the pipeline a cached frame's detections and emotion readings, as the models gave them. The pipeline calls
/// it synchronously, frame after frame, so `frame` is the one being processed.
final class CachedModels: FaceDetector, FaceClassifying {
    let name = "cached"
    let settings: DetectorSettings
    let kind: DetectorKind
    var frame: DetectionCache.Frame?

    init(settings: DetectorSettings, kind: DetectorKind) {
        self.settings = settings
        self.kind = kind
    }

    func detect(_ image: Image) throws(VisionError) -> [Detection] { frame?.detections ?? [] }

    /// None: the cache holds the frames' own detections, and a trial measures visits, not masks.
    func detectAtEdges(_ image: Image, margin: Int) throws(VisionError) -> [Detection] { [] }

    /// The detector's squares: a trial detects regions where the run would, from the whole frame's detections (the
    /// faces whose centre lies in a square; a face cut by a square's edge would be missed in a run, and is not here).
    func regionSide(width: Int, height: Int) -> Double? {
        kind.takesRegions ? settings.regionSide(width: width, height: height) : nil
    }

    func detect(_ image: Image, in regions: [Box]) throws(VisionError) -> [Detection] {
        (frame?.detections ?? []).filter { detection in
            let centre = detection.box.center
            return regions.contains {
                $0.x <= centre.x && centre.x <= $0.maxX && $0.y <= centre.y && centre.y <= $0.maxY
            }
        }
    }

    func classify(_ image: Image, face: Detection) throws(VisionError) -> FaceOutput {
        guard let emotions = frame?.emotions[face.box] else {
            throw VisionError(.argument, "no cached emotion reading for this box")
        }
        return emotions
    }

    func sharpness(_ image: Image, face: Detection) throws(VisionError) -> Double {
        guard let sharpness = frame?.sharpness[face.box] else {
            throw VisionError(.argument, "no cached sharpness for this box")
        }
        return sharpness
    }
}
