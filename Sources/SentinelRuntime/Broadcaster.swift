import CoreMetrics
import Foundation
public import NIOCore
public import SentinelCore
public import SentinelStore
import Synchronization

/// Which events an SSE client asked for: `source`, `zone` and `type` query parameters, each a comma-separated list.
/// The zone filter applies to visitor events; gauge readings have no zone and pass it.
public struct EventFilter: Sendable, Hashable {
    /// A zone asked for: by its name, at every camera (those that join later too), or one camera's.
    public enum Zone: Sendable, Hashable {
        case named(String)
        case at(ZoneID)
    }

    public var sources: Set<String>?
    public var zones: Set<Zone>?
    public var types: Set<LoggedEvent.Kind>?

    public init(sources: Set<String>? = nil, zones: Set<Zone>? = nil, types: Set<LoggedEvent.Kind>? = nil) {
        self.sources = sources
        self.zones = zones
        self.types = types
    }

    public func matches(_ event: LoggedEvent) -> Bool {
        if let types, !types.contains(event.type) { return false }
        if event.type == .gauge { return true }
        if let sources, !sources.contains(event.streamId) { return false }
        if let zones {
            guard let zone = event.zone,
                zones.contains(.named(zone)) || zones.contains(.at(ZoneID(sourceId: event.streamId, name: zone)))
            else {
                return false
            }
        }
        return true
    }
}

/// Fans committed events out to SSE clients. Each client has a queue bounded in messages and in bytes: one that falls
/// behind by more than either is cut off (and told why) instead of slowing the pipeline or the other clients. All
/// the streams together hold at most `memoryLimit` bytes (what is queued, being written, or read from the store for a
/// resuming client): beyond it, the slowest are cut off first, those whose last write finished longest ago.
public final class Broadcaster: Sendable {
    private let state = Mutex(State())
    private let telemetry: Telemetry
    /// Bytes the streams not cut off hold together, and the most they may.
    private let held = Atomic(0)
    public let memoryLimit: Int
    /// How long a stream cut off while its client does not read keeps its connection: then the connection is closed,
    /// and what was being written with it.
    let closeAfter: Duration
    /// Rung by the store writer after every commit, for what follows the log without a queue of its own (the MQTT
    /// output) and what waits for its commits (the fleet's acknowledgements).
    package let commits = Doorbell()

    private struct State {
        var subscriptions: [Int: Subscription] = [:]
        var nextID = 0
        var closed = false
    }

    public init(telemetry: Telemetry, memoryLimit: Int = .max, closeAfter: Duration = .seconds(10)) {
        self.telemetry = telemetry
        self.memoryLimit = memoryLimit
        self.closeAfter = closeAfter
    }

    /// What a client's queue holds.
    public enum Item: Sendable {
        case messages(Messages)
        case heartbeat
    }

    /// One commit's events that match a filter, and their messages rendered once into one buffer, shared by every
    /// client with that filter: a client's write sends the buffer as it is.
    public struct Messages: Sendable {
        /// In log order, never empty.
        public let events: [LoggedEvent]
        public let text: ByteBuffer
    }

    /// One client's queue. The writer offers each commit's messages at once; the client's stream takes everything
    /// queued at once and writes it in one go, so a client that is a few messages behind catches up in one write
    /// instead of one per message. Bounded in messages (`capacity`) and bytes (`capacityBytes`): beyond either, the
    /// client is cut off and what it had queued is dropped (it resumes from the log with its last event id).
    ///
    /// What the client's stream holds besides (what it took and is writing, a page read from the store) is counted
    /// with `Broadcaster.hold` and `release`: a client is charged its queue and those, against the server's limit.
    public final class Subscription: Sendable {
        public let id: Int
        public let filter: EventFilter
        private let capacity: Int
        private let capacityBytes: Int
        private let queue = Mutex(Queue())
        /// Closes the client's connection (a stream cut off that does not end by itself).
        fileprivate let close: @Sendable () -> Void

