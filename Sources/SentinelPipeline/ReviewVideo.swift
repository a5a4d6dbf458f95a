import SentinelCore
import SentinelPrivacy
import SentinelVision

/// How the review video and the zone editor's snapshots hide faces: a square about each face box's centre, its side
/// the box's longer side times the mask scale (a narrow box is a face partly hidden, and the hidden part may come out
/// next), over every detection, every followed visitor, and (with `followTracks`) every visitor the tracker predicts
/// where detection missed it in this frame, a predicted face's grown by a further `growthPerSecond` sides per second
/// unseen, as its position grows less certain. A single missed detection therefore does not show a face.
public struct FaceMasks: Sendable {
    public let settings: ReviewSettings

    public init(settings: ReviewSettings) { self.settings = settings }

    /// The regions hidden in a frame.
    public func regions(_ frame: MaskedFrame) -> [Box] {
        frame.detections.map { grown($0) } + visible(frame).map { grown($0.box, unseen: $0.unseenSeconds) }
    }

    /// Hides every region of `frame` in `image` (the frame's picture, or a copy with drawings on it).
    public func hide(in image: Image, _ frame: MaskedFrame) throws(VisionError) {
        for region in regions(frame) { try image.mask(region, style: settings.mask) }
    }

    /// The visitors shown (predicted ones only when masks follow tracks).
    func visible(_ frame: MaskedFrame) -> [MaskedFrame.Face] {
        frame.faces.filter { settings.followTracks || !$0.predicted }
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
    private var writer: VideoWriter?

    public init(path: String, fps: Double, zones: [PipelineDefinition.ZoneSpec], settings: ReviewSettings) {
        self.path = path
        self.fps = fps
        masks = FaceMasks(settings: settings)
        self.zones = zones
    }

    public func write(_ frame: MaskedFrame) throws(VisionError) {
        let image = try frame.image.clone()
        // Zones first, so that the masks also soften the zone lines crossing a face.
        let zoneColour = Color(red: 255, green: 200, blue: 0)
        for zone in zones {
            let polygon = zone.definition(width: image.width, height: image.height).polygon
            try image.drawPolygon(polygon, color: zoneColour, thickness: 1)
            if let corner = polygon.vertices.min(by: { ($0.y, $0.x) < ($1.y, $1.x) }) {
                try image.drawText(
                    zone.name, at: Point(x: corner.x + 4, y: corner.y + 16), scale: 0.5, color: zoneColour)
            }
        }
        try masks.hide(in: image, frame)
        // Outlines and labels go around the masked region, not over the face.
        for face in masks.visible(frame) {
            let colour = face.predicted ? Color(red: 160, green: 160, blue: 160) : Color(red: 0, green: 220, blue: 0)
            let region = masks.grown(face.box, unseen: face.unseenSeconds)
            try image.drawRectangle(region, color: colour, thickness: 1)
            try image.drawText(
                String(face.label.prefix(8)), at: Point(x: region.x, y: max(12, region.y - 4)), scale: 0.45,
                color: colour)
        }
        if writer == nil { writer = try VideoWriter(path: path, fps: fps, width: image.width, height: image.height) }
        try writer?.write(image)
    }

    public func finish() { writer?.finish() }
}
