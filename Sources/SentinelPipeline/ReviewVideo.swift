import Foundation
public import SentinelConfig
import SentinelCore
public import SentinelPrivacy
public import SentinelVision
import SentinelVisitors
public import SentinelWire

/// How the review video and the zone editor's snapshots hide faces: a square about each face box's centre, its side
/// the box's longer side times the mask scale (a narrow box is a face partly hidden, and the hidden part may come out
/// next), over every detection, every followed visitor, and (with `followTracks`) every visitor the tracker predicts
/// where detection missed it in this frame, a predicted face's grown by a further `growthPerSecond` sides per second
/// unseen, as its position grows less certain. A single missed detection therefore does not show a face. Beyond the
/// faces found, where one may be that none was found (`MaskedFrame.uncertain`): what came in at the frame's edges,
/// and what still differs from the empty scene under the last frame's masks.
public struct FaceMasks: Sendable {
    public let settings: ReviewSettings

    public init(settings: ReviewSettings) { self.settings = settings }

    /// The regions hidden in a frame: the faces found, grown, those the edges cut (unless `edgeBand` is 0), and
    /// (unless `settleSeconds` is 0) where a face may be that none was found.
    public func regions(_ frame: MaskedFrame) -> [Box] {
        (frame.detections.map { grown($0) }
            + (visible(frame) + (settings.edgeBand > 0 ? frame.edgeFaces : [])).map {
                grown($0.box, unseen: $0.unseenSeconds)
            }) + (settings.settleSeconds > 0 ? frame.uncertain : [])
    }

    /// Hides every region of `frame` in `image` (the frame's picture, or a copy with drawings on it).
    public func hide(in image: Image, _ frame: MaskedFrame) throws(VisionError) {
        for region in regions(frame) { try image.mask(region, style: settings.mask) }
    }

    /// The faces masked beside the frame's detections: visitors (predicted ones only when masks follow tracks), and
    /// every face reported earlier that no detection has looked at since.
    func visible(_ frame: MaskedFrame) -> [MaskedFrame.Face] {
        frame.faces.filter { $0.label == nil || settings.followTracks || !$0.predicted }
    }

    func grown(_ box: Box, unseen: Double = 0) -> Box {
        let side = max(box.width, box.height) * (settings.scale + settings.growthPerSecond * unseen)
        return Box(x: box.center.x - side / 2, y: box.center.y - side / 2, width: side, height: side)
    }
}

/// A video for reviewing a pipeline's behaviour with nobody recognisable in it: zones and pseudonymous
/// labels drawn, every face masked (`FaceMasks`).
///
/// The file is opened at the first frame, at that frame's size.
public final class ReviewVideo {
    public let masks: FaceMasks
    private let path: String
    private let fps: Double
    private let zones: [PipelineDefinition.ZoneSpec]
    /// False: the masked frames alone, as stills and the zone editor show them (what `sentinel eval masking` scores:
    /// an outline drawn across a face is detail that is no face's).
    private let drawings: Bool
    private var writer: VideoWriter?

    public init(
        path: String, fps: Double, zones: [PipelineDefinition.ZoneSpec], settings: ReviewSettings,
        drawings: Bool = true
    ) {
        self.path = path
        self.fps = fps
        masks = FaceMasks(settings: settings)
        self.zones = zones
        self.drawings = drawings
    }

