import CoreMetrics
import Foundation
public import NIOCore
public import SentinelCore
import SentinelPublishing
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

/// Fans committed events out to SSE clients. Each client has a bounded queue: one that falls behind by more than
/// its bound is cut off (and told why) instead of slowing the pipeline or the other clients.
public final class Broadcaster: Sendable {
    private let state = Mutex(State())
    private let telemetry: Telemetry
    /// Rung by the store writer after every commit, for what follows the log without a queue of its own (the MQTT
    /// output) and what waits for its commits (the fleet's acknowledgements).
    package let commits = Doorbell()

    private struct State {
        var subscriptions: [Int: Subscription] = [:]
        var nextID = 0
        var closed = false
    }

    public init(telemetry: Telemetry) { self.telemetry = telemetry }

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
    /// instead of one per message. Bounded in events: beyond `capacity` the client is cut off.
    public final class Subscription: Sendable {
        public let id: Int
        public let filter: EventFilter
        private let capacity: Int
        private let queue = Mutex(Queue())
        /// Messages lost since the client was cut off (0 while it keeps up).
        private let cut = Atomic(0)

        private struct Queue {
            var items: [Item] = []
            var events = 0
            var finished = false
            var waiter: CheckedContinuation<[Item]?, Never>?

            /// What a waiting reader gets now: everything queued, or the end; nil while it must wait.
            mutating func take() -> [Item]?? {
                if !items.isEmpty {
                    defer {
                        items = []
                        events = 0
                    }
                    return .some(items)
                }
                return finished ? .some(nil) : nil
            }
        }

        init(id: Int, filter: EventFilter, capacity: Int) {
            self.id = id
            self.filter = filter
            self.capacity = capacity
        }

        /// How many messages were lost when the client was cut off (0 while it keeps up).
        public var droppedMessages: Int { cut.load(ordering: .relaxed) }

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

        /// Queues one commit's messages for this client; false when they do not fit and the client has been cut off.
        /// Called by the writer alone.
        fileprivate func offer(_ messages: Messages) -> Bool {
            let count = messages.events.count
            if cut.load(ordering: .relaxed) > 0 {
                cut.add(count, ordering: .relaxed)
                return false
            }
            var fits = true
            resume { queue in
                guard !queue.finished else { return }
                guard queue.events + count <= capacity else {
                    fits = false
                    queue.finished = true
                    return
                }
                if queue.items.count == 1, case .heartbeat = queue.items[0] { queue.items = [] }
                queue.items.append(.messages(messages))
                queue.events += count
            }
            if !fits { cut.add(count, ordering: .relaxed) }
            return fits
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

    /// A new client's queue, or nil when `limit` clients are already subscribed.
    public func subscribe(_ filter: EventFilter, capacity: Int, limit: Int = .max) -> Subscription? {
        let (subscription, count): (Subscription?, Int) = state.withLock { state in
            guard state.subscriptions.count < limit else { return (nil, state.subscriptions.count) }
            state.nextID += 1
            let subscription = Subscription(id: state.nextID, filter: filter, capacity: capacity)
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
        subscription.finish()
        let count = state.withLock { state in
            state.subscriptions[subscription.id] = nil
            return state.subscriptions.count
        }
        telemetry.sseSubscribers.record(count)
    }

    public var subscriberCount: Int { state.withLock { $0.subscriptions.count } }

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
            if !subscription.offer(share) { telemetry.droppedBySlowClient.increment(by: share.events.count) }
        }
    }

    /// Ends every stream (at shutdown): clients get what is queued, then the end of the response.
    public func close() {
        let current = state.withLock { state in
            state.closed = true
            return Array(state.subscriptions.values)
        }
        for subscription in current { subscription.finish() }
    }
}
