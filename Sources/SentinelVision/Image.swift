import CSentinelCV
import Foundation
public import SentinelCore
public import SentinelWire

/// An 8-bit BGR image owned by the bridge.
///
/// Not safe to mutate from two threads at once; a frame is handed from stage to stage, one owner at a time.
public final class Image: @unchecked Sendable {
    let handle: OpaquePointer

    init(handle: OpaquePointer) { self.handle = handle }
    deinit { snl_image_destroy(handle) }

    /// A new image filled with one colour. A 0x0 image is allowed and is "empty".
    public convenience init(width: Int, height: Int, fill: Color = .black) throws(VisionError) {
        var out: OpaquePointer?
        try bridge { snl_image_create(Int32(width), Int32(height), fill.raw, &out, $0) }
        self.init(handle: out!)
    }

    /// Reads a JPEG, PNG, BMP, WebP, TIFF or PNM still from a regular file only (a FIFO named `x.jpg` would block the read
    /// forever, and a device never end), of at most `ImageHeader.maxPixels` as its header says.
    public convenience init(contentsOf path: String) throws(VisionError) {
        // Asked here, not of OpenCV, which would block on a FIFO and echo a missing file's name raw to the terminal.
        var status = stat()
        guard stat(path, &status) == 0 else {
            throw VisionError(.open, "\(path.controlCharactersShown): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw VisionError(
                .open, "\(path.controlCharactersShown): not a regular file (a FIFO, device or folder), so not read")
        }
        // Its size, before OpenCV allocates what the header claims.
        do { _ = try ImageHeader.size(ofFile: path) } catch {
            throw VisionError(error.code, "\(path.controlCharactersShown): \(error.message)")
        }
        var out: OpaquePointer?
        try bridge { snl_image_read(path, &out, $0) }
        self.init(handle: out!)
    }

    public var width: Int { Int(snl_image_width(handle)) }
    public var height: Int { Int(snl_image_height(handle)) }
    public var isEmpty: Bool { width == 0 || height == 0 }

    public func clone() throws(VisionError) -> Image {
        var out: OpaquePointer?
        try bridge { snl_image_clone(handle, &out, $0) }
        return Image(handle: out!)
    }

    /// A copy of `region` of this image, clipped to it (a region wholly outside throws).
    public func cropped(to region: Box) throws(VisionError) -> Image {
        var out: OpaquePointer?
        try bridge { snl_image_crop(handle, region.raw, &out, $0) }
        return Image(handle: out!)
    }

    /// Resized: a smaller image averages the pixels it covers, or with `sampled`, takes a bilinear sample of them (a
    /// twentieth of the time, for a thumbnail).
    public func resized(width: Int, height: Int, sampled: Bool = false) throws(VisionError) -> Image {
        var out: OpaquePointer?
        try bridge { snl_image_resize(handle, Int32(width), Int32(height), sampled ? 1 : 0, &out, $0) }
        return Image(handle: out!)
    }

    /// With `margin` pixels added on every side, mirroring those inside the edge: a face cut by the edge, mirrored, is
    /// a whole face to a detector (YuNet found a face cut down its middle at 1.0 so, nothing in the frame as it is).
    public func paddedMirrored(by margin: Int) throws(VisionError) -> Image {
        var out: OpaquePointer?
        try bridge { snl_image_pad_mirrored(handle, Int32(margin), &out, $0) }
        return Image(handle: out!)
    }

    /// Mean absolute difference (0-255) between `region` here and `otherRegion` of `other`, resized to match.
    public func difference(in region: Box, from other: Image, region otherRegion: Box) throws(VisionError) -> Double {
        var value = 0.0
        try bridge { snl_image_region_difference(handle, region.raw, other.handle, otherRegion.raw, &value, $0) }
        return value
    }

    /// Mean absolute difference (0-255, grey) from `other`, of the same size, in each cell of a grid of `columns` x
    /// `rows`, row by row.
    public func differences(from other: Image, columns: Int, rows: Int) throws(VisionError) -> [UInt8] {
        var cells = [UInt8](repeating: 0, count: columns * rows)
        _ = try cells.withUnsafeMutableBufferPointer { cells throws(VisionError) in
            try bridge {
                snl_image_difference_grid(handle, other.handle, Int32(columns), Int32(rows), cells.baseAddress, $0)
            }
        }
        return cells
    }

    /// Copies the cells of `source` (of this size) that `which` names, row by row, from a grid of `columns` x
    /// `rows`: the cells of `differences(from:columns:rows:)`.
    public func copyCells(from source: Image, columns: Int, rows: Int, which: [Bool]) throws(VisionError) {
        let bytes = which.map { UInt8($0 ? 1 : 0) }
        precondition(bytes.count == columns * rows, "one flag a cell")
        try bridge { snl_image_copy_cells(handle, source.handle, Int32(columns), Int32(rows), bytes, $0) }
    }

    /// How much of the detail in `region` of `other` (of this size) is still here, where it was: the correlation of
    /// the two regions' Laplacians (1: the same detail; about 0: none of it, blurred, pixelated or covered, whatever
    /// the mask's strength).
    public func detailCorrelation(in region: Box, with other: Image) throws(VisionError) -> Double {
        var value = 0.0
        try bridge { snl_image_region_detail_correlation(handle, other.handle, region.raw, &value, $0) }
        return value
    }

