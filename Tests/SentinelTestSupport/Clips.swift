public import Foundation
import SentinelVision

extension Fixtures {
    /// The sample showroom scene's first `seconds`, rendered at 320x240 (Motion JPEG) into a new temporary folder:
    /// a clip for tests that run whole commands and cannot wait for the 40 s recording.
    public static func showroomClip(seconds: Double) throws -> URL {
        var spec = try SceneSpec.load(root.appendingPathComponent("Recordings/showroom.yml").path)
        spec.duration = seconds
        let video = try temporaryFolder().appendingPathComponent("clip.avi")
        try SceneRenderer(spec: spec, folder: root.appendingPathComponent("Recordings")).render(
            width: 320, height: 240, video: video)
        return video
    }
}
