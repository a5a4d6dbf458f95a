public import Foundation
public import SentinelCore
public import SentinelVision
import SentinelWire

/// Scenes the tests render themselves, with faces from Debian's photos, and what they check of a masked frame of one.
public enum Scenes {
    /// Faces there from the first frame, cut by each edge and half behind a pillar, holding still (the one on the
    /// right creeps in by 1.5 % of the width in 6 s): the empty scene is never seen.
    public static let still = """
        name: still
        fps: 15
        duration: 6
        sizes: [[640, 480]]
        background: faces/640px-IceBlockNearJoekullsarlon.jpg
        faces:
          hopper: { image: faces/grace_hopper_512x512.jpg, face: [175, 109, 183, 206] }
          astronaut: { image: faces/astronaut.png, face: [179, 58, 94, 117] }
        zones: []
        occluders:
          - [0.5, 0.0, 0.08, 1.0]
        visitors:
          - { id: left, face: hopper, size: 0.22, color: [40, 60, 150], path: [[0, 0.0, 0.45], [6, 0.0, 0.45]] }
          - { id: right, face: astronaut, mirror: true, size: 0.22, color: [160, 50, 40], path: [[0, 1.0, 0.55], [6, 0.985, 0.55]] }
          - { id: top, face: hopper, size: 0.2, color: [60, 130, 60], path: [[0, 0.25, 0.0], [6, 0.25, 0.0]] }
          - { id: bottom, face: astronaut, size: 0.2, color: [150, 120, 30], path: [[0, 0.75, 1.0], [6, 0.75, 1.0]] }
          - { id: pillar, face: hopper, mirror: true, size: 0.2, color: [90, 40, 120], path: [[0, 0.5, 0.5], [6, 0.5, 0.5]] }
        """

    /// Renders `scene` at 640x480 into `folder` as `name`: the video and its ground truth.
    public static func render(_ scene: String, in folder: URL, name: String = "scene.avi") async throws -> (
        video: URL, truth: GroundTruth
    ) {
        let file = folder.appendingPathComponent("scene.yml")
        try scene.replacingOccurrences(of: "faces/", with: Fixtures.photos.path + "/").write(
            to: file, atomically: true, encoding: .utf8)
        let video = folder.appendingPathComponent(name)
        let truth = try await Fixtures.onOwnThread {
            try SceneRenderer(spec: try SceneSpec.load(file.path), folder: folder).render(
                width: 640, height: 480, video: video)
        }
        return (video, truth)
    }

    /// The faces of `faces` (boxes in `original`'s pixels) that kept their detail in `shown`, as `MaskLeakScore`
    /// counts a leak: more than a quarter of the original's detail there, or detail correlated above 0.5 with it.
    public static func recognisable(_ faces: [GroundTruth.Face], in shown: Image, original: Image) throws -> [String] {
        let whole = Box(x: 0, y: 0, width: Double(original.width), height: Double(original.height))
        return try faces.compactMap { face in
            guard let seen = face.box.intersection(whole) else { return nil }
            let ratio = try shown.detail(in: seen) / max(try original.detail(in: seen), 1e-9)
            let correlation = try shown.detailCorrelation(in: seen, with: original)
            return ratio > 0.25 || correlation > 0.5
                ? "\(face.visitor) (ratio \(ratio), correlation \(correlation))" : nil
        }
    }
}
