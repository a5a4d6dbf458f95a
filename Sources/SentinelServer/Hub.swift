import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelStore

/// Where the sources hand over their masked events: the gauge reads them, and they wait for the store in a bounded
/// queue. Sources never block here: when the database cannot keep up or is down, the oldest waiting publications
/// are dropped beyond the bound, and counted.
public final class Hub: @unchecked Sendable {
    private let lock = NSLock()
    private var pending: [Entry] = []
    private var gauge: SentimentGauge
    /// What the log may publish, and the published times of gauge readings.
    private let policy: PrivacyPolicy
    private let bound: Int
    private let telemetry: Telemetry
    private let live: LiveState
    private let wake: AsyncStream<Void>.Continuation
    /// Ticks whenever something is waiting.
    let wakeups: AsyncStream<Void>

    public init(gauge: SentimentGauge, policy: PrivacyPolicy, bound: Int, telemetry: Telemetry, live: LiveState) {
        self.gauge = gauge
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
        lock.withLock {
            gauge.record(published.event)
            enqueue(Entry(publication: .visitor(stored: stored, published: published), capturedAt: capturedAt))
        }
    }

    /// Votes the gauge had before a restart: the published visitor events of its window, from the log.
    public func restoreGauge(_ events: [VisitorEvent]) {
        lock.withLock { for event in events { gauge.record(event) } }
    }

    /// A frame was processed at `time` (media time on the wall clock): the gauge may publish a reading.
    public func tick(time: Date) {
        lock.withLock {
            guard var reading = gauge.tick(now: time) else { return }
            reading.time = policy.coarsen(reading.time)
            enqueue(Entry(publication: .gauge(reading)))
        }
    }

    private func enqueue(_ entry: Entry) {
        pending.append(entry)
        trim()
        wake.yield()
    }

    /// Takes up to `limit` waiting publications, oldest first.
    func take(limit: Int) -> [Entry] {
        lock.withLock {
            let batch = Array(pending.prefix(limit))
            pending.removeFirst(batch.count)
            trim()
            return batch
        }
    }

    /// Puts back a batch the store could not take, ahead of what arrived since (still within the bound).
    func putBack(_ batch: [Entry]) {
        lock.withLock {
            pending.insert(contentsOf: batch, at: 0)
            trim()
        }
    }

    /// Drops the oldest beyond the bound (counted), and reports the depth. Called with the lock held; the live state
    /// is only ever locked after the hub, never before.
    private func trim() {
        let excess = pending.count - bound
        if excess > 0 {
            pending.removeFirst(excess)
            telemetry.droppedByStoreBuffer.increment(by: excess)
        }
        let depth = pending.count
        telemetry.storeQueueDepth.record(depth)
        live.updateDatabase {
            $0.dropped += max(excess, 0)
            $0.buffered = depth
        }
    }

    var waiting: Int { lock.withLock { pending.count } }

    func wakeUp() { wake.yield() }
}
