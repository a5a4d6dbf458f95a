import Foundation
public import SentinelConfig
public import SentinelCore
public import SentinelModels
import SentinelVision
public import SentinelVisitors
public import SentinelWire

/// Labelled photos read as the live pipeline reads a face: the pipeline's detector (its largest face at the detector's
/// score), the emotion settings' gate (size, detection score, cut, turned, blurred), then the pipeline's `EmotionReader` (crop,
/// alignment, mirror image, model, labels, head or calibration). `sentinel eval emotion` measures with it and fits
/// calibrations on its model probabilities.
public struct EmotionEvaluation: Sendable {
    /// A photo to read, with its true expression.
    public struct Photo: Sendable {
        public var name: String
        public var path: String
        public var truth: Emotion
        /// For cross-validation: photos of one group are never split between fitting and measuring.
        public var group: String

        public init(name: String, path: String, truth: Emotion, group: String) {
            self.name = name
            self.path = path
            self.truth = truth
            self.group = group
        }
    }

    /// A face read.
    public struct Face: Sendable {
        public var photo: Photo
        /// The model's probabilities over the seven, before calibration, and its feature layer's values (what a
        /// calibration or a head is fitted on).
        public var output: FaceOutput
        /// What the pipeline publishes from it: the head's or the calibration's probabilities and valence.
        public var reading: EmotionReading
    }

    /// Why a photo gave no reading.
    public enum Miss: String, Sendable, CaseIterable {
        case missing = "no such file"
        case unreadable = "not an image Sentinel reads (JPEG, PNG, BMP, WebP, TIFF or PNM of at most 50 million pixels)"
        case noFace = "no face at the detector's score"
        case gated =
            "a face the pipeline does not read (emotion.minFaceSize, minDetectionScore, minFrontal, minSharpness, cut)"
        case refused = "an output of the model that is no reading (not a number, or out of range)"
    }

    public var faces: [Face] = []
    public var missed: [(photo: Photo, why: Miss)] = []
    /// The faces the pipeline would not read (`missed` as `.gated`), by why.
    public var unread: [EmotionSettings.Unreadable: Int] = [:]
    /// The head or calibration the faces were read with.
    public let readout: EmotionReadout

    /// Reads every photo with the pipeline `definition` describes. `progress` is told each photo done.
    public init(
        _ photos: [Photo], definition: PipelineDefinition, models: ModelStore, progress: (Int) -> Void = { _ in }
    ) throws {
        guard definition.emotionEnabled else {
            throw ModelError(.unknown, "\(definition.file): emotion.enabled is false, so no face would be read")
        }
        let detector = try Pipeline.detector(definition, from: models)
        let reader = try EmotionReader.make(definition, from: models)
        self.readout = reader.readout
        let threshold = definition.detectorSettings.scoreThreshold
        for (index, photo) in photos.enumerated() {
            defer { progress(index + 1) }
            guard FileManager.default.fileExists(atPath: photo.path) else {
                missed.append((photo, .missing))
                continue
            }
            guard let image = try? Image(contentsOf: photo.path) else {
                missed.append((photo, .unreadable))
                continue
            }
            guard
                let face = try detector.detect(image).filter({ $0.score >= threshold }).max(by: {
                    $0.box.area < $1.box.area
                })
            else {
                missed.append((photo, .noFace))
                continue
            }
            if let why = try definition.visitors.emotion.unreadable(
                face, width: Double(image.width), height: Double(image.height),
                sharpness: { () throws(VisionError) in try reader.classifier.sharpness(image, face: face) })
            {
                missed.append((photo, .gated))
                unread[why, default: 0] += 1
                continue
            }
            let read: (output: FaceOutput, reading: EmotionReading)
            do { read = try reader.classify(image, face: face) } catch {
                guard error.code == .refusedOutput else { throw error }
                missed.append((photo, .refused))
                continue
            }
            faces.append(Face(photo: photo, output: read.output, reading: read.reading))
        }
    }
}