        private struct Queue {
            var items: [Item] = []
            var events = 0
            var bytes = 0
            /// Bytes the stream holds outside the queue.
            var stream = 0
            var finished = false
            /// Why the client was cut off, and how many of its messages were lost since.
            var cutOff: String?
            var dropped = 0
            var waiter: CheckedContinuation<[Item]?, Never>?
            /// When the stream last finished a write (took its queue, or released what it had written).
            var progress = ContinuousClock.now

            var holding: Int { bytes + stream }

            /// What a waiting reader gets now: everything queued (its bytes are then the stream's), or the end; nil
            /// while it must wait.
            mutating func take() -> [Item]?? {
                if !items.isEmpty {
                    defer {
                        items = []
                        events = 0
                        stream += bytes
                        bytes = 0
                        progress = .now
                    }
                    return .some(items)
                }
                return finished ? .some(nil) : nil
            }
        }

        init(id: Int, filter: EventFilter, capacity: Int, capacityBytes: Int, close: @escaping @Sendable () -> Void) {
            self.id = id
            self.filter = filter
            self.capacity = capacity
            self.capacityBytes = capacityBytes
            self.close = close
        }

        /// How many messages were lost when the client was cut off (0 while it keeps up).
        public var droppedMessages: Int { queue.withLock { $0.dropped } }

        /// Why the client was cut off, or nil while it keeps up.
        public var cutOff: String? { queue.withLock { $0.cutOff } }

        /// Bytes queued for the client and held by its stream, and when it last finished a write.
        var holding: (bytes: Int, since: ContinuousClock.Instant) { queue.withLock { ($0.holding, $0.progress) } }

        /// Queues a heartbeat, unless something is queued already (it keeps the connection alive as well).
        public func heartbeat() {
            resume { queue in
                guard queue.items.isEmpty, !queue.finished else { return }
                queue.items.append(.heartbeat)
            }
        }

        /// Whether a reader is waiting in `next()` (what a test waits for before it publishes).
        var isWaiting: Bool { queue.withLock { $0.waiter != nil } }

        /// Everything queued since the last call, at once; nil once the queue has ended and been emptied.
        public func next() async -> [Item]? {
            await withTaskCancellationHandler {
                await withCheckedContinuation { continuation in
                    let ready = queue.withLock { queue -> [Item]?? in
                        if let taken = queue.take() { return taken }
                        queue.waiter = continuation
                        return nil
                    }
                    if let ready { continuation.resume(returning: ready) }
                }
            } onCancel: {
                finish()
            }
        }

        /// Ends the queue: the reader gets what is queued, then nil.
        public func finish() { resume { $0.finished = true } }

        /// What offering a commit's messages to a client did.
        fileprivate enum Offer {
            /// Queued: the bytes the client now holds more.
            case queued(Int)
            /// They did not fit: the client is cut off now, and what it held is freed.
            case cut(freed: Int, dropped: Int)
            /// The client was cut off before: they are dropped.
            case dropped
        }

        /// Queues one commit's messages for this client. Called by the writer alone.
        fileprivate func offer(_ messages: Messages) -> Offer {
            let count = messages.events.count
            let size = messages.text.readableBytes
            var outcome = Offer.dropped
            resume { queue in
                guard queue.cutOff == nil else {
                    queue.dropped += count
                    return
                }
                guard !queue.finished else {
                    outcome = .queued(0)
                    return
                }
                guard queue.events + count <= capacity, queue.bytes + size <= capacityBytes else {
                    let reason =
                        queue.events + count > capacity
                        ? "more than \(capacity) messages queued" : "more than \(capacityBytes) bytes queued"
                    let (freed, dropped) = Self.cut(&queue, reason: "slow consumer: \(reason)")
                    queue.dropped += count
                    outcome = .cut(freed: freed, dropped: dropped + count)
                    return
                }
                if queue.items.count == 1, case .heartbeat = queue.items[0] { queue.items = [] }
                queue.items.append(.messages(messages))
                queue.events += count
                queue.bytes += size
                outcome = .queued(size)
            }
            return outcome
        }

