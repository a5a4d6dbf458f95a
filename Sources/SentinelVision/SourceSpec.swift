import Foundation
public import Logging
public import SentinelCore

extension SourceSpec {
    /// Opens the source. Pacing applies to files and folders; live sources arrive at their own pace, and with
    /// `retryLive` one that cannot be opened yet is retried with backoff (reported through `onStatus`). A video file
    /// starts `from` that many seconds into it.
    public func open(
        pacing: Pacing = .fastest, clock: any PaceClock = WallClock(), folderFPS: Double = 1, retryLive: Bool = false,
        from start: Double = 0, logger: Logger,
        onStatus: @escaping @Sendable (LiveSource.Status) -> Void = { _ in }
    ) throws(VisionError) -> any FrameSource {
        switch self {
        case .file(let path):
            guard FileManager.default.fileExists(atPath: path) else {
                throw VisionError(.open, "cannot open video file \(path): no such file")
            }
            let video = try VideoFileSource(path: path)
            try video.seek(to: start)
            return PacedSource(video, pacing: pacing, clock: clock)
        case .folder(let path):
            return PacedSource(try ImageFolderSource(path: path, fps: folderFPS), pacing: pacing, clock: clock)
        case .live(let endpoint):
            return try LiveSource(endpoint, retryFirstOpen: retryLive, logger: logger, onStatus: onStatus)
        }
    }
}
