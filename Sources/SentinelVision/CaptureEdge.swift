import Foundation
public import SentinelCore
import Synchronization

/// The entrance of a live graph: a source read on a thread of its own into a small buffer, so that a camera is
/// never made to wait for analysis (frames would queue inside the decoder and arrive late).
///
/// Policy at this boundary, stated once:
/// - `.dropOldest` (live cameras, and recordings played at a pace): when analysis is behind, the oldest waiting frame
///   is dropped and counted; analysis always gets the newest frames, each stamped when it was captured. With a
///   `FramePool`, the frames beyond `ownFrames` are drawn from the box's budget, shared with its other cameras.
/// - `.block` (a recording read as fast as possible): the reader waits for analysis; nothing is dropped.
///
/// Thread use: the source lives in a `Mutex` that only the capture thread takes, for as long as it captures; the
/// buffer and counts live in another. A side that has to wait (analysis for a frame, capture for room) says so
/// under the lock and sleeps on its own semaphore, which the other side signals.
public final class CaptureEdge: FrameSource, Sendable {
    public enum Policy: Sendable, Equatable {
        case dropOldest
        case block
    }

    /// Exact counts since the edge started.
    public struct Counts: Sendable, Equatable {
        /// Frames the source delivered.
        public var captured = 0
        /// Frames handed to analysis.
        public var delivered = 0
        /// Frames dropped because analysis was behind.
        public var dropped = 0

        public init(captured: Int = 0, delivered: Int = 0, dropped: Int = 0) {
            self.captured = captured
            self.delivered = delivered
            self.dropped = dropped
        }
    }

    public let name: String
    public let capacity: Int
    public let policy: Policy
    /// Where frames beyond `ownFrames` come from; nil: all `capacity` are this edge's own.
    private let pool: FramePool?
    /// The frames an edge with a pool holds whatever its pool says.
    public static let ownFrames = 2
    private let source: Mutex<(any FrameSource)?>
    private let state = Mutex(State())
    /// Signalled for a consumer that waits for a frame, and for a capture that waits for room.
    private let frameWaiter = DispatchSemaphore(value: 0)
    private let roomWaiter = DispatchSemaphore(value: 0)
    /// Ends this edge's capture; set by `stop()` or when the shutdown flag given at init is set.
    private let stopFlag = StopFlag()

    private struct State {
        var started = false
        var buffer: [Frame] = []
        /// The bytes drawn from the pool for each place held beyond the edge's own, most recent last.
        var drawn: [Int] = []
        var counts = Counts()
        var ended = false
        var failure: VisionError?
        var notes: [SourceNote] = []
        var consumerWaits = false
        var captureWaits = false
    }

    /// `capacity` frames wait at most (`sentinel run` holds 8, half a second at 15 fps, to carry a camera through a
    /// burst; fewer keeps latency lower); with a `pool`, those beyond `ownFrames` while it has room. Setting
    /// `shutdown` ends capture too.
    public init(
        _ source: sending any FrameSource, capacity: Int = 2, policy: Policy, pool: FramePool? = nil,
        shutdown: StopFlag? = nil
    ) {
        precondition(capacity >= 1, "a capture buffer holds at least one frame")
        name = source.name
        self.capacity = capacity
        self.policy = policy
        self.pool = pool
        if let live = source as? LiveSource { stopFlag.onSet { [flag = live.stopFlag] in flag.set() } }
        self.source = Mutex(source)
        stopFlag.onSet { [weak self] in self?.end(discarding: true) }
        shutdown?.onSet { [stopFlag] in stopFlag.set() }
    }

    /// Starts the capture thread, once. A live source that is stopped while blocked in its decoder (opening an
    /// unreachable URL) finishes that call on its own; `next()` does not wait for it.
    public func start() {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else { return }
        let thread = Thread { [self] in
            source.withLock { source in
                guard let owned = source else { return }
                capture(from: owned)
                source = nil
            }
        }
        thread.name = "capture \(name)"
        thread.start()
    }

    /// Ends capture: `next()` returns nil at once, and the capture thread stops after its current read.
    public func stop() { stopFlag.set() }

    deinit { state.withLock { giveBack(&$0, all: true) } }

    /// Marks the edge ended and wakes whoever waits. The frames waiting are still taken after a source's end, and
    /// `discarding` (stopped) at once, their places given back to the pool.
    private func end(failure: VisionError? = nil, notes: [SourceNote] = [], discarding: Bool = false) {
        state.withLock { state in
            state.ended = true
            if failure != nil { state.failure = failure }
            state.notes += notes
            if discarding { giveBack(&state, all: true) }
        }
        frameWaiter.signal()
        roomWaiter.signal()
    }