    /// Variance of the Laplacian in `region`: high where a face shows detail, low where it is masked.
    public func detail(in region: Box) throws(VisionError) -> Double {
        var value = 0.0
        try bridge { snl_image_region_detail(handle, region.raw, &value, $0) }
        return value
    }

    /// How sharp `region` is, whatever its size and contrast (`snl_image_region_sharpness`, at the emotion model's
    /// 64 pixels): the variance of its Laplacian over that of its pixels.
    public func sharpness(in region: Box, side: Int = 64) throws(VisionError) -> Double {
        var value = 0.0
        try bridge { snl_image_region_sharpness(handle, region.raw, Int32(side), &value, $0) }
        return value
    }

    public func write(to path: String) throws(VisionError) {
        try bridge { snl_image_write(handle, path, $0) }
    }

    /// The image encoded as JPEG.
    public func jpeg() throws(VisionError) -> [UInt8] {
        var bytes: UnsafeMutablePointer<UInt8>?
        var length = 0
        try bridge { snl_image_encode(handle, ".jpg", &bytes, &length, $0) }
        defer { snl_free(bytes) }
        return Array(UnsafeBufferPointer(start: bytes, count: length))
    }

    /// Hides `region` in place; `strength` is the blur kernel or block size as a fraction of the region's side.
    public func mask(_ region: Box, style: MaskStyle, strength: Double = 0.25) throws(VisionError) {
        let kind: snl_mask_kind =
            switch style {
            case .blur: SNL_MASK_BLUR
            case .pixelate: SNL_MASK_PIXELATE
            case .solid: SNL_MASK_SOLID
            }
        try bridge { snl_image_mask(handle, region.raw, kind, Float(strength), $0) }
    }

    /// Pastes `sourceRegion` of `source`, resized into `region`, through a feathered ellipse.
    public func composite(
        _ source: Image, from sourceRegion: Box, into region: Box, feather: Double = 0.15, mirrored: Bool = false
    ) throws(VisionError) {
        try bridge {
            snl_image_composite(
                handle, region.raw, source.handle, sourceRegion.raw, Float(feather), mirrored ? 1 : 0, $0)
        }
    }

    public func drawRectangle(_ box: Box, color: Color, thickness: Int = 2) throws(VisionError) {
        try bridge { snl_draw_rect(handle, box.raw, color.raw, Int32(thickness), $0) }
    }

    /// Draws a polygon's outline, or fills it when `filled`; a colour with alpha below 255 blends.
    public func drawPolygon(_ polygon: Polygon, color: Color, thickness: Int = 2, filled: Bool = false)
        throws(VisionError)
    {
        let flat = polygon.vertices.flatMap { [Float($0.x), Float($0.y)] }
        try bridge {
            snl_draw_polygon(handle, flat, Int32(polygon.vertices.count), color.raw, filled ? -1 : Int32(thickness), $0)
        }
    }

    public func drawEllipse(in box: Box, color: Color, filled: Bool = true) throws(VisionError) {
        try bridge { snl_draw_ellipse(handle, box.raw, color.raw, filled ? -1 : 2, $0) }
    }

    public func drawText(_ text: String, at point: Point, scale: Double = 0.6, color: Color) throws(VisionError) {
        try bridge { snl_draw_text(handle, text, Float(point.x), Float(point.y), Float(scale), color.raw, $0) }
    }

    /// The box `drawText` fills with `text` at `scale`, its baseline at y 0: width, and height above and below.
    public static func textSize(_ text: String, scale: Double) throws(VisionError) -> (
        width: Double, height: Double, baseline: Double
    ) {
        var (width, height, baseline): (Int32, Int32, Int32) = (0, 0, 0)
        try bridge { snl_text_size(text, Float(scale), &width, &height, &baseline, $0) }
        return (Double(width), Double(height), Double(baseline))
    }

    /// Text on a filled box (legible over any picture), its top left at `origin`.
    public func drawLabel(_ text: String, at origin: Point, scale: Double, color: Color, background: Color)
        throws(VisionError)
    {
        let size = try Self.textSize(text, scale: scale)
        try drawRectangle(
            Box(x: origin.x, y: origin.y, width: size.width + 4, height: size.height + size.baseline + 4),
            color: background, thickness: -1)
        try drawText(text, at: Point(x: origin.x + 2, y: origin.y + 2 + size.height), scale: scale, color: color)
    }
}

/// A colour with optional opacity (255 is opaque).
public struct Color: Hashable, Sendable, Codable {
    public var red: UInt8
    public var green: UInt8
    public var blue: UInt8
    public var alpha: UInt8

    public init(red: UInt8, green: UInt8, blue: UInt8, alpha: UInt8 = 255) {
        self.red = red
        self.green = green
        self.blue = blue
        self.alpha = alpha
    }

    public static let black = Color(red: 0, green: 0, blue: 0)
    public static let white = Color(red: 255, green: 255, blue: 255)

    var raw: snl_color { snl_color(blue: blue, green: green, red: red, alpha: alpha) }
}

extension Box {
    var raw: snl_rect { snl_rect(x: Float(x), y: Float(y), width: Float(width), height: Float(height)) }
}
