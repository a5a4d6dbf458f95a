public import SentinelCore
public import SentinelModels

extension PipelineDefinition {
    /// How this pipeline crops a face for `description`'s model: what a head or calibration must have been fitted with.
    public func emotionCrop(_ description: ClassifierDescription) -> CropRecord {
        CropRecord(
            margin: description.crop.margin, align: emotionAlign && description.crop.align == .eyes,
            mirror: emotionMirror)
    }

    /// How the emotion model's output becomes a reading here: the pipeline's own head or calibration, else the model's
    /// head, else the model's calibration, else none. Checked as `sentinel check` checks it: a head's file and sha256,
    /// its layer and size against the model's, the model file it was fitted on, and the crop, alignment and mirror it
    /// was fitted with against this pipeline's (a calibration's too, where it records them).
    public func emotionReadout(models: ModelStore) throws(ModelError) -> EmotionReadout {
        let description = try models.classifier(named: emotionModel)
        if emotionHead != nil, emotionCalibration != nil {
            throw ModelError(
                .manifest, "emotion.head and emotion.calibration: a face is read by one of them; remove the other")
        }
        let readout: EmotionReadout
        let origin: String
        if let reference = emotionHead ?? (emotionCalibration == nil ? description.head : nil) {
            origin =
                emotionHead != nil
                ? "emotion.head (\(reference.file))" : "model \(emotionModel)'s head (\(reference.file))"
            let head = try models.head(reference)
            guard let layer = description.features else {
                throw ModelError(
                    .manifest,
                    "\(origin) reads layer \(head.features.layer), but model \(emotionModel)'s description names no feature layer"
                )
            }
            guard head.features == layer else {
                throw ModelError(
                    .manifest,
                    "\(origin) reads layer \(head.features.layer) of \(head.features.size) values; model \(emotionModel) names \(layer.layer) of \(layer.size)"
                )
            }
            if let entry = models.manifest.entry(named: emotionModel), entry.sha256 != head.modelSHA256 {
                throw ModelError(
                    .manifest,
                    "\(origin) was fitted on a model file of sha256 \(head.modelSHA256), not model \(emotionModel)'s (\(entry.sha256)): fit it again"
                )
            }
            readout = .head(head)
        } else {
            let calibration = emotionCalibration ?? description.calibration ?? .identity
            origin = emotionCalibration != nil ? "emotion.calibration" : "model \(emotionModel)'s calibration"
            readout = .calibration(calibration)
        }
        if let fitted = readout.crop {
            let differences = fitted.differences(from: emotionCrop(description))
            if !differences.isEmpty {
                throw ModelError(
                    .manifest,
                    "\(origin) was fitted on faces read another way (\(differences.joined(separator: "; "))): its figures do not hold; set the pipeline's emotion settings as fitted, or fit again with sentinel eval emotion --fit"
                )
            }
        }
        return readout
    }
}

extension PipelineDefinition {
    /// What `sentinel check` warns of without refusing: the pipeline's own head read worse, by the figures it recorded
    /// when fitted (cross-validated on the operator's faces), than the model's shipped head by its own (on the photos
    /// it was fitted on). Two sets of faces, so a warning, not a proof: the operator measures both on their faces with
    /// `sentinel eval emotion`.
    public func emotionWarnings(models: ModelStore) -> [ConfigProblem] {
        guard emotionEnabled, let reference = emotionHead,
            let description = try? models.classifier(named: emotionModel),
            let head = try? models.head(reference), let figures = head.fitted.figures
        else { return [] }
        let shipped = description.head.flatMap { try? models.head($0) }?.fitted.figures
        let worse = figures.worse(than: shipped)
        guard !worse.isEmpty else { return [] }
        var problem =
            locations["emotion.head.file"] ?? ConfigProblem(file: file, path: "emotion.head", message: "")
        problem.message =
            "\(reference.file) reads worse, by the figures it was fitted with, than model \(emotionModel)'s shipped head: \(worse.joined(separator: "; ")); measure both on your faces with sentinel eval emotion"
        return [problem]
    }
}