    public var snapshot: Counts { state.withLock { $0.counts } }

    /// What the source left for the log when it ended (empty before).
    public var notes: [SourceNote] { state.withLock { $0.notes } }

    /// The oldest waiting frame; blocks until one is captured. Nil once the source has ended or the edge stopped; a
    /// source that failed throws its error once what it captured before has been taken.
    public func next() throws(VisionError) -> Frame? {
        switch try next(idleAfter: nil) {
        case .frame(let frame): frame
        case .idle, .end: nil
        }
    }

    /// What `next(idleAfter:)` found.
    public enum Take {
        case frame(Frame)
        /// No frame for the time asked (a camera that is down or reconnecting).
        case idle
        case end
    }

    /// The oldest waiting frame, or `.idle` when none arrives within `idleAfter` seconds.
    public func next(idleAfter seconds: Double?) throws(VisionError) -> Take {
        let deadline = seconds.map { DispatchTime.now() + $0 }
        while true {
            let taken: (take: Result<Take, VisionError>?, wakeCapture: Bool) = state.withLock { state in
                if stopFlag.isSet { return (.success(.end), false) }
                if !state.buffer.isEmpty {
                    state.counts.delivered += 1
                    defer { state.captureWaits = false }
                    let frame = state.buffer.removeFirst()
                    giveBack(&state)
                    return (.success(.frame(frame)), state.captureWaits)
                }
                if state.ended {
                    defer { state.failure = nil }
                    return (state.failure.map { .failure($0) } ?? .success(.end), false)
                }
                state.consumerWaits = true
                return (nil, false)
            }
            if taken.wakeCapture { roomWaiter.signal() }
            if let take = taken.take { return try take.get() }
            if let deadline {
                if frameWaiter.wait(timeout: deadline) == .timedOut {
                    state.withLock { $0.consumerWaits = false }
                    return .idle
                }
            } else {
                frameWaiter.wait()
            }
        }
    }

    /// Gives the pool back the places the waiting frames no longer fill (`all`: every frame waiting dropped).
    private func giveBack(_ state: inout State, all: Bool = false) {
        if all { state.buffer = [] }
        guard let pool else { return }
        while !state.drawn.isEmpty && state.buffer.count < Self.ownFrames + state.drawn.count {
            pool.giveBack(state.drawn.removeLast())
        }
    }

    private func capture(from source: any FrameSource) {
        while !stopFlag.isSet {
            let frame: Frame?
            do {
                frame = try source.next()
            } catch {
                end(failure: error, notes: source.notes)
                return
            }
            guard var frame else { break }
            frame.capturedAt = .now
            while true {
                let (stored, wakeConsumer) = state.withLock { state -> (Bool, Bool) in
                    if state.ended { return (true, false) }
                    if state.buffer.count >= Self.ownFrames + state.drawn.count, state.buffer.count < capacity,
                        let pool
                    {
                        let bytes = frame.image.width * frame.image.height * 3
                        if pool.draw(bytes) { state.drawn.append(bytes) }
                    }
                    if state.buffer.count
                        >= (pool == nil ? capacity : min(capacity, Self.ownFrames + state.drawn.count))
                    {
                        guard policy == .dropOldest else {
                            state.captureWaits = true
                            return (false, false)
                        }
                        state.buffer.removeFirst()
                        state.counts.dropped += 1
                    }
                    state.counts.captured += 1
                    state.buffer.append(frame)
                    defer { state.consumerWaits = false }
                    return (true, state.consumerWaits)
                }
                if wakeConsumer { frameWaiter.signal() }
                if stored { break }
                roomWaiter.wait()
            }
        }
        end(notes: source.notes)
    }
}

