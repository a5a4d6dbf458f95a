public import Foundation
public import SentinelCore
import SentinelWire

/// Draws a scene frame by frame into a video, and records what it drew as ground truth.
///
/// Per frame: background, then every body, then every head (smaller, farther faces first, so a nearer
/// visitor hides a farther one), then scenery. The head pasted around each face is the photo's face box
/// grown by `headScale`; the face's ground-truth box is exactly where the photo's face box lands.
public struct SceneRenderer {
    public let spec: SceneSpec
    /// The folder paths in the scene are relative to.
    public let folder: URL
    static let headScale = 1.5

    public init(spec: SceneSpec, folder: URL) {
        self.spec = spec
        self.folder = folder
    }

    /// The file name (without extension) of the recording at one size.
    public func baseName(width: Int, height: Int) -> String { "\(spec.name)-\(width)x\(height)" }

    /// Renders the scene at one size to `video`, writes the ground truth beside it (`.truth.json`) and
    /// returns it.
    @discardableResult
    public func render(width: Int, height: Int, video: URL) throws -> GroundTruth {
        let photos = try spec.faces.mapValues { photo throws(VisionError) in try Image(contentsOf: path(photo.image)) }
        let backdrop = try Image(contentsOf: path(spec.background)).resized(width: width, height: height)
        let writer = try VideoWriter(path: video.path, fps: spec.fps, width: width, height: height)
        let frameCount = Int((spec.duration * spec.fps).rounded())
        let frameBox = Box(x: 0, y: 0, width: Double(width), height: Double(height))
        let occluders = spec.occluders.map {
            Box(
                x: $0[0] * Double(width), y: $0[1] * Double(height), width: $0[2] * Double(width),
                height: $0[3] * Double(height))
        }
        var frames: [GroundTruth.Frame] = []
        for index in 0..<frameCount {
            let seconds = Double(index) / spec.fps
            let image = try backdrop.clone()
            let present = spec.visitors.compactMap { visitor in
                visitor.position(at: seconds).map { placement(of: visitor, at: $0, width: width, height: height) }
            }.sorted { $0.face.height < $1.face.height }
            for p in present {
                let body = Box(
                    x: p.face.center.x - p.face.width * 1.2, y: p.face.maxY + p.face.height * 0.1,
                    width: p.face.width * 2.4, height: p.face.height * 3.2)
                let c = p.visitor.color.map { UInt8(clamping: $0) }
                try image.drawEllipse(in: body, color: Color(red: c[0], green: c[1], blue: c[2]))
            }
            for p in present {
                try image.composite(
                    photos[p.visitor.face]!, from: p.sourceHead, into: p.head, mirrored: p.visitor.mirror ?? false)
            }
            for box in occluders {
                try image.drawRectangle(box, color: Color(red: 120, green: 110, blue: 100), thickness: -1)
                try image.drawRectangle(box, color: Color(red: 60, green: 55, blue: 50), thickness: 3)
            }
            try writer.write(image)
            var faces: [GroundTruth.Face] = []
            for (i, p) in present.enumerated() {
                guard let visible = p.face.intersection(frameBox) else { continue }
                // What hides this face: scenery, and the heads drawn after it.
                let covers = occluders + present[(i + 1)...].map(\.head)
                let hidden = coveredArea(of: visible, by: covers)
                faces.append(
                    GroundTruth.Face(
                        visitor: p.visitor.id, box: visible, visible: (visible.area - hidden) / p.face.area))
            }
            frames.append(GroundTruth.Frame(index: index, time: MediaTime(seconds: seconds), faces: faces))
        }
        writer.finish()
        let truth = GroundTruth(
            recording: video.lastPathComponent, width: width, height: height, fps: spec.fps,
            zones: spec.zones.map { zone in
                GroundTruth.Zone(
                    name: zone.name,
                    polygon: Polygon(zone.polygon.map { Point(x: $0[0], y: $0[1]) }).scaled(
                        width: Double(width), height: Double(height)))
            },
            frames: frames, visitors: visits(frames: frames, width: width, height: height), occluders: occluders)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try encoder.encode(truth).write(to: Self.truthURL(for: video))
        return truth
    }

    /// Where the ground truth of a recording is kept.
    public static func truthURL(for video: URL) -> URL {
        video.deletingPathExtension().appendingPathExtension("truth.json")
    }

