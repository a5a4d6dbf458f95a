import CoreMetrics
import Foundation
public import Logging
import Metrics
public import SentinelAggregates
import SentinelCore
public import SentinelPrivacy
public import SentinelStore
public import ServiceLifecycle
import Synchronization

/// Takes what the mask let through (each event's store copy and published copy) from the hub, in order, feeds the
/// gauge `Publishing` made, writes the store in batches (one transaction each), then hands what was
/// committed to the SSE clients and to who-is-present: nothing is published before it is durable, so a client that
/// resumes from the store never misses or repeats an event. While the database cannot be written, what the writer
/// made of its batch goes back to the hub (bounded) and the writer retries with backoff. Retention runs when it is
/// due, between batches.
public final class StoreWriter: Service, Sendable {
    let store: any EventLog
    let hub: Hub
    let broadcaster: Broadcaster
    let live: LiveState
    let telemetry: Telemetry
    let logger: Logger
    let policy: PrivacyPolicy
    let publishing: Publishing
    /// Publications per transaction at most. A batch reaches each SSE client's queue at once, so it is kept to half
    /// the smallest queue: a client that keeps up is never cut off by one batch.
    let batchLimit: Int
    /// The mood: the writer's alone on a box; of a shared log, the follower votes with every replica's commits while
    /// the writer ticks it.
    let gauge: Mutex<SentimentGauge>
    /// Of a shared log: the last id published from it, and the follower's doorbell, rung after each commit.
    let followed = Atomic<Int64>(0)
    let committed = Doorbell()

    /// What the writing task alone holds between batches.
    struct Progress {
        var retention: RetentionJob
        /// The store's last failure, to log a change of state once, not every retry.
        var failure: StoreError?
        /// A shared log: whether this replica leads (asked once a second).
        var leading = true
        var leadAsked = ContinuousClock.now - .seconds(1)
    }

    public init(
        store: any EventLog, hub: Hub, broadcaster: Broadcaster, live: LiveState, policy: PrivacyPolicy,
        publishing: Publishing, clientBufferEvents: Int, telemetry: Telemetry, logger: Logger
    ) {
        batchLimit = min(500, max(1, clientBufferEvents / 2))
        self.store = store
        self.hub = hub
        self.broadcaster = broadcaster
        self.live = live
        self.policy = policy
        self.publishing = publishing
        gauge = Mutex(publishing.sentimentGauge())
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
            let window = try await store.visitorEvents(
                since: Date().addingTimeInterval(-gauge.withLock { $0.settings.windowSeconds }))
            let events = window.compactMap { try? decoder.decode(VisitorEvent.self, from: $0) }.filter(passes)
            gauge.withLock { gauge in
                for event in events { gauge.record(event) }
            }
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
    }

    public func run() async throws {
        var progress = Progress(retention: RetentionJob(policy: policy.retention))
        await recover()
        if store.isShared { followed.store((try? await store.logBounds().last) ?? 0, ordering: .relaxed) }
        await withThrowingTaskGroup(of: Void.self) { group in
            // A shared log grows with every replica's commits: followed beside the writing (after each of this
            // replica's commits, and every 100 ms for the others'), not between its batches.
            if store.isShared {
                group.addTask {
                    var failure: StoreError?
                    while !Task.isCancelled {
                        do throws(StoreError) {
                            try await self.follow()
                            failure = nil
                        } catch {
                            if failure?.code != error.code { self.cannotFollow(error) }
                            failure = error
                        }
                        await self.committed.wait(timeout: .milliseconds(100))
                    }
                }
            }
            // Retention is due at start and then by the clock, not only when events arrive: a closed showroom still
            // forgets on time.
            group.addTask { [hub, interval = policy.retention.intervalSeconds] in
                while true {
                    hub.wakeUp()
                    try await Task.sleep(for: .seconds(interval))
                }
            }
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
            group.cancelAll()
        }
        // Shutting down: the sources have stopped; write what they left, trying five times more (0.2 s to 3.2 s apart)
        // if the database is down.
        var attempt = 0
        while !(await flush(&progress)), attempt < 5 {
            try? await Task.sleep(for: .milliseconds(200 << attempt))
            attempt += 1
        }
        if store.isShared {
            do throws(StoreError) { try await follow() } catch { cannotFollow(error) }
        }
        let left = hub.counts.waiting
        if left > 0 {
            logger.error(
                "events not stored at shutdown",
                metadata: ["count": "\(left)", "reason": "\(progress.failure.map(\.message) ?? "")"])
        }
        broadcaster.close()
    }

    /// The publications a batch of the hub's entries makes, in order: each event's store copy and published copy
    /// (the gauge votes with the latter), and the gauge's readings as the ticks make them due.
    private func publications(_ entries: [Hub.Entry], leading: Bool)
        -> [(publication: Publication, capturedAt: ContinuousClock.Instant?)]
    {
        entries.compactMap { entry in
            switch entry {
            case .event(let masked, let capturedAt, let origin):
                // A replica of a shared log votes with what it follows, every replica's events.
                if !store.isShared { gauge.withLock { $0.record(masked.published) } }
                return (.visitor(stored: masked.stored, published: masked.published, origin: origin), capturedAt)
            case .tick(let time):
                // Of replicas, the one that leads publishes the gauge.
                guard leading else { return nil }
                return gauge.withLock { $0.tick(now: time) }.map { (.gauge($0), nil) }
            case .publication(let publication, let capturedAt):
                return (publication, capturedAt)
            }
        }
    }