/// Media time for frames of a live stream: the stream's own timestamps where they are sane, else the monotonic
/// clock read right after the grab.
///
/// Each opening of the source (`opening(at:)`) anchors stream time anew: its first frame is placed when the opening
/// began, the rest follow the stream. A decoder that takes seconds to open (FFmpeg reads 2-3 s of an H.264 stream
/// before it says it is open) then hands over what it read in a burst; anchored at its arrival instead, those frames
/// would be squeezed into a few milliseconds or, once the stream ran ahead of the clock, pinned to one instant. Stream
/// time is used while it keeps increasing and stays within `tolerance`, plus the time the opening took, of the
/// monotonic clock; a stream that jumps or goes back is anchored again at that frame, so media time never goes back.
public struct CaptureTimeline: Sendable {
    /// How far stream time may drift from the monotonic clock, beyond the time the opening took, before it is no
    /// longer trusted.
    public var tolerance: Double
    /// How soon after an opening's first frame a frame counts as part of the burst the decoder held when it opened.
    static let burst = 0.05
    private var offset: Double?
    private var last: MediaTime?
    private var lastStream: Double?
    /// When the current opening began, and when its first frame arrived (monotonic seconds since the start).
    private var openedAt = 0.0  // a new timeline's first opening begins when the source starts
    private var firstFrameAt: Double?
    /// Frames stamped from the stream's timestamps, and from the monotonic clock.
    public private(set) var streamStamped = 0
    public private(set) var clockStamped = 0

    public init(tolerance: Double = 1.0) { self.tolerance = tolerance }

    /// The source is being opened (again) from `elapsed` seconds after it started: its stream time is anchored anew.
    public mutating func opening(at elapsed: Double) {
        openedAt = elapsed
        offset = nil
        lastStream = nil
        firstFrameAt = nil
    }

    /// The media time of a frame grabbed `elapsed` seconds (monotonic) after the source started, whose stream says
    /// `streamSeconds` (nil or non-finite when it says nothing).
    public mutating func time(elapsed: Double, streamSeconds: Double?) -> MediaTime {
        let firstFrameAt = self.firstFrameAt ?? elapsed
        self.firstFrameAt = firstFrameAt
        var time = MediaTime(seconds: elapsed)
        // FFmpeg says 0 both for a stream's first frames and for a stream without timestamps: 0 is a time only for
        // the frames of the opening burst before any other time.
        let zeroCounts = (lastStream ?? 0) == 0 && elapsed - firstFrameAt <= Self.burst
        if let stream = streamSeconds, stream > 0 || (stream == 0 && zeroCounts),
            MediaTime(decoderSeconds: stream) != nil
        {
            let floor = max(openedAt, last.map { $0.seconds } ?? 0)
            if offset == nil { offset = floor - stream }
            var candidate = stream + offset!
            let drift = tolerance + max(0, firstFrameAt - openedAt)
            if abs(candidate - elapsed) > drift || lastStream.map({ stream < $0 }) == true {
                // A jump or a step back (a restarted stream): anchor again here.
                offset = elapsed - stream
                candidate = elapsed
            }
            time = MediaTime(seconds: candidate)
            lastStream = stream
            streamStamped += 1
        } else {
            clockStamped += 1
        }
        if let last, time <= last { time = last + MediaTime(microseconds: 1) }
        last = time
        return time
    }
}

/// A flag set once, from any thread, that a thread can also sleep on. Its state lives in a `Mutex`; a sleeper waits
/// on a semaphore of its own that the flag's observers signal.
public final class StopFlag: Sendable {
    private struct State {
        var stopped = false
        var observers: [UInt64: @Sendable () -> Void] = [:]
        var nextObserver: UInt64 = 0
    }
    private let state = Mutex(State())

    public init() {}

    public var isSet: Bool { state.withLock { $0.stopped } }

    public func set() {
        let observers = state.withLock { state in
            guard !state.stopped else { return [@Sendable () -> Void]() }
            state.stopped = true
            defer { state.observers = [:] }
            // In the order they were registered (a dictionary's order is random): a sleeper that registered after
            // an observer is woken after that observer has run.
            return state.observers.sorted { $0.key < $1.key }.map(\.value)
        }
        for observer in observers { observer() }
    }

    /// Calls `observer` once, when the flag is set (at once if it is set already).
    public func onSet(_ observer: @escaping @Sendable () -> Void) { _ = observe(observer) }

    /// Sleeps until set or `seconds` pass; true when set.
    @discardableResult
    public func wait(seconds: Double) -> Bool {
        let semaphore = DispatchSemaphore(value: 0)
        let id = observe { semaphore.signal() }
        _ = semaphore.wait(timeout: .now() + seconds)
        if let id { state.withLock { _ = $0.observers.removeValue(forKey: id) } }
        return isSet
    }

    /// Registers `observer` (its id, to take it back), or calls it at once if the flag is set (nil).
    private func observe(_ observer: @escaping @Sendable () -> Void) -> UInt64? {
        let id: UInt64? = state.withLock { state in
            guard !state.stopped else { return nil }
            state.nextObserver += 1
            state.observers[state.nextObserver] = observer
            return state.nextObserver
        }
        if id == nil { observer() }
        return id
    }
}
