import CSentinelCV
public import SentinelCore
public import SentinelWire

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
    /// Faces the frame's edges cut, for the masks only: what this detector finds in `image` with `margin` pixels
    /// mirrored onto every side (`Image.paddedMirrored`), in the frame's pixels, clipped to it. A detector that reads
    /// no pixels (scripted, cached) finds none.
    func detectAtEdges(_ image: Image, margin: Int) throws(VisionError) -> [Detection]
}

extension FaceDetector {
    /// Whole frames only, by default.
    public func regionSide(width: Int, height: Int) -> Double? { nil }
    /// Never asked of a detector with no `regionSide`; the whole frame's faces if it is.
    public func detect(_ image: Image, in regions: [Box]) throws(VisionError) -> [Detection] { try detect(image) }

    /// A face cut by the edge is one the detector was never shown; mirrored, it is whole (YuNet: nothing in a frame
    /// with a face cut down its middle, 1.0 with the frame mirrored). Only boxes that the frame's edge cuts are kept: a
    /// face wholly inside is the frame's own detection's, and a face's mirror image lies wholly outside.
    public func detectAtEdges(_ image: Image, margin: Int) throws(VisionError) -> [Detection] {
        let margin = min(margin, image.width - 1, image.height - 1)
        guard margin > 0 else { return [] }
        let frame = Box(x: 0, y: 0, width: Double(image.width), height: Double(image.height))
        return try detect(image.paddedMirrored(by: margin)).compactMap { found in
            let box = Box(
                x: found.box.x - Double(margin), y: found.box.y - Double(margin), width: found.box.width,
                height: found.box.height)
            guard let inside = box.intersection(frame), inside != box, inside.width >= 1, inside.height >= 1 else {
                return nil
            }
            return Detection(box: inside, score: found.score)
        }
    }
}

extension DetectorKind {
    var raw: snl_detector_kind {
        switch self {
        case .cascade: SNL_DETECTOR_CASCADE
        case .centerface: SNL_DETECTOR_CENTERFACE
        case .yunet: SNL_DETECTOR_YUNET
        case .retinaface: SNL_DETECTOR_RETINAFACE
        }
    }
}

extension DetectorSettings {
    /// The side, in pixels of a `width` x `height` frame, of a square that the frame's detection scale brings to the
    /// regions' network size (SNL_REGION_SIDE): faces in a region are seen at the size a whole frame's detection sees
    /// them. Nil when one square would not fit in the frame.
    public func regionSide(width: Int, height: Int) -> Double? {
        let longest = max(width, height)
        let factor = longestSide > 0 && longest > longestSide ? Double(longestSide) / Double(longest) : 1
        let side = (Double(SNL_REGION_SIDE) / factor).rounded()
        return side <= Double(min(width, height)) ? side : nil
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
