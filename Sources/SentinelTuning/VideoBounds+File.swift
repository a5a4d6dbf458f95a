import Foundation
public import SentinelEval
import SentinelVision

extension VideoBounds {
    /// The bounds of the video file at `path`: the length and frame size its container states (opening a video is
    /// this module's job; the label readers only check against the bounds).
    public static func of(_ path: String) throws -> VideoBounds {
        let file = try VideoFileSource(path: path)
        return VideoBounds(
            frames: file.declaredFrameCount ?? .max, width: file.width, height: file.height,
            name: URL(fileURLWithPath: path).lastPathComponent)
    }
}
