public import SentinelConfig
public import SentinelCore
public import SentinelModels
public import SentinelVision

/// How Sentinel reads a face's emotion: the model's output for the face (its crop, alignment, mirror image, network and
/// labels, as the model's description says; its feature layer where it names one), then the head or calibration. The
/// live pipeline, replay, tune's cache and `sentinel eval emotion` all read a face through this one value.
public struct EmotionReader {
    public let classifier: any FaceClassifying
    public let readout: EmotionReadout

    public init(classifier: any FaceClassifying, readout: EmotionReadout) {
        self.classifier = classifier
        self.readout = readout
    }

    /// The reading of the face `face` in `image`: what one classification feeds the smoother and the gauge.
    public func read(_ image: Image, face: Detection) throws(VisionError) -> EmotionReading {
        try classify(image, face: face).reading
    }

    /// The model's output for the face (what a head or calibration is fitted on) and the reading made of it.
    public func classify(_ image: Image, face: Detection) throws(VisionError) -> (
        output: FaceOutput, reading: EmotionReading
    ) {
        let output = try classifier.classify(image, face: face)
        guard let reading = readout.reading(output) else {
            throw VisionError(
                .model, "the emotion head needs the model's feature layer, which the classifier did not give")
        }
        return (output, reading)
    }

    /// The emotion model a definition names, as its description in the manifest says to run it, with the head or
    /// calibration that holds (`PipelineDefinition.emotionReadout`), probed (`FaceClassifier.probe`). Throws a
    /// `ModelError` for a model that is missing or not a classifier, or a head that does not fit it; a `VisionError`
    /// for one whose outputs are no reading.
    public static func make(_ definition: PipelineDefinition, from models: ModelStore) throws -> EmotionReader {
        let description = try models.classifier(named: definition.emotionModel)
        let path = try models.path(of: definition.emotionModel)
        let classifier = try FaceClassifier(
            modelPath: path, model: description, align: definition.emotionAlign, mirror: definition.emotionMirror)
        try classifier.probe(path)
        return EmotionReader(classifier: classifier, readout: try definition.emotionReadout(models: models))
    }
}
