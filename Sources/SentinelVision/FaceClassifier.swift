import CSentinelCV
public import SentinelCore

/// How a classifier network wants its face crop.
public struct CropFormat: Sendable, Equatable, Codable {
    public var width: Int
    public var height: Int
    public var grey: Bool
    /// Pixel values become `(value - mean) * scale`.
    public var scale: Double
    public var mean: Double
    /// Added to each side of the square crop, as a fraction of the face box side.
    public var margin: Double

    public init(width: Int, height: Int, grey: Bool, scale: Double, mean: Double, margin: Double) {
        self.width = width
        self.height = height
        self.grey = grey
        self.scale = scale
        self.mean = mean
        self.margin = margin
    }

    /// The FER2013 mini-Xception emotion model: grey 64x64 scaled to [-1, 1].
    public static let miniXception = CropFormat(
        width: 64, height: 64, grey: true, scale: 2 / 255, mean: 127.5, margin: 0.1)
}

/// Scores a face: one value per label (for the emotion model, a probability per expression).
public protocol FaceClassifying: AnyObject {
    func classify(_ image: Image, face box: Box) throws(VisionError) -> [Double]
}

/// An ONNX network run on a square crop around a face, giving one value per label.
public final class FaceClassifier: FaceClassifying {
    public let labels: [String]
    public let format: CropFormat
    private let handle: OpaquePointer

    public init(modelPath: String, format: CropFormat, labels: [String]) throws(VisionError) {
        var input = snl_classifier_input(
            width: Int32(format.width), height: Int32(format.height), grey: format.grey ? 1 : 0, scale: format.scale,
            mean: format.mean, margin: Float(format.margin))
        var out: OpaquePointer?
        try bridge { snl_classifier_create(modelPath, &input, Int32(labels.count), &out, $0) }
        self.labels = labels
        self.format = format
        self.handle = out!
    }

    deinit { snl_classifier_destroy(handle) }

    /// The network's outputs for the face at `box`, in label order.
    public func classify(_ image: Image, face box: Box) throws(VisionError) -> [Double] {
        var values = [Float](repeating: 0, count: labels.count)
        _ = try values.withUnsafeMutableBufferPointer { buffer throws(VisionError) in
            try bridge { snl_classifier_run(handle, image.handle, box.raw, buffer.baseAddress, $0) }
        }
        return values.map(Double.init)
    }
}
