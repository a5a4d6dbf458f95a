import Foundation
import SentinelCore
import SentinelStore
import Synchronization

/// Which events an SSE client asked for: `source`, `zone` and `type` query parameters, each a comma-separated list.
/// The zone filter applies to visitor events; gauge readings have no zone and pass it. A zone is written `name` (that
/// zone at every camera) or `source/name` (at one camera).
public struct EventFilter: Sendable, Equatable {
    public var sources: Set<String>?
    public var zones: Set<String>?
    public var types: Set<String>?

    public init(sources: Set<String>? = nil, zones: Set<String>? = nil, types: Set<String>? = nil) {
        self.sources = sources
        self.zones = zones
        self.types = types
    }

    public func matches(_ event: LoggedEvent) -> Bool {
        if let types, !types.contains(event.type) { return false }
        if event.type == EventEnvelope.gaugeType { return true }
        if let sources, !sources.contains(event.streamId) { return false }
        if let zones {
            guard let zone = event.zone, zones.contains(zone) || zones.contains("\(event.streamId)/\(zone)") else {
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
    /// Rung after every commit, for what follows the log without a queue of its own (the MQTT output).
    let commits = Doorbell()

    private struct State {
        var subscriptions: [Int: Subscription] = [:]
        var nextID = 0
        var closed = false
    }

    public init(telemetry: Telemetry) { self.telemetry = telemetry }

    /// What a client's queue holds.
    public enum Item: Sendable {
        case event(LoggedEvent, message: String)
        case heartbeat
    }

    /// One client's queue.
    public final class Subscription: Sendable {
        public let id: Int
        public let filter: EventFilter
        public let items: AsyncStream<Item>
        let continuation: AsyncStream<Item>.Continuation
        /// Messages lost since the client was cut off (0 while it keeps up).
        private let cut = Atomic(0)

        init(id: Int, filter: EventFilter, capacity: Int) {
            self.id = id
            self.filter = filter
            (items, continuation) = AsyncStream.makeStream(of: Item.self, bufferingPolicy: .bufferingOldest(capacity))
        }

        /// How many messages were lost when the client was cut off (0 while it keeps up).
        public var droppedMessages: Int { cut.load(ordering: .relaxed) }

        /// Queues a heartbeat; a full queue already has something to send, so nothing is lost by skipping it.
        public func heartbeat() { continuation.yield(.heartbeat) }

        /// Queues a message; false when the queue was full and the client has been cut off. Called by the writer
        /// alone, one message after another.
        fileprivate func offer(_ item: Item) -> Bool {
            if cut.load(ordering: .relaxed) > 0 {
                cut.add(1, ordering: .relaxed)
                return false
            }
            if case .dropped = continuation.yield(item) {
                cut.add(1, ordering: .relaxed)
                continuation.finish()
                return false
            }
            return true
        }
    }

    /// A new client's queue, or nil when `limit` clients are already subscribed.
    public func subscribe(_ filter: EventFilter, capacity: Int, limit: Int = .max) -> Subscription? {
        let (subscription, count): (Subscription?, Int) = state.withLock { state in
            guard state.subscriptions.count < limit else { return (nil, state.subscriptions.count) }
            state.nextID += 1
            let subscription = Subscription(id: state.nextID, filter: filter, capacity: capacity)
            if state.closed {
                subscription.continuation.finish()
            } else {
                state.subscriptions[state.nextID] = subscription
            }
            return (subscription, state.subscriptions.count)
        }
        telemetry.sseSubscribers.record(count)
        return subscription
    }

    public func unsubscribe(_ subscription: Subscription) {
        subscription.continuation.finish()
        let count = state.withLock { state in
            state.subscriptions[subscription.id] = nil
            return state.subscriptions.count
        }
        telemetry.sseSubscribers.record(count)
    }

    public var subscriberCount: Int { state.withLock { $0.subscriptions.count } }

    /// Offers committed events to every client whose filter matches; each message is rendered once.
    public func publish(_ events: [LoggedEvent]) {
        guard !events.isEmpty else { return }
        commits.ring()
        let messages = events.map { Item.event($0, message: ServerSentEvents.message(for: $0)) }
        let current = state.withLock { Array($0.subscriptions.values) }
        for subscription in current {
            for message in messages {
                guard case .event(let event, _) = message, subscription.filter.matches(event) else { continue }
                if !subscription.offer(message) { telemetry.droppedBySlowClient.increment() }
            }
        }
    }

    /// Ends every stream (at shutdown): clients get what is queued, then the end of the response.
    public func close() {
        let current = state.withLock { state in
            state.closed = true
            return Array(state.subscriptions.values)
        }
        for subscription in current { subscription.continuation.finish() }
    }
}
