public import Foundation
public import SentinelCore
public import SentinelVision
import SentinelWire

/// Scenes the tests render themselves, with faces from Debian's photos, and what they check of a masked frame of one.
public enum Scenes {
    /// A 640x480 scene at 15 fps over the sample's background, with Debian's two portraits as faces.
    static func scene(_ name: String, seconds: Int, pillar: String, visitors: String) -> String {
        """
        name: \(name)
        fps: 15
        duration: \(seconds)
        sizes: [[640, 480]]
        background: faces/640px-IceBlockNearJoekullsarlon.jpg
        faces:
          hopper: { image: faces/grace_hopper_512x512.jpg, face: [175, 109, 183, 206] }
          astronaut: { image: faces/astronaut.png, face: [179, 58, 94, 117] }
        zones: []
        occluders:
          - \(pillar)
        visitors:
        \(visitors)
        """
    }

    /// Faces coming in at each edge of the frame, and one going behind a pillar and stopping there partly in view:
    /// the detector scores a face partly in view low or not at all.
    public static let edges = scene(
        "edges", seconds: 17, pillar: "[0.72, 0.0, 0.12, 1.0]",
        visitors: """
              - { id: left, face: hopper, size: 0.22, color: [40, 60, 150], path: [[0, -0.12, 0.45], [3, 0.3, 0.45], [4, 0.3, 0.45], [6, -0.12, 0.45]] }
              - { id: right, face: astronaut, mirror: true, size: 0.22, color: [160, 50, 40], path: [[3, 1.12, 0.5], [6, 0.9, 0.5], [7, 0.9, 0.5], [9, 1.12, 0.5]] }
              - { id: top, face: hopper, size: 0.2, color: [60, 130, 60], path: [[6, 0.4, -0.15], [9, 0.4, 0.35], [10, 0.4, 0.35], [12, 0.4, -0.15]] }
              - { id: bottom, face: astronaut, size: 0.2, color: [150, 120, 30], path: [[9, 0.2, 1.15], [12, 0.2, 0.65], [13, 0.2, 0.65], [15, 0.2, 1.15]] }
              - { id: pillar, face: hopper, mirror: true, size: 0.2, color: [90, 40, 120], path: [[10, 0.5, 0.3], [12, 0.5, 0.3], [14, 0.745, 0.3], [17, 0.745, 0.3]] }
            """)

    /// Faces there from the first frame, cut by each edge and half behind a pillar, holding still (the one on the
    /// right creeps in by 1.5 % of the width in 6 s): the empty scene is never seen.
    public static let still = scene(
        "still", seconds: 6, pillar: "[0.5, 0.0, 0.08, 1.0]",
        visitors: """
              - { id: left, face: hopper, size: 0.22, color: [40, 60, 150], path: [[0, 0.0, 0.45], [6, 0.0, 0.45]] }
              - { id: right, face: astronaut, mirror: true, size: 0.22, color: [160, 50, 40], path: [[0, 1.0, 0.55], [6, 0.985, 0.55]] }
              - { id: top, face: hopper, size: 0.2, color: [60, 130, 60], path: [[0, 0.25, 0.0], [6, 0.25, 0.0]] }
              - { id: bottom, face: astronaut, size: 0.2, color: [150, 120, 30], path: [[0, 0.75, 1.0], [6, 0.75, 1.0]] }
              - { id: pillar, face: hopper, mirror: true, size: 0.2, color: [90, 40, 120], path: [[0, 0.5, 0.5], [6, 0.5, 0.5]] }
            """)

    /// Renders `scene` at 640x480 into `folder` as `name`: the video and its ground truth. With `noise`, every
    /// pixel of every frame gets Gaussian noise of that standard deviation (grey levels), as a camera's sensor adds: a
    /// frozen scene is then never the same twice.
    public static func render(_ scene: String, in folder: URL, name: String = "scene.avi", noise: Double = 0)
        async throws -> (video: URL, truth: GroundTruth)
    {
        let file = folder.appendingPathComponent("scene.yml")
        try scene.replacingOccurrences(of: "faces/", with: Fixtures.photos.path + "/").write(
            to: file, atomically: true, encoding: .utf8)
        let video = folder.appendingPathComponent(name)
        let truth = try await Fixtures.onOwnThread {
            try SceneRenderer(spec: try SceneSpec.load(file.path), folder: folder).render(
                width: 640, height: 480, video: video)
        }
        guard noise > 0 else { return (video, truth) }
        let noisy = folder.appendingPathComponent("noisy-" + name)
        let made = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                """
                import cv2, numpy, sys
                source = cv2.VideoCapture(sys.argv[1])
                fps = source.get(cv2.CAP_PROP_FPS)
                writer = cv2.VideoWriter(sys.argv[2], cv2.VideoWriter_fourcc(*"MJPG"), fps, (640, 480))
                random = numpy.random.default_rng(7)
                while True:
                    ok, frame = source.read()
                    if not ok:
                        break
                    noise = random.standard_normal(frame.shape, dtype=numpy.float32) * float(sys.argv[3])
                    writer.write(numpy.clip(frame + noise, 0, 255).astype(numpy.uint8))
                writer.release()
                """,
                video.path, noisy.path, "\(noise)",
            ], timeout: 600)
        guard made.status == 0, !made.timedOut else {
            throw TestSupportError(
                "adding noise to \(video.lastPathComponent): "
                    + (made.timedOut ? "not done in 600 s" : "exit \(made.status): \(made.errors)"))
        }
        return (noisy, truth)
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

    /// `scene` rendered and played over and over by the camera stand-in, with its ground truth and its first frame as
    /// drawn (what a masked frame of the camera is compared with).
    public static func servedLive(_ scene: String, in folder: URL) async throws -> (
        camera: RTSPCamera, truth: GroundTruth, original: Image
    ) {
        let (video, truth) = try await render(scene, in: folder, name: "live.mp4")
        guard let first = try VideoFileSource(path: video.path).next() else {
            throw VisionError(.emptyFrame, "\(video.path) rendered no frame")
        }
        return (try await RTSPCamera([("cam", video.path)], loop: true), truth, first.image)
    }
}
