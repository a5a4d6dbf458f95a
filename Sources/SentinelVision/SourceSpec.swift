import Foundation
public import Logging

/// What a user wrote to name a frame source, told apart by its form.
public enum SourceSpec: Sendable, Equatable, CustomStringConvertible {
    case file(String)
    case folder(String)
    case live(LiveEndpoint)

    /// `/dev/videoN` or a bare index is a camera; `scheme://...` a stream; a directory a folder of images;
    /// anything else a video file.
    public init(_ text: String) {
        if let index = Int(text), index >= 0 {
            self = .live(.device(index: index))
        } else if text.hasPrefix("/dev/video"), let index = Int(text.dropFirst("/dev/video".count)) {
            self = .live(.device(index: index))
        } else if text.contains("://") {
            self = .live(.url(text))
        } else {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: text, isDirectory: &isDirectory)
            self = exists && isDirectory.boolValue ? .folder(text) : .file(text)
        }
    }

    public var description: String {
        switch self {
        case .file(let path), .folder(let path): path
        case .live(let endpoint): endpoint.description
        }
    }

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