    /// Writes everything waiting; false when the database refused (what the writer made of the batch is back in
    /// the hub).
    func flush(_ progress: inout Progress) async -> Bool {
        if store.isShared, ContinuousClock.now - progress.leadAsked >= .seconds(1) {
            progress.leading = await store.leads()
            progress.leadAsked = .now
        }
        while case let entries = hub.take(limit: batchLimit), !entries.isEmpty {
            let made = publications(entries, leading: progress.leading)
            guard !made.isEmpty else {
                hub.written(entries.count)
                continue
            }
            let batch = made.map(\.publication)
            let start = ContinuousClock.now
            let logged: [LoggedEvent]
            do {
                logged = try await store.append(batch)
            } catch {
                hub.putBack(
                    made.map { .publication($0.publication, capturedAt: $0.capturedAt) }, taken: entries.count)
                if progress.failure?.code != error.code {
                    logger.error(
                        "cannot write the store; keeping events in memory", metadata: ["error": "\(error.message)"])
                }
                progress.failure = error
                live.updateDatabase {
                    $0.writable = false
                    $0.message = error.message
                }
                return false
            }
            telemetry.storeLatency.recordInterval(since: start)
            hub.written(entries.count)
            // What was forwarded is safe now: the fleet's ingest acknowledges it at once, before it is published.
            hub.settle(batch.filter { $0.origin != nil }.count)
            broadcaster.commits.ring()
            if progress.failure != nil {
                logger.notice(
                    "the store is writable again; flushing the events kept in memory",
                    metadata: ["waiting": "\(hub.counts.waiting + batch.count)"])
                progress.failure = nil
            }
            live.updateDatabase {
                $0.writable = true
                $0.message = nil
            }
            if store.isShared {
                committed.ring()
                continue
            }
            var visitorEvents: [MaskedEvent] = []
            var gauge: GaugeReading?
            for publication in batch {
                switch publication {
                case .visitor(_, let published, _): visitorEvents.append(published)
                case .gauge(let reading, nil): gauge = reading
                case .gauge: break
                }
            }
            publish(logged, visitorEvents, gauge: gauge)
            for case let captured? in made.map(\.capturedAt) {
                telemetry.captureToPublish.recordInterval(since: captured)
            }
        }
        await runRetention(&progress.retention)
        return true
    }

    /// Hands what was committed to who-is-present, the live state and the SSE clients.
    private func publish(
        _ logged: [LoggedEvent], _ visitorEvents: [MaskedEvent], gauge: GaugeReading?
    ) {
        live.commit(visitorEvents, gauge: gauge)
        telemetry.record(visitorEvents)
        let published = ContinuousClock.now
        broadcaster.publish(logged)
        telemetry.publishLatency.recordInterval(since: published)
        telemetry.eventsPublished.increment(by: logged.count)
    }

    /// A replica of a shared log publishes what every replica committed since it last looked, in log order (its
    /// own commits come back the same way): its SSE clients, who is present and the gauge's votes are the whole
    /// fleet's, whichever replica stored an event.
    private func follow() async throws(StoreError) {
        let decoder = JSONDecoder.sentinel()
        while case let rows = try await store.events(after: followed.load(ordering: .relaxed), limit: batchLimit),
            !rows.isEmpty
        {
            var visitorEvents: [MaskedEvent] = []
            var gauge: GaugeReading?
            for row in rows {
                switch row.type {
                case .visitor:
                    guard let event = try? policy.logged(row.payload) else { continue }
                    visitorEvents.append(event)
                case .gauge where row.streamId == Publication.gaugeStream:
                    gauge = try? decoder.decode(GaugeReading.self, from: row.payload)
                case .gauge:
                    break
                }
            }
            self.gauge.withLock { gauge in
                for event in visitorEvents { gauge.record(event) }
            }
            followed.store(rows[rows.count - 1].id, ordering: .relaxed)
            publish(rows, visitorEvents, gauge: gauge)
        }
    }

    private func cannotFollow(_ error: StoreError) {
        logger.error("cannot read the shared log", metadata: ["error": "\(error.message)"])
    }

    private func runRetention(_ retention: inout RetentionJob) async {
        var target = store
        do {
            if let run = try await retention.runIfDue(now: Date(), on: &target), run.total > 0 {
                telemetry.retainedByAge.increment(by: run.byAge)
                telemetry.retainedBySize.increment(by: run.bySize)
                logger.info(
                    "retention deleted old records",
                    metadata: ["byAge": "\(run.byAge)", "bySize": "\(run.bySize)"])
            }
        } catch {
            logger.error("retention failed", metadata: ["error": "\(error)"])
        }
    }
}

extension CoreMetrics.Timer {
    func recordInterval(since start: ContinuousClock.Instant) { record(duration: ContinuousClock.now - start) }
}
