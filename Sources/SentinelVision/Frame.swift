import SentinelCore

/// One decoded frame with its place on the source's timeline.
public struct Frame: Sendable {
    /// 0-based position in the source (for a reconnecting live source: since the source started).
    public var index: Int
    /// Media time: the container's timestamp for files, monotonic capture time for live sources.
    public var time: MediaTime
    public var image: Image

    public init(index: Int, time: MediaTime, image: Image) {
        self.index = index
        self.time = time
        self.image = image
    }
}

/// Something that yields frames in order, pulled one at a time.
public protocol FrameSource: AnyObject {
    /// Names the source in messages: the file path, device or URL.
    var name: String { get }
    /// The next frame, or nil when the source has ended.
    func next() throws(VisionError) -> Frame?
}