    /// One visitor's boxes in one frame.
    struct Placement {
        var visitor: SceneSpec.VisitorSpec
        /// The face's box in the frame (the ground truth before clipping).
        var face: Box
        /// Where the head is pasted, and the part of the photo pasted there.
        var head: Box
        var sourceHead: Box
    }

    func placement(of visitor: SceneSpec.VisitorSpec, at centre: Point, width: Int, height: Int) -> Placement {
        let photo = spec.faces[visitor.face]!
        let photoFace = Box(x: photo.face[0], y: photo.face[1], width: photo.face[2], height: photo.face[3])
        let scale = visitor.size * Double(height) / photoFace.height
        let face = Box(
            x: centre.x * Double(width) - photoFace.width * scale / 2,
            y: centre.y * Double(height) - photoFace.height * scale / 2,
            width: photoFace.width * scale, height: photoFace.height * scale)
        let grow = Self.headScale
        let sourceHead = Box(
            x: photoFace.center.x - photoFace.width * grow / 2, y: photoFace.center.y - photoFace.height * grow / 2,
            width: photoFace.width * grow, height: photoFace.height * grow)
        let head = Box(
            x: face.center.x - face.width * grow / 2, y: face.center.y - face.height * grow / 2,
            width: face.width * grow, height: face.height * grow)
        return Placement(visitor: visitor, face: face, head: head, sourceHead: sourceHead)
    }

    /// Visits and zone stays as the generator defines them. A visit runs from the first to the last frame where at
    /// least half of the face is visible (in the frame, not behind scenery or a nearer visitor). During the visit,
    /// the visitor is in a zone on the frames where the centre of its face is inside the zone's polygon, hidden
    /// for a moment or not; a stay ends at the first frame outside again, or after the visit's last frame.
    func visits(frames: [GroundTruth.Frame], width: Int, height: Int) -> [GroundTruth.Visitor] {
        return spec.visitors.compactMap { visitor in
            let visible = frames.map { frame in frame.faces.first { $0.visitor == visitor.id && !$0.isOccluded } }
            guard let first = visible.firstIndex(where: { $0 != nil }),
                let last = visible.lastIndex(where: { $0 != nil })
            else { return nil }
            var stays: [GroundTruth.Stay] = []
            for zone in spec.zones {
                let polygon = Polygon(zone.polygon.map { Point(x: $0[0] * Double(width), y: $0[1] * Double(height)) })
                var entered: MediaTime?
                for frame in frames {
                    // The unclipped face centre: where the visitor is, even with part of the face out of frame.
                    let inside =
                        (first...last).contains(frame.index)
                        && visitor.position(at: frame.time.seconds).map {
                            polygon.contains(Point(x: $0.x * Double(width), y: $0.y * Double(height)))
                        } == true
                    if inside, entered == nil { entered = frame.time }
                    if !inside, let start = entered {
                        stays.append(GroundTruth.Stay(zone: zone.name, entered: start, exited: frame.time))
                        entered = nil
                    }
                }
                // A stay open at the visit's last frame ends with the visit: no stay is longer than its visit.
                if let start = entered {
                    stays.append(GroundTruth.Stay(zone: zone.name, entered: start, exited: frames[last].time))
                }
            }
            stays.sort { $0.entered < $1.entered }
            return GroundTruth.Visitor(
                id: visitor.id, firstSeen: frames[first].time, lastSeen: frames[last].time, stays: stays)
        }
    }

    private func path(_ relative: String) -> String {
        relative.hasPrefix("/") ? relative : folder.appendingPathComponent(relative).path
    }
}

/// The area of `box` covered by the union of `covers`, measured on a grid fine enough for ground truth
/// (1/32 of the box side).
func coveredArea(of box: Box, by covers: [Box]) -> Double {
    let relevant = covers.filter { $0.intersection(box) != nil }
    guard !relevant.isEmpty else { return 0 }
    let steps = 32
    var covered = 0
    for i in 0..<steps {
        for j in 0..<steps {
            let p = Point(
                x: box.x + (Double(i) + 0.5) * box.width / Double(steps),
                y: box.y + (Double(j) + 0.5) * box.height / Double(steps))
            if relevant.contains(where: { p.x >= $0.x && p.x < $0.maxX && p.y >= $0.y && p.y < $0.maxY }) {
                covered += 1
            }
        }
    }
    return box.area * Double(covered) / Double(steps * steps)
}
