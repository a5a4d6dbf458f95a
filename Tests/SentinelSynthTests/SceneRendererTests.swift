import Foundation
import SentinelCore
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

@Suite("Sample recording generator", .computing)
struct SceneRendererTests {
    static let scenePath = Fixtures.root.appendingPathComponent("Recordings/showroom.yml").path

    /// The showroom scene, cut to its first `seconds` and rendered small into a temporary folder.
    func renderShowroom(seconds: Double, width: Int = 640, height: Int = 480) throws -> (GroundTruth, String, SceneSpec)
    {
        var spec = try SceneSpec.load(Self.scenePath)
        spec.duration = seconds
        let video = try Fixtures.temporaryFolder().appendingPathComponent("scene.avi")
        let renderer = SceneRenderer(spec: spec, folder: Fixtures.root.appendingPathComponent("Recordings"))
        let truth = try renderer.render(width: width, height: height, video: video)
        return (truth, video.path, spec)
    }

    @Test("every fully visible ground-truth face box shows the photo's face, and a shifted box does not")
    func truthMatchesPixels() throws {
        let (truth, video, spec) = try renderShowroom(seconds: 12)
        let photos = try spec.faces.mapValues {
            try Image(
                contentsOf: Fixtures.root.appendingPathComponent("Recordings").appendingPathComponent($0.image).path)
        }
        let source = try VideoFileSource(path: video)
        var checked = 0
        while let frame = try source.next() {
            for face in truth.frames[frame.index].faces where face.visible > 0.99 && face.box.width > 30 {
                let visitor = try #require(spec.visitors.first { $0.id == face.visitor })
                let photo = spec.faces[visitor.face]!
                let photoFace = Box(x: photo.face[0], y: photo.face[1], width: photo.face[2], height: photo.face[3])
                // Compare against the photo as drawn (mirrored visitors are drawn flipped).
                let reference = try photos[visitor.face]!.clone()
                let drawn = try Image(width: Int(face.box.width.rounded()), height: Int(face.box.height.rounded()))
                try drawn.composite(
                    reference, from: photoFace, into: Box(x: 0, y: 0, width: face.box.width, height: face.box.height),
                    feather: 0, mirrored: visitor.mirror ?? false)
                let inner = Box(
                    x: face.box.width * 0.25, y: face.box.height * 0.25, width: face.box.width * 0.5,
                    height: face.box.height * 0.5)
                let here = try frame.image.difference(
                    in: Box(x: face.box.x + inner.x, y: face.box.y + inner.y, width: inner.width, height: inner.height),
                    from: drawn, region: inner)
                let shifted = try frame.image.difference(
                    in: Box(
                        x: face.box.x + inner.x + face.box.width * 0.5, y: face.box.y + inner.y, width: inner.width,
                        height: inner.height),
                    from: drawn, region: inner)
                // Measured at 640x480: 5.7-14.1 where the face is (resampling and MJPEG), about 56 half a face away.
                #expect(here < 16, "frame \(frame.index) \(face.visitor): difference \(here)")
                #expect(shifted > here * 3, "frame \(frame.index) \(face.visitor): shifted \(shifted) vs \(here)")
                checked += 1
            }
        }
        #expect(checked > 100)
    }

    @Test("frames, timestamps and visits in the ground truth follow the scene")
    func truthTimeline() throws {
        let (truth, _, _) = try renderShowroom(seconds: 12)
        #expect(truth.frames.count == 180)
        #expect(truth.frames[45].time == MediaTime(seconds: 3))
        let v1 = try #require(truth.visitors.first { $0.id == "v1" })
        // v1 walks in from x -0.05 at 1 s at 0.13 frame widths a second; half its face is in view once its centre
        // crosses x = 0, at 1.385 s: frame 21.
        #expect(v1.firstSeen == MediaTime(seconds: 21 / 15.0))
        // v1 reaches the display (x 0.35) on its way to 0.47 at 5 s: x = -0.05 + 0.52 * (t - 1) / 4.
        let display = try #require(v1.stays.first { $0.zone == "display" })
        let expected = 1 + (0.35 + 0.05) / 0.52 * 4
        #expect(abs(display.entered.seconds - expected) <= 1 / 15.0 + 1e-9)
        // Cut at 12 s while v1 is still at the display: the stay ends with the visit, at the last frame.
        #expect(display.exited == MediaTime(seconds: 179 / 15.0) && display.exited == v1.lastSeen)
    }

    @Test("a face behind the pillar is marked hidden")
    func occlusion() throws {
        let (truth, _, spec) = try renderShowroom(seconds: 12)
        let pillar = Box(x: spec.occluders[0][0] * 640, y: 0, width: spec.occluders[0][2] * 640, height: 480)
        let hidden = truth.frames.flatMap(\.faces).filter {
            $0.visitor == "v2" && $0.box.center.x > pillar.x && $0.box.center.x < pillar.maxX
        }
        #expect(!hidden.isEmpty)
        #expect(hidden.allSatisfy { $0.visible < 0.75 })
    }

    @Test("scene problems are reported with their field paths")
    func validation() throws {
        var spec = try SceneSpec.load(Self.scenePath)
        spec.fps = 0
        spec.visitors[1].face = "nobody"
        spec.visitors[2].path[2][0] = 1
        spec.zones[0].polygon = [[0, 0], [1, 1]]
        #expect(
            spec.problems() == [
                "fps: must be positive",
                "zones[0].polygon: needs at least three [x, y] points",
                "visitors[1].face: no face named nobody",
                "visitors[2].path[2]: time 1.0 comes before the previous keyframe",
            ])
    }
}
