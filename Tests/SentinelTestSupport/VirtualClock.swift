public import SentinelVision
import Synchronization

/// A pace clock that never blocks: a wait moves its time to the deadline at once, and is added up, so a test of
/// real-time pacing runs in milliseconds and still sees every wait the pacing asked for.
public final class VirtualClock: PaceClock {
    private let state: Mutex<Duration> = Mutex(.zero)
    private let start = ContinuousClock.now

    public init() {}

    /// How long the waits so far would have taken on the wall clock.
    public var elapsed: Duration { state.withLock { $0 } }

    public var now: ContinuousClock.Instant { start + elapsed }

    public func sleep(until deadline: ContinuousClock.Instant) {
        state.withLock { elapsed in elapsed = max(elapsed, deadline - start) }
    }
}
