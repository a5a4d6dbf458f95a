import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelStore
import Synchronization

/// Where the sources hand over their masked events: the gauge reads them, and they wait for the store in a bounded
/// queue. Sources never block here: when the database cannot keep up or is down, the oldest waiting publications
/// are dropped beyond the bound, and counted.
public final class Hub: Sendable {
    private let state: Mutex<State>
    /// What the log may publish.
    private let policy: PrivacyPolicy
    private let bound: Int
    private let telemetry: Telemetry
    private let live: LiveState
    private let wake: AsyncStream<Void>.Continuation
    /// Ticks whenever something is waiting.
    let wakeups: AsyncStream<Void>

    private struct State {
        var pending: [Entry] = []
        var gauge: SentimentGauge

        /// Drops the oldest beyond `bound`; returns how many went and how many wait.
        mutating func trim(to bound: Int) -> (dropped: Int, depth: Int) {
            let excess = max(pending.count - bound, 0)
            pending.removeFirst(excess)
            return (excess, pending.count)
        }
    }

    public init(gauge: SentimentGauge, policy: PrivacyPolicy, bound: Int, telemetry: Telemetry, live: LiveState) {
        state = Mutex(State(gauge: gauge))
        self.policy = policy
        self.bound = bound
        self.telemetry = telemetry
        self.live = live
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// A publication waiting for the store, with when the frame it came from was captured (for the latency metric).
    struct Entry: Sendable {
        var publication: Publication
        var capturedAt: ContinuousClock.Instant?
    }

    /// A visitor event as the mask gave it: the store keeps its copy, and the log what may be published of that.
    /// `capturedAt` is when the frame it came from was captured, if known.
    public func submit(_ masked: [PrivacyPolicy.Output: MaskedEvent], capturedAt: ContinuousClock.Instant? = nil) {
        guard let stored = masked[.store] else { preconditionFailure("the mask makes a copy for every output") }
        let published = policy.published(stored)
        let entry = Entry(publication: .visitor(stored: stored, published: published), capturedAt: capturedAt)
        report(
            state.withLock { state in
                state.gauge.record(published)
                state.pending.append(entry)
                return state.trim(to: bound)
            })
        wake.yield()
    }

    /// Votes the gauge had before a restart: the published visitor events of its window, from the log.
    public func restoreGauge(_ events: [VisitorEvent]) {
        state.withLock { state in for event in events { state.gauge.record(event) } }
    }

    /// A frame was processed at `time` (media time on the wall clock): the gauge may publish a reading.
    public func tick(time: Date) {
        let trimmed: (dropped: Int, depth: Int)? = state.withLock { state in
            guard let reading = state.gauge.tick(now: time) else { return nil }
            state.pending.append(Entry(publication: .gauge(reading)))
            return state.trim(to: bound)
        }
        guard let trimmed else { return }
        report(trimmed)
        wake.yield()
    }

    /// Takes up to `limit` waiting publications, oldest first.
    func take(limit: Int) -> [Entry] {
        let (batch, depth) = state.withLock { state in
            let batch = Array(state.pending.prefix(limit))
            state.pending.removeFirst(batch.count)
            return (batch, state.pending.count)
        }
        report((0, depth))
        return batch
    }

    /// Puts back a batch the store could not take, ahead of what arrived since (still within the bound).
    func putBack(_ batch: [Entry]) {
        report(
            state.withLock { state in
                state.pending.insert(contentsOf: batch, at: 0)
                return state.trim(to: bound)
            })
    }

    /// Counts what the bound dropped and reports the depth, once the queue's lock is released: no other lock is
    /// ever taken while it is held.
    private func report(_ trimmed: (dropped: Int, depth: Int)) {
        if trimmed.dropped > 0 { telemetry.droppedByStoreBuffer.increment(by: trimmed.dropped) }
        telemetry.storeQueueDepth.record(trimmed.depth)
        live.updateDatabase {
            $0.dropped += trimmed.dropped
            $0.buffered = trimmed.depth
        }
    }

    var waiting: Int { state.withLock { $0.pending.count } }

    func wakeUp() { wake.yield() }
}
