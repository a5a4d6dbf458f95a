import Foundation
import Logging
import SentinelConfig
import SentinelCore
import SentinelPrivacy
import SentinelStore
import SentinelTestSupport
import SentinelWire
import ServiceLifecycle
import Testing

@testable import SentinelRuntime

/// What flows from the writer to the publisher: what was committed, typed.
@Suite("Commits", .ownThread)
struct CommitTests {
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    /// A visitor of camera `source` who looks happy at `second`.
    func event(_ face: String, source: String = "a", at second: Double, mask: inout PrivacyMask) throws -> Masked {
        let time = start.addingTimeInterval(second)
        let visitor = VisitorRecord(
            faceId: face, sourceId: source, zone: nil, state: .active, dwellSeconds: 5, firstSeen: start,
            lastSeen: time, emotion: .known(.happy), emotionConfidence: 0.9, valence: 0.8)
        return try mask.mask(VisitorEvent(type: .updated, time: time, visitor: visitor))
    }

    func reading(at second: Double) -> GaugeReading {
        GaugeReading(
            time: start.addingTimeInterval(second), overall: .suppressed, sources: [:], zones: [:], stale: false,
            windowSeconds: 300)
    }

    @Test(
        "a commit holds what the log took, in the hub's order: a forwarded event the log held already is left out, a tick kept only where the gauge is this replica's to publish"
    )
    func ofEntries() throws {
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        let held = try event("cam#1#1", at: 1, mask: &mask)
        let new = try event("cam#1#2", at: 2, mask: &mask)
        let entries: [Hub.Entry] = [
            .event(held, capturedAt: nil, origin: .init(site: "b", id: 7)), .event(new, capturedAt: .now),
            .tick(start.addingTimeInterval(3)), .logEntry(.gauge(reading(at: 3)), capturedAt: nil),
            .logEntry(.gauge(reading(at: 4), origin: .init(site: "b", id: 8)), capturedAt: nil),
        ]
        let encoder = JSONEncoder.sentinel()
        // The log took the new event and the gauge's own reading, not the event it held from site b.
        let rows = try [entries[1], entries[3], entries[4]].enumerated().map { index, entry in
            var row = try #require(entry.logEntry).logRow(sequenceNumber: 1, encoder: encoder)
            row.id = Int64(index + 1)
            return row
        }
        let leading = Commit(rows: rows, of: entries, ticks: true)
        func described(_ commit: Commit) -> [String] {
            commit.items.map { item in
                switch item {
                case .event(let event): event.event.visitor.faceId
                case .tick(let time): "tick \(time.timeIntervalSince(start))"
                }
            }
        }
        #expect(described(leading) == [new.published.event.visitor.faceId, "tick 3.0"])
        #expect(leading.gauge == reading(at: 3))
        #expect(leading.capturedAt.count == 1)
        #expect(described(Commit(rows: rows, of: entries, ticks: false)) == [new.published.event.visitor.faceId])
    }

    @Test(
        "a replica of a shared log publishes every replica's commits in log order, and the gauge's reading at a tick counts what this replica and the others committed before it"
    )
    func follower() async throws {
        let server = try await PostgresServer()
        defer { server.stop() }
        var logger = Logger(label: "test-follower")
        logger.logLevel = .warning
        var database = DatabaseServer(url: server.url)
        database.tls = .disable
        let mine = try await PostgresEventStore.open(database, logger: logger)
        let other = try await PostgresEventStore.open(database, logger: logger)
        // A query before the pool runs waits for it, and ends when its task is cancelled (it hung for good).
        let early = Task { try await mine.events(after: 0, limit: 1, bytes: 1 << 20) }
        try await Task.sleep(for: .milliseconds(200))
        early.cancel()
        await #expect(throws: StoreError.self) { try await early.value }
        var policy = PrivacyPolicy()
        policy.minGroupSize = 1
        let telemetry = Telemetry()
        let hub = Hub(bound: 100, telemetry: telemetry)
        let broadcaster = Broadcaster(telemetry: telemetry)
        let aggregation = Aggregation(policy: policy, gauge: GaugeSettings())
        let live = LiveState(running: [], catalogue: .init(sources: [], zones: []), aggregation: aggregation)
        let services = StoreWriter.services(
            store: mine, hub: hub, broadcaster: broadcaster, live: live, policy: policy, aggregation: aggregation,
            clientBufferEvents: 256, telemetry: telemetry, logger: logger)
        #expect(services.count == 4 && services.first is LogFollower)
        // What this replica publishes, as an SSE client gets it.
        let client = try #require(broadcaster.subscribe(EventFilter(), capacity: 1_000))
        // Each log's connections and this replica's services, as its service group runs them.
        try await withThrowingTaskGroup(of: Void.self) { group in
            for service in [mine, other] + services { group.addTask { try await service.run() } }
            defer { group.cancelAll() }
            var mask = PrivacyMask(policy: policy, keys: try PseudonymKeyRing())
            func logged(_ enough: ([LoggedEvent]) -> Bool) async throws -> [LoggedEvent] {
                var rows: [LoggedEvent] = []
                _ = try await waitFor {
                    rows = try await other.events(after: 0, limit: 10)
                    return enough(rows)
                }
                return rows
            }
            // This replica is running once its first event is logged (it recovers before it writes); then another
            // replica logs a visitor of camera b, and this one's source hands over one of camera a and a tick right
            // behind it.
            hub.submit(try event("a#1#1", at: 0, mask: &mask))
            _ = try await logged { !$0.isEmpty }
            let theirs = try event("b#1#1", source: "b", at: 1, mask: &mask)
            _ = try await other.append([.visitor(stored: theirs.stored, published: theirs.published)])
            hub.submit(try event("a#1#1", at: 2, mask: &mask))
            hub.tick(time: start.addingTimeInterval(3))
            let rows = try await logged { $0.contains { $0.type == .gauge } }
            let row = try #require(rows.first { $0.type == .gauge }, "no reading logged: \(rows.map(\.type))")
            let logged = try JSONDecoder.sentinel().decode(GaugeReading.self, from: row.payload)
            guard case .value(_, let visitors) = logged.overall else {
                Issue.record("the overall reading is suppressed: \(logged)")
                return
            }
            #expect(visitors == 2)
            #expect(Set(logged.sources.keys) == ["a", "b"])
            // Who is present is the fleet's too, as of the last commit followed.
            #expect(live.now.occupancy.snapshot(zones: []).visitors == .value(2, visitors: 2))
            // Published in the log's order, every row once, the other replica's among them.
            let reader = Task {
                var published: [Int64] = []
                while published.count < rows.count, let items = await client.next() {
                    for case .messages(let messages) in items { published += messages.events.map(\.id) }
                }
                return published
            }
            // A client that waits in vain ends (cancelled, its queue finishes) rather than hang the suite.
            let watchdog = Task {
                try await Task.sleep(for: .seconds(60))
                reader.cancel()
            }
            let published = await reader.value
            watchdog.cancel()
            #expect(published == rows.map(\.id), "published \(published), logged \(rows.map(\.id))")
        }
    }
}
