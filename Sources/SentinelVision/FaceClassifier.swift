import CSentinelCV
public import SentinelCore
public import SentinelWire

/// Gives the emotion model's probability of each of Sentinel's seven expressions for a face, before calibration, and its
/// feature layer's values where the model names one.
public protocol FaceClassifying: AnyObject {
    func classify(_ image: Image, face: Detection) throws(VisionError) -> FaceOutput
    /// How sharp the face is (`Image.sharpness`): whether it can be read at all (`EmotionSettings.minSharpness`).
    func sharpness(_ image: Image, face: Detection) throws(VisionError) -> Double
}

extension FaceClassifying {
    public func sharpness(_ image: Image, face: Detection) throws(VisionError) -> Double {
        try image.sharpness(in: face.box)
    }
}

/// An ONNX network run on the crop its description asks for around a face (`ClassifierDescription`): the crop, then
/// its mirror image when asked, each through the network; the outputs read as the seven expressions.
public final class FaceClassifier: FaceClassifying {
    public let model: ClassifierDescription
    /// The expression each output is read as (nil: dropped).
    public let readings: [Emotion?]
    private let handle: OpaquePointer
    private let crops: Int
    private var buffer: [Float]
    /// The feature layer's values of each crop, where the description names a layer.
    private var features: [Float]

    /// `align`: turn the crop by the eyes where the description asks for it; `mirror`: read the mirror image too.
    public init(modelPath: String, model: ClassifierDescription, align: Bool = true, mirror: Bool = false)
        throws(VisionError)
    {
        do { readings = try model.readings() } catch {
            throw VisionError(.argument, "classifier \(modelPath): \(error)")
        }
        var input = snl_classifier_input()
        input.width = Int32(model.input.width)
        input.height = Int32(model.input.height)
        let channels: snl_channels =
            switch model.input.channels {
            case .grey: SNL_CHANNELS_GREY
            case .bgr: SNL_CHANNELS_BGR
            case .rgb: SNL_CHANNELS_RGB
            }
        input.channels = Int32(channels.rawValue)
        withUnsafeMutableBytes(of: &input.mean) { bytes in
            for (i, mean) in model.input.mean.prefix(3).enumerated() {
                bytes.storeBytes(of: Float(mean), toByteOffset: i * 4, as: Float.self)
            }
        }
        withUnsafeMutableBytes(of: &input.scale) { bytes in
            for (i, std) in model.input.std.prefix(3).enumerated() {
                bytes.storeBytes(of: Float(1 / std), toByteOffset: i * 4, as: Float.self)
            }
        }
        input.margin = Float(model.crop.margin)
        input.align = align && model.crop.align == .eyes ? 1 : 0
        input.mirror = mirror ? 1 : 0
        var out: OpaquePointer?
        var size: Int32 = 0
        try bridge { snl_classifier_create(modelPath, &input, model.features?.layer, &out, &size, $0) }
        self.model = model
        self.handle = out!
        crops = mirror ? 2 : 1
        if let layer = model.features, layer.size != Int(size) {
            throw VisionError(
                .model,
                "classifier \(modelPath): its layer \(layer.layer) gives \(size) values, its description says \(layer.size)"
            )
        }
        features = [Float](repeating: 0, count: crops * Int(size))
        // Room for a network that returns its whole input (the tests' graphs that prove the crop).
        let room = max(model.labels.count, model.input.width * model.input.height * model.input.channels.count)
        buffer = [Float](repeating: 0, count: crops * room)
    }

    deinit { snl_classifier_destroy(handle) }

    /// Loads the model at `path` as `model` describes it, probes it, and lets it go: a network OpenCV cannot read, a
    /// feature layer it lacks or of another size than described, or outputs that are no reading, is a `VisionError`
    /// (what `sentinel check` runs).
    public static func open(_ path: String, _ model: ClassifierDescription) throws {
        try FaceClassifier(modelPath: path, model: model, align: false, mirror: false).probe(path)
    }

    /// Reads a probe face (a grey gradient, the face the whole image) and throws a `.model` error naming `path` where
    /// the outputs are no reading: a network gone wrong is refused when it is loaded, not read as "angry 0.143".
    public func probe(_ path: String) throws(VisionError) {
        let side = max(model.input.width, model.input.height, 48) * 2
        let image = try Image(width: side, height: side, fill: Color(red: 128, green: 128, blue: 128))
        for row in stride(from: 0, to: side, by: 4) {
            let shade = UInt8(64 + 128 * row / side)
            try image.drawRectangle(
                Box(x: 0, y: Double(row), width: Double(side), height: 4),
                color: Color(red: shade, green: shade, blue: shade), thickness: -1)
        }
        do {
            _ = try classify(
                image, face: Detection(box: Box(x: 0, y: 0, width: Double(side), height: Double(side)), score: 1))
        } catch {
            throw VisionError(.model, "classifier \(path): on a probe face, \(error.message)")
        }
    }

    /// The network's raw outputs for each crop of the face (the crop, then its mirror image), in the network's order.
    public func outputs(_ image: Image, face: Detection) throws(VisionError) -> [[Double]] {
        var raw = snl_face()
        raw.box = face.box.raw
        raw.score = Float(face.score)
        raw.landmark_count = Int32(min(face.landmarks.count, 5))
        withUnsafeMutableBytes(of: &raw.landmarks) { bytes in
            for (i, point) in face.landmarks.prefix(5).enumerated() {
                bytes.storeBytes(of: Float(point.x), toByteOffset: i * 8, as: Float.self)
                bytes.storeBytes(of: Float(point.y), toByteOffset: i * 8 + 4, as: Float.self)
            }
        }
        var count: Int32 = 0
        let capacity = Int32(buffer.count)
        _ = try buffer.withUnsafeMutableBufferPointer { values throws(VisionError) in
            try features.withUnsafeMutableBufferPointer { features throws(VisionError) in
                try bridge {
                    snl_classifier_run(
                        handle, image.handle, &raw, values.baseAddress, capacity, &count, features.baseAddress, $0)
                }
            }
        }
        let width = Int(count) / crops
        return (0..<crops).map { crop in buffer[crop * width..<(crop + 1) * width].map(Double.init) }
    }

    /// The probabilities over the seven, and the feature layer's values averaged over the crops.
    public func classify(_ image: Image, face: Detection) throws(VisionError) -> FaceOutput {
        let outputs = try outputs(image, face: face)
        guard outputs.allSatisfy({ $0.count == readings.count }) else {
            throw VisionError(
                .model,
                "classifier gave \(outputs.first?.count ?? 0) values a crop; its description names \(readings.count) labels"
            )
        }
        for crop in outputs {
            if let problem = model.outputProblem(crop) {
                throw VisionError(.refusedOutput, "the emotion model gave \(problem): the reading is refused")
            }
        }
        var averaged: [Float]?
        if let size = model.features?.size {
            averaged = (0..<size).map { j in (0..<crops).reduce(0) { $0 + features[$1 * size + j] } / Float(crops) }
            if let layer = model.features?.layer, averaged?.allSatisfy(\.isFinite) == false {
                throw VisionError(.refusedOutput, "the emotion model's layer \(layer) gave a value that is no number")
            }
        }
        return FaceOutput(probabilities: model.probabilities(from: outputs, readings: readings), features: averaged)
    }
}
