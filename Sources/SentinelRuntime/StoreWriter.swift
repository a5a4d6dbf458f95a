import CoreMetrics
import Foundation
public import Logging
public import SentinelAggregates
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
    /// Of a shared log: who publishes its commits.
    let follower: LogFollower?
    let live: LiveState
    let telemetry: Telemetry
    let logger: Logger
    let policy: PrivacyPolicy
    /// Publications per transaction at most. A batch reaches each SSE client's queue at once, so it is kept to half
    /// the smallest queue: a client that keeps up is never cut off by one batch.
    let batchLimit: Int

    /// What the writing task alone holds between batches.
    struct Progress {
        /// The store's last failure, to log a change of state once, not every retry.
        var failure: StoreError?
        /// A shared log: whether this replica leads (asked once a second).
        var leading = true
        var leadAsked = ContinuousClock.now - .seconds(1)
    }

    /// The services that keep the event log, in the order a ServiceGroup starts them (it stops them in reverse):
    /// of a shared log the follower, then retention, then the writer. So at shutdown the writer stores what the
    /// sources left before the follower publishes it and ends the SSE streams.
    public static func services(
        store: any EventLog, hub: Hub, broadcaster: Broadcaster, live: LiveState, policy: PrivacyPolicy,
        publishing: Publishing, clientBufferEvents: Int, telemetry: Telemetry, logger: Logger
    ) -> [any Service] {
        let batchLimit = min(500, max(1, clientBufferEvents / 2))
        let publisher = Publisher(
            hub: hub, live: live, broadcaster: broadcaster, publishing: publishing, telemetry: telemetry)
        let follower =
            store.isShared
            ? LogFollower(store: store, policy: policy, publisher: publisher, batchLimit: batchLimit, logger: logger)
            : nil
        let writer = StoreWriter(
            store: store, hub: hub, publisher: publisher, follower: follower, live: live, policy: policy,
            batchLimit: batchLimit, telemetry: telemetry, logger: logger)
        let retention = Retention(store: store, policy: policy.retention, telemetry: telemetry, logger: logger)
        return (follower.map { [$0] } ?? []) + [retention, writer]
    }

    init(
        store: any EventLog, hub: Hub, publisher: Publisher, follower: LogFollower?, live: LiveState,
        policy: PrivacyPolicy, batchLimit: Int, telemetry: Telemetry, logger: Logger
    ) {
        self.store = store
        self.hub = hub
        self.publisher = publisher
        self.follower = follower
        self.live = live
        self.policy = policy
        self.batchLimit = batchLimit
        self.telemetry = telemetry
        self.logger = logger
    }

    /// After a crash: the gauge's window comes back from the log, and the visits the crash left open end, published
    /// like any exit, so no client keeps showing a visitor who is gone. Visits beyond retention are about to be
    /// deleted, not announced. What the log holds is checked as if it came from outside (`EventCheck`): a store
    /// written before events were checked may hold what would now be refused, and that is skipped, not voted with.
    private func recover() async {
        let decoder = JSONDecoder.sentinel()
        let check = EventCheck(timeResolution: policy.timestampResolution)
        var skipped = 0
        func passes(_ event: VisitorEvent) -> Bool {
            if (try? check.validate(event)) != nil { return true }
            skipped += 1
            return false
        }
        do {
            let window = try await store.visitorEvents(since: Date().addingTimeInterval(-publisher.window))
            publisher.restore(window.compactMap { try? decoder.decode(VisitorEvent.self, from: $0) }.filter(passes))
        } catch {
            logger.error("cannot read the gauge's window from the store", metadata: ["error": "\(error.message)"])
        }
        let kept = Date().addingTimeInterval(-policy.retention.maxAgeSeconds)
        for record in store.interrupted {
            guard let visitor = try? decoder.decode(VisitorRecord.self, from: record),
                (visitor.lastSeen ?? .distantPast) >= kept
            else { continue }
            let exit = policy.interruptedExit(of: visitor)
            if passes(exit.stored.event) { hub.submit(exit) }
        }
        if skipped > 0 {
            logger.warning(
                "skipped stored events that fail the event checks (written before they existed?)",
                metadata: ["count": "\(skipped)"])
        }
        follower?.start(after: (try? await store.logBounds().last) ?? 0)
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
        if store.isShared, ContinuousClock.now - progress.leadAsked >= .seconds(1) {
            progress.leading = await store.leads()
            progress.leadAsked = .now
        }
        while case let entries = hub.take(limit: batchLimit), !entries.isEmpty {
            let batch = entries.compactMap(\.publication)
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
            let commit = Commit(rows: rows, of: entries, ticks: progress.leading)
            if let follower { follower.committed(commit) } else { publisher.publish(commit) }
        }
        return true
    }

    private func failed(_ error: StoreError, _ progress: inout Progress) {
        if progress.failure?.code != error.code {
            logger.error("cannot write the store; keeping events in memory", metadata: ["error": "\(error.message)"])
        }
        progress.failure = error
        live.updateDatabase {
            $0.writable = false
            $0.message = error.message
        }
    }

    private func wrote(_ count: Int, _ progress: inout Progress) {
        publisher.broadcaster.commits.ring()
        if progress.failure != nil {
            logger.notice(
                "the store is writable again; flushing the events kept in memory",
                metadata: ["waiting": "\(hub.counts.waiting)"])
            progress.failure = nil
        }
        live.updateDatabase {
            $0.writable = true
            $0.message = nil
        }
    }
}

/// Deletes what is past retention (by age, then the oldest beyond the size bound): at start and then by the clock,
/// beside the writing, so a closed showroom still forgets on time.
struct Retention: Service {
    let store: any EventLog
    let policy: RetentionPolicy
    let telemetry: Telemetry
    let logger: Logger

    func run() async {
        var job = RetentionJob(policy: policy)
        var target = store
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            do {
                if let run = try await job.runIfDue(now: Date(), on: &target), run.total > 0 {
                    telemetry.retainedByAge.increment(by: run.byAge)
                    telemetry.retainedBySize.increment(by: run.bySize)
                    logger.info(
                        "retention deleted old records",
                        metadata: ["byAge": "\(run.byAge)", "bySize": "\(run.bySize)"])
                }
            } catch {
                logger.error("retention failed", metadata: ["error": "\(error)"])
            }
            try? await cancelWhenGracefulShutdown { try await Task.sleep(for: .seconds(policy.intervalSeconds)) }
        }
    }
}