        /// Counts `bytes` more held by the stream, or fewer (negative: what it has written); false if the client has
        /// been cut off (nothing is then counted).
        fileprivate func hold(_ bytes: Int) -> Bool {
            queue.withLock { queue in
                guard queue.cutOff == nil else { return false }
                queue.stream += bytes
                if bytes < 0 { queue.progress = .now }
                return true
            }
        }

        /// Cuts the client off unless it was already: its queue is dropped and ends. Returns the bytes it held and
        /// the messages dropped.
        fileprivate func cut(reason: String) -> (freed: Int, dropped: Int) {
            var outcome = (freed: 0, dropped: 0)
            resume { queue in
                guard queue.cutOff == nil else { return }
                outcome = Self.cut(&queue, reason: reason)
            }
            return outcome
        }

        private static func cut(_ queue: inout Queue, reason: String) -> (freed: Int, dropped: Int) {
            let outcome = (freed: queue.holding, dropped: queue.events)
            queue.cutOff = reason
            queue.dropped += queue.events
            queue.items = []
            queue.events = 0
            queue.bytes = 0
            queue.stream = 0
            queue.finished = true
            return outcome
        }

        /// Ends the queue at the end of the stream; returns the bytes it held, counted no more.
        fileprivate func end() -> Int {
            var freed = 0
            resume { queue in
                freed = queue.cutOff == nil ? queue.holding : 0
                queue.bytes = 0
                queue.stream = 0
                queue.finished = true
            }
            return freed
        }

        /// Changes the queue and wakes a waiting reader with what it may take now.
        private func resume(_ change: (inout Queue) -> Void) {
            let (waiter, taken) = queue.withLock { queue -> (CheckedContinuation<[Item]?, Never>?, [Item]?) in
                change(&queue)
                guard let waiter = queue.waiter, let taken = queue.take() else { return (nil, nil) }
                queue.waiter = nil
                return (waiter, taken)
            }
            waiter?.resume(returning: taken)
        }
    }

    /// A new client's queue, of at most `capacity` messages and `capacityBytes` bytes, or nil when `limit` clients are
    /// already subscribed. `close` closes the client's connection: it is called when the client, cut off, has not
    /// ended its stream `closeAfter` later (a client that does not read never lets its last write finish).
    public func subscribe(
        _ filter: EventFilter, capacity: Int, capacityBytes: Int = .max, limit: Int = .max,
        close: @escaping @Sendable () -> Void = {}
    ) -> Subscription? {
        let (subscription, count): (Subscription?, Int) = state.withLock { state in
            guard state.subscriptions.count < limit else { return (nil, state.subscriptions.count) }
            state.nextID += 1
            let subscription = Subscription(
                id: state.nextID, filter: filter, capacity: capacity, capacityBytes: capacityBytes, close: close)
            if state.closed {
                subscription.finish()
            } else {
                state.subscriptions[state.nextID] = subscription
            }
            return (subscription, state.subscriptions.count)
        }
        telemetry.sseSubscribers.record(count)
        return subscription
    }

    public func unsubscribe(_ subscription: Subscription) {
        held.subtract(subscription.end(), ordering: .relaxed)
        let count = state.withLock { state in
            state.subscriptions[subscription.id] = nil
            return state.subscriptions.count
        }
        telemetry.sseSubscribers.record(count)
    }

    public var subscriberCount: Int { state.withLock { $0.subscriptions.count } }

    /// Bytes the streams not cut off hold.
    public var holding: Int { held.load(ordering: .relaxed) }

