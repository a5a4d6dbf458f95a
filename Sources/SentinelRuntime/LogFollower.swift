import Foundation
import Logging
import SentinelCore
import SentinelPrivacy
import SentinelStore
import SentinelWire
import ServiceLifecycle
import Synchronization

/// Of a shared log: publishes what every replica committed since it last looked, in log order, so that a replica's
/// SSE clients, who is present and the gauge's votes are the whole fleet's, whichever replica stored an event. It
/// follows after each of this replica's commits and every 100 ms for the others'. This replica's own events come
/// back typed from its writer (`committed`); only the others' are read from their JSON.
final class LogFollower: Service, Sendable {
    let store: any EventLog
    /// Where the gauge's readings go to be logged.
    let hub: Hub
    let policy: PrivacyPolicy
    let publisher: Publisher
    let batchLimit: Int
    let logger: Logger
    private let state = Mutex(State())
    private let doorbell = Doorbell()

    private struct State {
        /// The last id published; nil until the writer has recovered and said where the log ends.
        var position: Int64?
        /// This replica's committed visitor events not followed yet, by their published JSON (the log row's payload).
        var own: [Data: MaskedEvent] = [:]
        /// Ticks this replica committed, each due once the log is followed through `after`.
        var ticks: [(after: Int64, time: Date)] = []
    }

    init(
        store: any EventLog, hub: Hub, policy: PrivacyPolicy, publisher: Publisher, batchLimit: Int, logger: Logger
    ) {
        self.store = store
        self.hub = hub
        self.policy = policy
        self.publisher = publisher
        self.batchLimit = batchLimit
        self.logger = logger
    }

    /// Where the log ended when the writer recovered: what came before is the gauge's restored window, not news.
    func start(after position: Int64) {
        state.withLock { $0.position = position }
        doorbell.ring()
    }

    /// What this replica's writer committed: followed at once.
    func committed(_ commit: Commit) {
        state.withLock { state in
            for item in commit.items {
                switch item {
                case .event(let event): state.own[event.json] = event
                case .tick(let time): state.ticks.append((commit.rows.last?.id ?? 0, time))
                }
            }
        }
        doorbell.ring()
    }

    func run() async {
        var failure: StoreError?
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do throws(StoreError) {
                try await follow()
                failure = nil
            } catch {
                if failure?.code != error.code { cannotFollow(error) }
                failure = error
            }
            await doorbell.wait(timeout: .milliseconds(100))
        }
        // The writer has stopped (it started after this follower): what it committed last is published, then the
        // streams end.
        do throws(StoreError) { try await follow() } catch { cannotFollow(error) }
        publisher.close()
    }

    private func follow() async throws(StoreError) {
        guard var position = state.withLock({ $0.position }) else { return }
        while true {
            let rows = try await store.events(after: position, limit: batchLimit)
            position = rows.last?.id ?? position
            let commit = read(rows, through: position)
            if !commit.isEmpty { hub.publish(publisher.publish(commit)) }
            state.withLock { $0.position = position }
            if rows.count < batchLimit { return }
        }
    }

    /// The rows as a commit: visitor events typed (this replica's as its writer made them, the others' read with
    /// this policy), then the ticks whose commits are all among what has been followed.
    private func read(_ rows: [LoggedEvent], through position: Int64) -> Commit {
        let (own, ticks) = state.withLock { state in
            let own = rows.map { $0.type == .gauge ? nil : state.own.removeValue(forKey: $0.payload) }
            let due = state.ticks.filter { $0.after <= position }.map(\.time)
            state.ticks.removeAll { $0.after <= position }
            return (own, due)
        }
        var commit = Commit(rows: rows, items: [])
        for (row, event) in zip(rows, own) {
            switch row.type {
            case .visitor:
                if let event = event ?? (try? policy.logged(row.payload)) { commit.items.append(.event(event)) }
            case .gauge where row.streamId == LogEntry.gaugeStream:
                commit.gauge = try? JSONDecoder.sentinel().decode(GaugeReading.self, from: row.payload)
            case .gauge:
                break
            }
        }
        commit.items += ticks.map(Commit.Item.tick)
        return commit
    }

    private func cannotFollow(_ error: StoreError) {
        logger.error("cannot read the shared log", metadata: ["error": "\(error.message)"])
    }
}
