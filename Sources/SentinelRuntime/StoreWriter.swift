import CoreMetrics
import Foundation
public import Logging
import SentinelCore
public import SentinelPrivacy
public import SentinelStore
import SentinelWire
public import ServiceLifecycle

/// Takes what the mask let through from the hub, in order, writes it to the event log in batches (one transaction
/// each) and hands each commit on: to the publisher, or of a shared log to the follower, which publishes it in log
/// order among the other replicas' commits. Nothing is published before it is durable, so a client that resumes from
/// the store never misses or repeats an event. While the database cannot be written, the batch goes back to the hub
/// (bounded) and the writer retries with backoff.
public final class StoreWriter: Service, Sendable {
    let store: any EventLog
    let hub: Hub
    let publisher: Publisher
    /// Of a shared log: who publishes its commits, and whether this replica leads.
    let follower: LogFollower?
    let leadership: Leadership?
    let live: LiveState
    let telemetry: Telemetry
    let logger: Logger
    let policy: PrivacyPolicy
    /// Log entries per transaction at most. A batch reaches each SSE client's queue at once, so it is kept to half
    /// the smallest queue: a client that keeps up is never cut off by one batch.
    let batchLimit: Int

    /// What the writing task alone holds between batches.
    struct Progress {
        /// The store's last failure, to log a change of state once, not every retry.
        var failure: StoreError?
    }

    /// The services that keep the event log, in the order a ServiceGroup starts them (it stops them in reverse):
    /// of a shared log the follower and the leadership, then retention, then the writer. So at shutdown the writer
    /// stores what the sources left before the follower publishes it and ends the SSE streams.
    public static func services(
        store: any EventLog, hub: Hub, broadcaster: Broadcaster, live: LiveState, policy: PrivacyPolicy,
        aggregation: Aggregation, clientBufferEvents: Int, telemetry: Telemetry, logger: Logger
    ) -> [any Service] {
        let batchLimit = min(500, max(1, clientBufferEvents / 2))
        let publisher = Publisher(live: live, broadcaster: broadcaster, aggregation: aggregation, telemetry: telemetry)
        let follower =
            store.isShared
            ? LogFollower(
                store: store, hub: hub, policy: policy, publisher: publisher, batchLimit: batchLimit, logger: logger)
            : nil
        let leadership = store.isShared ? Leadership(store: store) : nil
        let writer = StoreWriter(
            store: store, hub: hub, publisher: publisher, follower: follower, leadership: leadership, live: live,
            policy: policy, batchLimit: batchLimit, telemetry: telemetry, logger: logger)
        let retention = Retention(store: store, policy: policy.retention, telemetry: telemetry, logger: logger)
        let shared: [any Service] = [follower as (any Service)?, leadership].compactMap { $0 }
        return shared + [retention, writer]
    }

    init(
        store: any EventLog, hub: Hub, publisher: Publisher, follower: LogFollower?, leadership: Leadership?,
        live: LiveState, policy: PrivacyPolicy, batchLimit: Int, telemetry: Telemetry, logger: Logger
    ) {
        self.store = store
        self.hub = hub
        self.publisher = publisher
        self.follower = follower
        self.leadership = leadership
        self.live = live
        self.policy = policy
        self.batchLimit = batchLimit
        self.telemetry = telemetry
        self.logger = logger
    }

    public func run() async {
        var progress = Progress()
        await recover()
        var backoff = Duration.milliseconds(250)
        for await _ in hub.wakeups.cancelOnGracefulShutdown() {
            if await flush(&progress) {
                backoff = .milliseconds(250)
            } else {
                try? await Task.sleep(for: backoff)
                backoff = min(backoff * 2, .seconds(8))
                hub.wakeUp()
            }
        }
        // Shutting down: the sources have stopped; write what they left, trying five times more (0.2 s to 3.2 s apart)
        // if the database is down.
        var attempt = 0
        while !(await flush(&progress)), attempt < 5 {
            try? await Task.sleep(for: .milliseconds(200 << attempt))
            attempt += 1
        }
        let left = hub.counts.waiting
        if left > 0 {
            logger.error(
                "events not stored at shutdown",
                metadata: ["count": "\(left)", "reason": "\(progress.failure.map(\.message) ?? "")"])
        }
        // The follower publishes last, once this writer has stopped.
        if follower == nil { publisher.close() }
    }

    /// Writes everything waiting; false when the database refused (the batch is back in the hub).
    func flush(_ progress: inout Progress) async -> Bool {
        while case let entries = hub.take(limit: batchLimit), !entries.isEmpty {
            let batch = entries.compactMap(\.logEntry)
            var rows: [LoggedEvent] = []
            if !batch.isEmpty {
                let start = ContinuousClock.now
                do {
                    rows = try await store.append(batch)
                } catch {
                    hub.putBack(entries)
                    failed(error, &progress)
                    return false
                }
                telemetry.storeLatency.recordInterval(since: start)
                wrote(batch.count, &progress)
            }
            hub.written(entries.count)
            // What was forwarded is safe now: the fleet's ingest acknowledges it at once, before it is published.
            hub.settle(batch.filter { $0.origin != nil }.count)
            // Of replicas, the one that leads has the gauge make readings.
            let commit = Commit(rows: rows, of: entries, ticks: leadership?.leading ?? true)
            // The gauge's readings go in the log by the hub, in a later transaction (a shared log's follower hands
            // them on the same way).
            if let follower { follower.committed(commit) } else { hub.publish(publisher.publish(commit)) }
        }
        return true
    }
}
