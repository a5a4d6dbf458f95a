public import SentinelConfig
public import SentinelCore
public import SentinelModels
public import SentinelVision

/// How Sentinel reads a face's emotion: the model's probabilities for the face (its crop, alignment, mirror image,
/// network and labels, as the model's description says), then the calibration. The live pipeline, replay, tune's
/// cache and `sentinel eval emotion` all read a face through this one value.
public struct EmotionReader {
    public let classifier: any FaceClassifying
    public let calibration: EmotionCalibration

    public init(classifier: any FaceClassifying, calibration: EmotionCalibration) {
        self.classifier = classifier
        self.calibration = calibration
    }

    /// The reading of the face `face` in `image`: what one classification feeds the smoother and the gauge.
    public func read(_ image: Image, face: Detection) throws(VisionError) -> EmotionReading {
        calibration.reading(try classifier.probabilities(image, face: face))
    }

    /// The emotion model a definition names, as its description in the manifest says to run it, and the calibration
    /// that holds: the pipeline's own, else the model's, else none. Throws a `ModelError` for a model that is missing
    /// or not a classifier.
    public static func classifier(_ definition: PipelineDefinition, from models: ModelStore) throws -> (
        FaceClassifier, EmotionCalibration
    ) {
        let description = try models.classifier(named: definition.emotionModel)
        let classifier = try FaceClassifier(
            modelPath: try models.path(of: definition.emotionModel), model: description,
            align: definition.emotionAlign, mirror: definition.emotionMirror)
        return (classifier, definition.emotionCalibration ?? description.calibration ?? .identity)
    }
}