    public func write(_ frame: MaskedFrame) throws(VisionError) {
        let image = try frame.image.clone()
        guard drawings else {
            try masks.hide(in: image, frame)
            return try record(image)
        }
        // Zones first, so that the masks also soften the zone lines crossing a face.
        let zoneColour = Color(red: 255, green: 200, blue: 0)
        let dark = Color(red: 20, green: 24, blue: 32)
        var placed: [Box] = []
        for zone in zones {
            let polygon = zone.definition(width: image.width, height: image.height).polygon
            try image.drawPolygon(polygon, color: zoneColour, thickness: 1)
            if let corner = polygon.vertices.min(by: { ($0.y, $0.x) < ($1.y, $1.x) }) {
                let origin = Point(x: corner.x + 2, y: corner.y + 2)
                placed.append(try label(zone.name, at: origin, in: image))
                try image.drawLabel(zone.name, at: origin, scale: Self.scale, color: zoneColour, background: dark)
            }
        }
        try masks.hide(in: image, frame)
        // No label goes over a face: text there is detail a masked face must not have.
        let faces = masks.visible(frame)
        let regions = faces.map { masks.grown($0.box, unseen: $0.unseenSeconds) }
        placed += regions
        // The media time and frame, as `explain` and the events give them, top left (else where no face is).
        let clock = String(format: "%.2f s  frame %d", frame.time.seconds, frame.index)
        let clockSize = try label(clock, at: Point(x: 0, y: 0), in: image)
        let clockBox = Self.place(
            width: clockSize.width, height: clockSize.height,
            by: Box(x: 4, y: 4 + clockSize.height + 2, width: 1, height: 1),
            avoiding: regions, frameWidth: Double(image.width), frameHeight: Double(image.height))
        placed.append(clockBox)
        try image.drawLabel(
            clock, at: Point(x: clockBox.x, y: clockBox.y), scale: Self.scale, color: .white, background: dark)
        // Outlines and labels go around the masked region, not over the face; each label where it overlaps none
        // placed before it (above the region, else below, else lower down), whole and on a dark box.
        for (face, region) in zip(faces, regions) {
            guard let name = face.label else { continue }
            let colour = face.predicted ? Color(red: 170, green: 170, blue: 170) : Color(red: 60, green: 230, blue: 60)
            try image.drawRectangle(region, color: colour, thickness: 1)
            let text = face.predicted ? "\(name) (predicted)" : name
            let size = try label(text, at: .init(x: 0, y: 0), in: image)
            let box = Self.place(
                width: size.width, height: size.height, by: region, avoiding: placed, frameWidth: Double(image.width),
                frameHeight: Double(image.height))
            placed.append(box)
            try image.drawLabel(text, at: Point(x: box.x, y: box.y), scale: Self.scale, color: colour, background: dark)
        }
        try record(image)
    }

    private func record(_ image: Image) throws(VisionError) {
        if writer == nil { writer = try VideoWriter(path: path, fps: fps, width: image.width, height: image.height) }
        try writer?.write(image)
    }

    public func finish() { writer?.finish() }

    static let scale = 0.45

    /// Where a label of this size goes by `region`: above it, else below it, else lower down, else higher up, the first
    /// place inside the frame that overlaps none of `placed` (the faces' regions and the labels so far); above it if
    /// none is free.
    public static func place(
        width: Double, height: Double, by region: Box, avoiding placed: [Box], frameWidth: Double, frameHeight: Double
    ) -> Box {
        let x = min(max(0, region.x), max(0, frameWidth - width))
        var rows = [region.y - height - 2, region.y + region.height + 2]
        rows += (1...12).map { region.y + region.height + 2 + Double($0) * (height + 2) }
        rows += (1...12).map { region.y - height - 2 - Double($0) * (height + 2) }
        let y =
            rows.first { y in
                let box = Box(x: x, y: y, width: width, height: height)
                return y >= 0 && y + height <= frameHeight && !placed.contains { $0.iou(box) > 0 }
            } ?? max(0, region.y - height - 2)
        return Box(x: x, y: y, width: width, height: height)
    }

    /// The box a label takes with its top left at `origin`.
    private func label(_ text: String, at origin: Point, in image: Image) throws(VisionError) -> Box {
        let size = try Image.textSize(text, scale: Self.scale)
        return Box(x: origin.x, y: origin.y, width: size.width + 4, height: size.height + size.baseline + 4)
    }
}