    /// Counts `bytes` a client's stream holds outside its queue (a page read from the store, a write in progress):
    /// false when the client has been cut off, now to keep the server within its limit or before.
    public func hold(_ bytes: Int, for subscription: Subscription) -> Bool {
        guard subscription.hold(bytes) else { return false }
        if held.add(bytes, ordering: .relaxed).newValue > memoryLimit { makeRoom() }
        return subscription.cutOff == nil
    }

    /// What `hold` counted, no longer held.
    public func release(_ bytes: Int, for subscription: Subscription) {
        guard bytes > 0, subscription.hold(-bytes) else { return }
        held.subtract(bytes, ordering: .relaxed)
    }

    /// Cuts off the slowest streams that hold anything (those whose last write finished longest ago) until all of
    /// them hold no more than the limit.
    private func makeRoom() {
        state.withLock { state in
            var excess = held.load(ordering: .relaxed) - memoryLimit
            guard excess > 0 else { return }
            let reason =
                "the server's streams hold more than \(memoryLimit) bytes, and this one has been slowest to take them"
            let slowest = state.subscriptions.values.map { ($0, $0.holding) }.filter { $0.1.bytes > 0 }
                .sorted { $0.1.since < $1.1.since }
            for (subscription, _) in slowest where excess > 0 {
                let (freed, dropped) = subscription.cut(reason: reason)
                cutOff(subscription, freed: freed, dropped: dropped)
                excess -= freed
            }
        }
    }

    /// Accounts for a client just cut off, and closes its connection if its stream has not ended `closeAfter` later.
    private func cutOff(_ subscription: Subscription, freed: Int, dropped: Int) {
        held.subtract(freed, ordering: .relaxed)
        telemetry.droppedBySlowClient.increment(by: dropped)
        closeLater(subscription)
    }

    /// Closes the client's connection if its stream has not ended `closeAfter` from now: a client that does not read
    /// never lets its last write finish.
    private func closeLater(_ subscription: Subscription) {
        let closeAfter = closeAfter
        Task { [weak self] in
            try await Task.sleep(for: closeAfter)
            if self?.state.withLock({ $0.subscriptions[subscription.id] != nil }) == true { subscription.close() }
        }
    }

    /// Offers committed events to every client whose filter matches. Each message is rendered once, and each
    /// filter's share of the commit is put in one buffer once, however many clients share that filter.
    public func publish(_ events: [LoggedEvent]) {
        guard !events.isEmpty else { return }
        let rendered = events.map(ServerSentEvents.message)
        var shares: [EventFilter: Messages?] = [:]
        let current = state.withLock { Array($0.subscriptions.values) }
        for subscription in current {
            let share: Messages?
            if let known = shares[subscription.filter] {
                share = known
            } else {
                let matching = events.indices.filter { subscription.filter.matches(events[$0]) }
                var text = ByteBuffer()
                text.reserveCapacity(matching.reduce(0) { $0 + rendered[$1].utf8.count })
                for index in matching { text.writeString(rendered[index]) }
                share = matching.isEmpty ? nil : Messages(events: matching.map { events[$0] }, text: text)
                shares[subscription.filter] = .some(share)
            }
            guard let share else { continue }
            switch subscription.offer(share) {
            case .queued(let added):
                if held.add(added, ordering: .relaxed).newValue > memoryLimit { makeRoom() }
            case .cut(let freed, let dropped):
                cutOff(subscription, freed: freed, dropped: dropped)
            case .dropped:
                telemetry.droppedBySlowClient.increment(by: share.events.count)
            }
        }
    }

    /// Ends every stream (at shutdown): clients get what is queued, then the end of the response; the connection of a
    /// client that does not read is closed `closeAfter` later, so that it cannot hold the shutdown.
    public func close() {
        let current = state.withLock { state in
            state.closed = true
            return Array(state.subscriptions.values)
        }
        for subscription in current {
            subscription.finish()
            closeLater(subscription)
        }
    }
}
