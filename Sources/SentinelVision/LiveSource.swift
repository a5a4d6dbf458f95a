import CSentinelCV
import Foundation
public import Logging
public import SentinelCore

extension LiveEndpoint {
    func open() throws(VisionError) -> LiveCapture {
        var out: OpaquePointer?
        switch self {
        case .device(let index, let width, let height):
            try bridge { snl_capture_open_device(Int32(index), Int32(width ?? 0), Int32(height ?? 0), &out, $0) }
            return LiveCapture(out!, relay: nil)
        case .url(let url):
            try StreamDiagnosis(url)?.preflight(describing: description)
            // FFmpeg is given the user and password of no URL: a relay holds them (see CredentialRelay).
            let relay = try CredentialRelay(url)
            do {
                try bridge { snl_capture_open_url(relay?.local ?? url, &out, $0) }
            } catch {
                relay?.close()
                if let refusal = relay?.refusal { throw VisionError(.open, "\(description) \(refusal)") }
                throw VisionError(
                    error.code,
                    error.message.replacingOccurrences(of: relay?.local ?? url, with: description)
                        .replacingOccurrences(of: url, with: description))
            }
            return LiveCapture(out!, relay: relay)
        }
    }
}

/// An open camera or stream: OpenCV's capture and, for a URL with a user and password, the relay FFmpeg reads it
/// through. Both end with it.
final class LiveCapture {
    let handle: OpaquePointer
    private let relay: CredentialRelay?

    init(_ handle: OpaquePointer, relay: CredentialRelay?) {
        self.handle = handle
        self.relay = relay
    }

    deinit {
        snl_capture_destroy(handle)
        relay?.close()
    }
}

/// A live camera or stream. Frames are stamped by a `CaptureTimeline`: the stream's own timestamps where sane, else
/// the monotonic clock right after the grab, in seconds since the source started. When the source stops delivering
/// (or cannot be opened, with `retryFirstOpen`), it is reported and reopened with exponential backoff until `stop()`.
public final class LiveSource: FrameSource {
    /// What the source is doing, as `onStatus` hears it.
    public enum Status: Sendable, Equatable {
        case running
        /// Waiting `retryIn` before attempt number `attempt` to open it again.
        case reconnecting(attempt: Int, retryIn: Duration, error: String?)
    }

    public let endpoint: LiveEndpoint
    public var name: String { endpoint.description }
    /// How many times the source was reopened after dropping.
    public private(set) var reconnects = 0

    private let backoff: Backoff
    private let logger: Logger
    private let onStatus: @Sendable (Status) -> Void
    private let start = ContinuousClock.now
    private var capture: LiveCapture?
    private var index = 0
    private var timeline = CaptureTimeline()
    /// Set from any thread to end `next()`, also from within a backoff wait.
    public let stopFlag = StopFlag()

    /// With `retryFirstOpen` false the source is opened now, so that a wrong device or URL fails here with a clear
    /// error (the CLI's `detect`); with true (`sentinel run`), a camera that is down at start is retried like one
    /// that drops later.
    public init(
        _ endpoint: LiveEndpoint, backoff: Backoff = Backoff(), retryFirstOpen: Bool = false, logger: Logger,
        onStatus: @escaping @Sendable (Status) -> Void = { _ in }
    ) throws(VisionError) {
        self.endpoint = endpoint
        self.backoff = backoff
        self.logger = logger
        self.onStatus = onStatus
        if !retryFirstOpen {
            capture = try endpoint.open()
            onStatus(.running)
        }
    }

    /// Makes `next()` return nil from now on, also from within a backoff wait. Any thread.
    public func stop() { stopFlag.set() }

    public func next() throws(VisionError) -> Frame? {
        var attempt = 0
        var lastError: String?
        while !stopFlag.isSet {
            if let capture {
                var image: OpaquePointer?
                var positionMs = 0.0
                do {
                    try bridge { snl_capture_read(capture.handle, &image, &positionMs, $0) }
                } catch {
                    logger.warning("live source read failed", metadata: ["source": "\(name)", "error": "\(error)"])
                }
                if let image {
                    let elapsed = (ContinuousClock.now - start).seconds
                    let time = timeline.time(elapsed: elapsed, streamSeconds: positionMs / 1000)
                    defer { index += 1 }
                    return Frame(index: index, time: time, image: Image(handle: image), opening: reconnects)
                }
                logger.warning(
                    "live source stopped delivering; reconnecting",
                    metadata: ["source": "\(name)", "next attempt": "1", "retryIn": "\(backoff.delay(attempt: 0))"])
                self.capture = nil
            }
            let delay = backoff.delay(attempt: attempt)
            attempt += 1
            onStatus(.reconnecting(attempt: attempt, retryIn: delay, error: lastError))
            if backoff.wait(delay, stopFlag) { break }
            do {
                timeline.opening(at: (ContinuousClock.now - start).seconds)
                capture = try endpoint.open()
                if index > 0 { reconnects += 1 }
                logger.info("live source opened", metadata: ["source": "\(name)", "attempt": "\(attempt)"])
                onStatus(.running)
            } catch {
                lastError = error.message
                logger.warning(
                    "live source open failed",
                    metadata: [
                        "source": "\(name)", "attempt": "\(attempt)", "next attempt": "\(attempt + 1)",
                        "retryIn": "\(backoff.delay(attempt: attempt))", "error": "\(error.message)",
                    ])
            }
        }
        return nil
    }
}

/// Exponential backoff between reconnection attempts: `initial`, doubled each time, at most `maximum`.
public struct Backoff: Sendable {
    public var initial: Duration
    public var maximum: Duration
    /// How a delay is waited out: until it passes or the flag is set (true when set). Replaced in tests of the
    /// schedule.
    public var wait: @Sendable (Duration, StopFlag) -> Bool

    public init(
        initial: Duration = .milliseconds(500), maximum: Duration = .seconds(30),
        wait: @escaping @Sendable (Duration, StopFlag) -> Bool = { $1.wait(seconds: $0.seconds) }
    ) {
        self.initial = initial
        self.maximum = maximum
        self.wait = wait
    }

    public func delay(attempt: Int) -> Duration {
        var delay = initial
        for _ in 0..<min(attempt, 32) where delay < maximum { delay *= 2 }
        return min(delay, maximum)
    }
}
