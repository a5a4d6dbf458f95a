import CSentinelCV
import Foundation
import Logging
import SentinelCore

/// Where live frames come from: a V4L2 camera or a network stream.
public enum LiveEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// `/dev/videoN`, by its index.
    case device(index: Int, width: Int? = nil, height: Int? = nil)
    /// `rtsp://`, `http://`, `https://` or another URL FFmpeg reads.
    case url(String)

    /// How logs and errors name the source: a URL's user and password are replaced by `***`.
    public var description: String {
        switch self {
        case .device(let index, _, _): "/dev/video\(index)"
        case .url(let url): url.replacing(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^\/@]*@/) { "\($0.1)***@" }
        }
    }

    func open() throws(VisionError) -> OpaquePointer {
        var out: OpaquePointer?
        switch self {
        case .device(let index, let width, let height):
            try bridge { snl_capture_open_device(Int32(index), Int32(width ?? 0), Int32(height ?? 0), &out, $0) }
        case .url(let url):
            do {
                try bridge { snl_capture_open_url(url, &out, $0) }
            } catch {
                throw VisionError(error.code, error.message.replacingOccurrences(of: url, with: description))
            }
        }
        return out!
    }
}

/// A live camera or stream. Frames carry monotonic capture time since the source started. When the
/// source stops delivering, it is reported and reopened with exponential backoff until `stop()`.
public final class LiveSource: FrameSource {
    public let endpoint: LiveEndpoint
    public var name: String { endpoint.description }
    /// How many times the source was reopened after dropping.
    public private(set) var reconnects = 0

    private let backoff: Backoff
    private let logger: Logger
    private let clock = ContinuousClock()
    private let start: ContinuousClock.Instant
    private var capture: OpaquePointer?
    private var index = 0
    private var stopped = false

    /// Opens the source now, so that a wrong device or URL fails here with a clear error.
    public init(_ endpoint: LiveEndpoint, backoff: Backoff = Backoff(), logger: Logger) throws(VisionError) {
        self.endpoint = endpoint
        self.backoff = backoff
        self.logger = logger
        self.capture = try endpoint.open()
        self.start = clock.now
    }

    deinit {
        if let capture { snl_capture_destroy(capture) }
    }

    /// Makes `next()` return nil from now on (called from the thread that pulls frames).
    public func stop() { stopped = true }

    public func next() throws(VisionError) -> Frame? {
        var attempt = 0
        while !stopped {
            if let capture {
                var image: OpaquePointer?
                var positionMs = 0.0
                do {
                    try bridge { snl_capture_read(capture, &image, &positionMs, $0) }
                } catch {
                    logger.warning("live source read failed", metadata: ["source": "\(name)", "error": "\(error)"])
                }
                if let image {
                    let time = MediaTime(seconds: (clock.now - start).seconds)
                    defer { index += 1 }
                    return Frame(index: index, time: time, image: Image(handle: image))
                }
                logger.warning("live source stopped delivering; reconnecting", metadata: ["source": "\(name)"])
                snl_capture_destroy(capture)
                self.capture = nil
            }
            let delay = backoff.delay(attempt: attempt)
            attempt += 1
            backoff.sleep(delay)
            guard !stopped else { break }
            do {
                capture = try endpoint.open()
                reconnects += 1
                logger.info("live source reopened", metadata: ["source": "\(name)", "attempt": "\(attempt)"])
            } catch {
                logger.warning(
                    "live source reopen failed",
                    metadata: ["source": "\(name)", "attempt": "\(attempt)", "retryIn": "\(backoff.delay(attempt: attempt))"])
            }
        }
        return nil
    }
}

/// Exponential backoff between reconnection attempts: `initial`, doubled each time, at most `maximum`.
public struct Backoff: Sendable {
    public var initial: Duration
    public var maximum: Duration
    /// How a delay is waited out; replaced in tests of the schedule.
    public var sleep: @Sendable (Duration) -> Void

    public init(
        initial: Duration = .milliseconds(500), maximum: Duration = .seconds(30),
        sleep: @escaping @Sendable (Duration) -> Void = { Backoff.blockingSleep($0) }
    ) {
        self.initial = initial
        self.maximum = maximum
        self.sleep = sleep
    }

    public func delay(attempt: Int) -> Duration {
        var delay = initial
        for _ in 0..<min(attempt, 32) where delay < maximum { delay *= 2 }
        return min(delay, maximum)
    }

    public static func blockingSleep(_ duration: Duration) {
        Thread.sleep(forTimeInterval: duration.seconds)
    }
}
