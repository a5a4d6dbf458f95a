import CoreMetrics
public import Foundation
import SentinelCore
public import SentinelPrivacy
public import SentinelStore
public import SentinelWire
import Synchronization

/// Where the sources hand over what the mask let through, for the store writer: a bounded queue and nothing else.
/// Sources never block here: when the database cannot keep up or is down, the oldest waiting entries are dropped
/// beyond the bound, and counted.
public final class Hub: Sendable {
    private let queue: Mutex<Queue>
    private let bound: Int
    private let telemetry: Telemetry
    private let wake: AsyncStream<Void>.Continuation
    /// Ticks whenever something is waiting.
    let wakeups: AsyncStream<Void>

    /// What waits, in the order the sources handed it over.
    enum Entry: Sendable {
        /// A visitor event as the mask let it through; `capturedAt` is when its frame was captured, if known (for the
        /// latency metric); `origin` where it was logged first, if another box forwarded it.
        case event(Masked, capturedAt: ContinuousClock.Instant?, origin: LogEntry.Origin? = nil)
        /// A frame was processed at this time (media time on the wall clock): the gauge may make a reading once what
        /// came before is committed.
        case tick(Date)
        /// A gauge reading, the gauge's own or one another box forwarded: logged as it is.
        case logEntry(LogEntry, capturedAt: ContinuousClock.Instant?)
    }

    private struct Queue {
        var pending: [Entry] = []
        /// Entries the writer took and has not written or put back yet.
        var writing = 0
        var dropped = 0
        /// Forwarded entries handed over so far, and of those (the oldest first) the ones committed or dropped.
        var forwarded = 0
        var settled = 0

        /// Entries held in memory: waiting, or in the writer's hands until the store has them.
        var held: Int { pending.count + writing }

        /// Drops the oldest beyond `bound`; returns how many went.
        mutating func trim(to bound: Int) -> Int {
            let excess = max(pending.count - bound, 0)
            settled += pending.prefix(excess).filter(\.isForwarded).count
            pending.removeFirst(excess)
            dropped += excess
            return excess
        }
    }

    public init(bound: Int, telemetry: Telemetry) {
        queue = Mutex(Queue())
        self.bound = bound
        self.telemetry = telemetry
        (wakeups, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
    }

    /// A visitor event as the mask let it through.
    public func submit(_ masked: Masked, capturedAt: ContinuousClock.Instant? = nil) {
        append(.event(masked, capturedAt: capturedAt))
    }

    /// What another box logged and forwarded (`sentinel fleet`): a visitor event as this box's policy masks it.
    /// Returns its place among the forwarded entries (see `settled`).
    @discardableResult
    public func forward(_ masked: Masked, origin: LogEntry.Origin) -> Int {
        append(.event(masked, capturedAt: nil, origin: origin))
    }

    /// A gauge reading another box logged and forwarded: logged as it is, in that site's gauge stream.
    @discardableResult
    public func forward(_ reading: GaugeReading, origin: LogEntry.Origin) -> Int {
        append(.logEntry(.gauge(reading, origin: origin), capturedAt: nil))
    }

    /// The gauge's reading, made when a tick was committed: logged in the gauge's stream.
    func publish(_ readings: [GaugeReading]) {
        for reading in readings { append(.logEntry(.gauge(reading), capturedAt: nil)) }
    }

    /// How many forwarded entries, the oldest first, are settled: committed by the writer (or found logged already),
    /// or dropped by the bound. A forwarded entry whose place is at most this is safe to acknowledge to its sender.
    package var settled: Int { queue.withLock { $0.settled } }

    /// The writer committed a batch holding `count` forwarded entries.
    func settle(_ count: Int) {
        guard count > 0 else { return }
        queue.withLock { $0.settled += count }
    }

    /// A frame was processed at `time`. Ticks with nothing between them are one: only the latest counts, so a
    /// writer that is behind finds one tick per run of frames without events, not one per frame.
    public func tick(time: Date) {
        append(.tick(time))
    }

    /// Returns the count of forwarded entries handed over so far.
    @discardableResult
    private func append(_ entry: Entry) -> Int {
        let (dropped, depth, forwarded) = queue.withLock { queue in
            if case .tick = entry, case .tick = queue.pending.last {
                queue.pending[queue.pending.count - 1] = entry
            } else {
                queue.pending.append(entry)
            }
            if entry.isForwarded { queue.forwarded += 1 }
            return (queue.trim(to: bound), queue.held, queue.forwarded)
        }
        report(dropped: dropped, depth: depth)
        wake.yield()
        return forwarded
    }

    /// Takes up to `limit` waiting entries, oldest first.
    func take(limit: Int) -> [Entry] {
        let (batch, depth) = queue.withLock { queue in
            let batch = Array(queue.pending.prefix(limit))
            queue.pending.removeFirst(batch.count)
            queue.writing += batch.count
            return (batch, queue.held)
        }
        report(dropped: 0, depth: depth)
        return batch
    }

    /// The `taken` entries last taken are in the store.
    func written(_ taken: Int) {
        let depth = queue.withLock { queue in
            queue.writing -= taken
            return queue.held
        }
        report(dropped: 0, depth: depth)
    }

    /// Puts back the entries last taken, the store having refused them: ahead of what arrived since (still within
    /// the bound).
    func putBack(_ batch: [Entry]) {
        let (dropped, depth) = queue.withLock { queue in
            queue.writing -= batch.count
            queue.pending.insert(contentsOf: batch, at: 0)
            return (queue.trim(to: bound), queue.held)
        }
        report(dropped: dropped, depth: depth)
    }

    /// Metrics are reported once the queue's lock is released: no other lock is ever taken while it is held.
    private func report(dropped: Int, depth: Int) {
        if dropped > 0 { telemetry.droppedByStoreBuffer.increment(by: dropped) }
        telemetry.storeQueueDepth.record(depth)
    }

    /// Entries held in memory (waiting, or in the writer's hands until the store has them), and entries dropped by
    /// the bound since start. The `sentinel_queue_depth{queue="store"}` gauge reports the same count.
    package var counts: (waiting: Int, dropped: Int) {
        queue.withLock { ($0.held, $0.dropped) }
    }

    func wakeUp() { wake.yield() }
}

extension Hub.Entry {
    /// What the entry asks the log to hold; nil for a tick.
    var logEntry: LogEntry? {
        switch self {
        case .event(let masked, _, let origin):
            .visitor(stored: masked.stored, published: masked.published, origin: origin)
        case .tick: nil
        case .logEntry(let logEntry, _): logEntry
        }
    }

    /// Whether another box logged it first.
    var isForwarded: Bool { logEntry?.origin != nil }
}
