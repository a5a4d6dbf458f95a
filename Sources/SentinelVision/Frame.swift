public import SentinelCore

/// One decoded frame with its place on the source's timeline.
public struct Frame: Sendable {
    /// 0-based position in the source (for a reconnecting live source: since the source started).
    public var index: Int
    /// Media time: the container's timestamp for files; for live sources the stream's timestamp where sane, else the
    /// monotonic clock at the grab (see `CaptureTimeline`).
    public var time: MediaTime
    public var image: Image
    /// When a capture edge received the frame from its source (nil for frames pulled straight from a recording).
    public var capturedAt: ContinuousClock.Instant?
    /// The frame's thumbnail for a detection cadence's change watch, when whoever hands the frame over made it
    /// already (a tuning trial, whose frames are blank stand-ins for the cached ones); nil: made from `image`.
    public var thumbnail: Image?
    /// Which opening of the source the frame came from: 0, then one more each time a live source was reopened after
    /// it stopped delivering. Between two openings nothing is known of the scene.
    public var opening: Int

    public init(
        index: Int, time: MediaTime, image: Image, capturedAt: ContinuousClock.Instant? = nil, thumbnail: Image? = nil,
        opening: Int = 0
    ) {
        self.index = index
        self.time = time
        self.image = image
        self.capturedAt = capturedAt
        self.thumbnail = thumbnail
        self.opening = opening
    }
}

/// Something that yields frames in order, pulled one at a time.
public protocol FrameSource: AnyObject {
    /// Names the source in messages: the file path, device or URL.
    var name: String { get }
    /// The next frame, or nil when the source has ended.
    func next() throws(VisionError) -> Frame?
    /// What went wrong along the way without ending the source, for the log once it has ended.
    var notes: [SourceNote] { get }
}

extension FrameSource {
    public var notes: [SourceNote] { [] }
}

/// A warning a source leaves for the log: an early end, repaired timestamps, a skipped image.
public struct SourceNote: Sendable, Equatable {
    public var message: String
    public var details: [String: String]
}
