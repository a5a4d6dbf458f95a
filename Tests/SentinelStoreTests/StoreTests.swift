import Foundation
import GRDB
import Logging
import SentinelConfig
import SentinelCore
import SentinelPrivacy
import SentinelTestSupport
import SentinelWire
import Testing

@testable import SentinelStore

/// Masked log entries as a source hands them over: one visit through two zones.
struct Visit {
    var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try! PseudonymKeyRing())
    let start: Date

    init(start: Date) { self.start = start }

    mutating func logEntry(
        _ type: VisitorEvent.Kind, id: String = "cam#1#1", at second: Double, stay: VisitorEvent.Stay? = nil,
        reason: ExitReason? = nil, since first: Double = 0
    ) throws -> LogEntry {
        let time = start.addingTimeInterval(second)
        let visitor = VisitorRecord(
            faceId: id, sourceId: "cam", zone: stay?.zone, state: type == .exited ? .exited : .active,
            dwellSeconds: second,
            firstSeen: start.addingTimeInterval(first), lastSeen: time, emotion: .known(.happy), emotionConfidence: 0.9,
            valence: 1,
            box: Box(x: 1, y: 2, width: 30, height: 30))
        let masked = try mask.mask(
            VisitorEvent(type: type, time: time, visitor: visitor, stay: stay, reason: reason, mediaTime: second))
        return .visitor(stored: masked.stored, published: masked.published)
    }

    /// entered, zoneEntered display, zoneExited display (dwell 4 s), exited.
    mutating func whole(id: String = "cam#1#1", at offset: Double = 0) throws -> [LogEntry] {
        let entered = start.addingTimeInterval(offset + 1)
        return [
            try logEntry(.entered, id: id, at: offset, since: offset),
            try logEntry(
                .zoneEntered, id: id, at: offset + 1, stay: .init(zone: "display", enteredAt: entered), since: offset),
            try logEntry(
                .zoneExited, id: id, at: offset + 5,
                stay: .init(
                    zone: "display", enteredAt: entered, exitedAt: entered.addingTimeInterval(4), dwellSeconds: 4),
                since: offset),
            try logEntry(.exited, id: id, at: offset + 6, reason: .lost, since: offset),
        ]
    }
}

func temporaryDatabase() throws -> String {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sentinel-store-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    return folder.appendingPathComponent("test.sqlite").path
}

/// Each log a test can open: the embedded SQLite store, and the PostgreSQL one (a throwaway Debian server, started
/// by the test).
enum LogKind: String, CaseIterable, CustomTestStringConvertible {
    case sqlite, postgres

    var testDescription: String { rawValue }

    /// Runs `body` with a new, empty log and a way to open it again (as the next process, or a second replica,
    /// would). A PostgreSQL log's connections run beside the body, as a service group runs them, and stop with it.
    func with(
        _ body: (_ log: any EventLog, _ reopen: () async throws -> any EventLog) async throws -> Void
    ) async throws {
        switch self {
        case .sqlite:
            let path = try temporaryDatabase()
            let log = try EventStore(path: path)
            try await body(log) {
                log.relinquish()
                return try EventStore(path: path)
            }
        case .postgres:
            let server = try await PostgresServer()
            defer { server.stop() }
            let database = server.plain
            var logger = Logger(label: "test-postgres")
            logger.logLevel = .warning
            try await withThrowingTaskGroup(of: Void.self) { group in
                defer { group.cancelAll() }
                let log = try await PostgresEventStore.open(database, logger: logger)
                group.addTask { await log.run() }
                try await body(log) {
                    let again = try await PostgresEventStore.open(database, logger: logger)
                    group.addTask { await again.run() }
                    return again
                }
            }
        }
    }
}

extension PostgresServer {
    /// The server as a pipeline file names it, without TLS (the test cluster has none).
    var plain: DatabaseServer {
        var database = DatabaseServer(url: url)
        database.tls = .disable
        return database
    }
}

/// On threads of its own: opening a PostgreSQL log is given 15 s, and on the shared task threads of a full run its
/// round trips each queued behind computing tests (opening took 9-11 s there against 1.5-5.5 s on its own thread,
/// and over 15 s in one CI run).
@Suite("Store", .ownThread)
struct StoreTests {
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "the log assigns increasing ids and gap-free sequence numbers per stream, across a reopen",
        arguments: LogKind.allCases)
    func idsAndSequences(kind: LogKind) async throws {
        try await kind.with { log, reopen in
            var visit = Visit(start: start)
            let first = try await log.append(try visit.whole() + [.gauge(reading(at: 7))])
            #expect(first.map(\.id) == [1, 2, 3, 4, 5])
            #expect(first.map(\.sequenceNumber) == [1, 2, 3, 4, 1])
            #expect(first.map(\.streamId) == ["cam", "cam", "cam", "cam", "sentiment"])
            let again = try await reopen()
            let second = try await again.append(try visit.whole(id: "cam#1#2", at: 10) + [.gauge(reading(at: 17))])
            #expect(second.map(\.id) == [6, 7, 8, 9, 10])
            #expect(second.map(\.sequenceNumber) == [5, 6, 7, 8, 2])
            #expect(try await again.events(after: 3, limit: 4).map(\.id) == [4, 5, 6, 7])
            #expect(try await again.events(after: 0, limit: 20) == first + second)
            #expect(try await again.logBounds() == (floor: 0, last: 10))
            // A page sized in bytes ends with the row that brings it to the size; it holds one row at least.
            let sizes = (first + second).map(\.payload.count)
            let threeRows = sizes[3] + sizes[4] + sizes[5]
            #expect(try await again.events(after: 3, limit: 20, bytes: threeRows).map(\.id) == [4, 5, 6])
            #expect(try await again.events(after: 3, limit: 20, bytes: threeRows + 1).map(\.id) == [4, 5, 6, 7])
            #expect(try await again.events(after: 3, limit: 2, bytes: threeRows).map(\.id) == [4, 5])
            #expect(try await again.events(after: 3, limit: 20, bytes: 1).map(\.id) == [4])
        }
    }

    @Test("a forwarded event is logged once: its site's id again is left out", arguments: LogKind.allCases)
    func forwardedOnce(kind: LogKind) async throws {
        try await kind.with { log, reopen in
            func forwarded(_ ids: [Int64]) -> [LogEntry] {
                ids.map { .gauge(reading(at: Double($0)), origin: .init(site: "paris-1", id: $0)) }
            }
            let first = try await log.append(forwarded([1, 2, 3]))
            #expect(first.map(\.streamId) == Array(repeating: "paris-1/sentiment", count: 3))
            let second = try await reopen().append(forwarded([2, 4, 3]))
            #expect(second.map(\.id) == [4] && second.map(\.sequenceNumber) == [4])
            #expect(try await log.received() == ["paris-1": 4])
            #expect(try await log.events(after: 0, limit: 10).count == 4)
        }
    }

    @Test(
        "a forwarded event deleted by retention is still known: a site sending it again (a broker replaying old messages) is not stored twice",
        arguments: LogKind.allCases)
    func forwardedOnceAfterRetention(kind: LogKind) async throws {
        try await kind.with { log, reopen in
            func forwarded(_ ids: [Int64]) -> [LogEntry] {
                ids.map { .gauge(reading(at: Double($0)), origin: .init(site: "paris-1", id: $0)) }
            }
            _ = try await log.append(forwarded([1, 2, 3]))
            var retained = log as! any RetentionTarget
            #expect(try await retained.deleteRecords(olderThan: start.addingTimeInterval(10)) > 0)
            #expect(try await log.events(after: 0, limit: 10).isEmpty)
            let again = try await reopen().append(forwarded([2, 3, 4]))
            #expect(again.count == 1 && again.first?.id == 4, "\(again.map(\.id))")
        }
    }

    @Test(
        "a store over privacy.retention.maxMegabytes loses its oldest records first, down to under the bound; counted apart from age",
        arguments: LogKind.allCases)
    func sizeBound(kind: LogKind) async throws {
        try await kind.with { store, _ in
            var visit = Visit(start: start)
            for n in 0..<300 {
                _ = try await store.append(try visit.whole(id: "cam#1#\(n + 1)", at: Double(n) * 60))
            }
            var target = store as! any RetentionTarget
            let (before, events) = try await target.storedSize()
            #expect(events == 1_200 && before > 0)
            var policy = RetentionPolicy()
            policy.maxBytes = Double(before) / 2
            var job = RetentionJob(policy: policy)
            let run = try #require(try await job.runIfDue(now: start.addingTimeInterval(300 * 60), on: &target))
            let (after, left) = try await target.storedSize()
            #expect(run.byAge == 0 && run.bySize > 0, "\(run)")
            #expect(Double(after) <= policy.maxBytes, "\(after) bytes left of \(before), bound \(policy.maxBytes)")
            // The newest kept, the oldest gone: what is left is a tail of the log.
            let kept = try await store.events(after: 0, limit: 2_000)
            #expect(kept.count == left && left > 0 && kept.last?.id == 1_200)
            #expect(kept.map(\.id) == Array((1_200 - Int64(left) + 1)...1_200))
            // SQLite's write-ahead log, which held every page the cut freed, is given back, and so are the free pages:
            // the file is about what is left in it.
            if let sqlite = store as? EventStore {
                let wal = try FileManager.default.attributesOfItem(atPath: sqlite.path + "-wal")[.size] as? Int
                #expect(wal == 0, "write-ahead log of \(wal ?? -1) bytes after the cut")
                let file = try FileManager.default.attributesOfItem(atPath: sqlite.path)[.size] as? Int ?? 0
                #expect(Double(file) <= Double(after) * 1.1 + 65_536, "a file of \(file) bytes holding \(after)")
            }
        }
    }

    @Test(
        "a burst that shares one second is cut by the order it was logged in, not by its time",
        arguments: LogKind.allCases)
    func sizeBoundInABurst(kind: LogKind) async throws {
        try await kind.with { store, _ in
            var visit = Visit(start: start)
            _ = try await store.append(
                try (1...1_000).map { try visit.logEntry(.entered, id: "cam#1#\($0)", at: 0) })
            var target = store as! any RetentionTarget
            let (before, _) = try await target.storedSize()
            var policy = RetentionPolicy()
            policy.maxBytes = Double(before) / 2
            var job = RetentionJob(policy: policy)
            let run = try #require(try await job.runIfDue(now: start.addingTimeInterval(60), on: &target))
            let (after, left) = try await target.storedSize()
            #expect(run.bySize > 0 && Double(after) <= policy.maxBytes, "\(run): \(after) bytes left of \(before)")
            let kept = try await store.events(after: 0, limit: 2_000)
            #expect(kept.map(\.id) == Array((1_000 - Int64(left) + 1)...1_000))
        }
    }

    @Test("one replica of a PostgreSQL log leads at a time; when it goes, the next to ask takes the lead")
    func oneLeader() async throws {
        let server = try await PostgresServer()
        defer { server.stop() }
        var logger = Logger(label: "test-postgres")
        logger.logLevel = .warning
        let second = try await PostgresEventStore.open(server.plain, logger: logger)
        async let _ = second.run()
        // The first replica runs until it goes: its connections stop, and with them its lead.
        try await withThrowingTaskGroup(of: Void.self) { group in
            let first = try await PostgresEventStore.open(server.plain, logger: logger)
            group.addTask { await first.run() }
            #expect(await first.leads())
            #expect(await first.leads())
            #expect(await !second.leads())
            group.cancelAll()
        }
        var taken = await second.leads()
        for _ in 0..<50 {
            if taken { break }
            try await Task.sleep(for: .milliseconds(100))
            taken = await second.leads()
        }
        #expect(taken)
        let own = try EventStore(path: try temporaryDatabase())
        #expect(await own.leads(), "a log of its own always leads")
    }

    @Test("replicas appending to one PostgreSQL log at once: each origin once, ids and sequence numbers without gaps")
    func replicasShareTheLog() async throws {
        try await LogKind.postgres.with { first, open in
            let second = try await open()
            // Each replica gets its share of a site's messages, and the same few (a broker delivering again what a dead
            // replica never acknowledged) overlap: ids 1-205, 50 of them twice.
            func batches(offset: Int64) -> [[LogEntry]] {
                (0..<Int64(20)).map { (batch: Int64) -> [LogEntry] in
                    (Int64(1)...10).map { (i: Int64) -> LogEntry in
                        let id: Int64 = batch * 10 + i + offset
                        return LogEntry.gauge(reading(at: Double(id)), origin: .init(site: "lyon-2", id: id))
                    }
                }
            }
            async let one: Void = { for batch in batches(offset: 0) { _ = try await first.append(batch) } }()
            async let two: Void = { for batch in batches(offset: 5) { _ = try await second.append(batch) } }()
            _ = try await (one, two)
            let log = try await first.events(after: 0, limit: 1_000)
            #expect(log.map(\.id) == Array(1...205))
            #expect(log.map(\.sequenceNumber) == Array(1...205))
            let decoder = JSONDecoder.sentinel()
            let seconds = try log.map {
                try decoder.decode(GaugeReading.self, from: $0.payload).time.timeIntervalSince(start)
            }
            #expect(Set(seconds) == Set((1...205).map(Double.init)))
            #expect(try await second.received() == ["lyon-2": 205])
        }
    }

    @Test(
        "each logged event's type is a kind the log knows; a row of another type, written by hand, is an error, not a crash"
    )
    func loggedKinds() async throws {
        let path = try temporaryDatabase()
        var visit = Visit(start: start)
        let store = try EventStore(path: path)
        let logged = try await store.append(try visit.whole() + [.gauge(reading(at: 7))])
        #expect(
            logged.map(\.type) == [
                .visitor(.entered), .visitor(.zoneEntered), .visitor(.zoneExited), .visitor(.exited), .gauge,
            ])
        #expect(logged.map(\.type.rawValue).last == "sentiment.gauge")
        try await DatabaseQueue(path: path).write { db in
            try db.execute(sql: "UPDATE events SET type = 'visitor.teleported' WHERE id = 2")
        }
        await #expect(throws: StoreError.self) { try await store.events(after: 0, limit: 10) }
        #expect(try await store.events(after: 2, limit: 10).map(\.id) == [3, 4, 5])
    }

    @Test("the database and its WAL files are readable by the service's user only, even one made 0644 before")
    func fileModes() async throws {
        let path = try temporaryDatabase()
        #expect(FileManager.default.createFile(atPath: path, contents: nil, attributes: [.posixPermissions: 0o644]))
        var visit = Visit(start: start)
        let store = try EventStore(path: path)
        _ = try await store.append(try visit.whole())
        for file in [path, path + "-wal", path + "-shm"] {
            let mode = try FileManager.default.attributesOfItem(atPath: file)[.posixPermissions] as? Int
            #expect(mode == 0o600, "\(file): \(String(mode ?? 0, radix: 8))")
        }
    }

    @Test("with store.group the files are 0640 and that group's; an unknown group is an error naming it")
    func groupMode() async throws {
        let group = try #require(getgrgid(getegid())).pointee
        let name = String(cString: group.gr_name)
        let path = try temporaryDatabase()
        var visit = Visit(start: start)
        let store = try EventStore(path: path, group: name)
        _ = try await store.append(try visit.whole())
        for file in [path, path + "-wal", path + "-shm"] {
            let attributes = try FileManager.default.attributesOfItem(atPath: file)
            #expect(attributes[.posixPermissions] as? Int == 0o640, "\(file)")
            #expect((attributes[.groupOwnerAccountID] as? NSNumber)?.uint32Value == group.gr_gid, "\(file)")
        }
        let error = #expect(throws: StoreError.self) {
            try EventStore(path: try temporaryDatabase(), group: "no-such-group-x")
        }
        #expect(error?.message.contains("store.group no-such-group-x: no such group") == true)
    }

    @Test("a database made by the first schema is upgraded in place: rows kept, the per-stream lookup uses an index")
    func upgradeFromFirstSchema() async throws {
        let path = try temporaryDatabase()
        // The schema as the first release wrote it (migration "v1" only), with two events in it.
        let old = try DatabaseQueue(path: path)
        try await old.write { db in
            try db.execute(
                sql: """
                    CREATE TABLE grdb_migrations (identifier TEXT NOT NULL PRIMARY KEY);
                    INSERT INTO grdb_migrations VALUES ('v1');
                    CREATE TABLE events (id INTEGER PRIMARY KEY AUTOINCREMENT, streamId TEXT NOT NULL,
                        sequenceNumber INTEGER NOT NULL, type TEXT NOT NULL, time REAL NOT NULL, zone TEXT, payload TEXT NOT NULL);
                    CREATE INDEX events_time ON events(time);
                    CREATE INDEX events_type ON events(type, id);
                    CREATE TABLE visits (faceId TEXT PRIMARY KEY, sourceId TEXT NOT NULL, state TEXT NOT NULL, zone TEXT,
                        firstSeen REAL NOT NULL, lastSeen REAL NOT NULL, exitReason TEXT, record TEXT NOT NULL);
                    CREATE INDEX visits_lastSeen ON visits(lastSeen);
                    CREATE INDEX visits_firstSeen ON visits(firstSeen);
                    CREATE TABLE zoneStays (id INTEGER PRIMARY KEY AUTOINCREMENT, faceId TEXT NOT NULL, zone TEXT NOT NULL,
                        enteredAt REAL NOT NULL, exitedAt REAL, dwellSeconds REAL);
                    CREATE INDEX zoneStays_face ON zoneStays(faceId);
                    CREATE TABLE gaugeReadings (eventId INTEGER PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
                        time REAL NOT NULL, reading TEXT NOT NULL);
                    CREATE INDEX gaugeReadings_time ON gaugeReadings(time);
                    INSERT INTO events (streamId, sequenceNumber, type, time, payload) VALUES
                        ('cam', 1, 'visitor.entered', 1790000000, '{}'), ('cam', 2, 'visitor.updated', 1790000001, '{}');
                    """)
        }
        try old.close()
        var visit = Visit(start: start)
        let store = try EventStore(path: path)
        let appended = try await store.append(try visit.whole(id: "cam#1#9"))
        #expect(appended.map(\.sequenceNumber) == [3, 4, 5, 6])
        #expect(try await store.logBounds() == (floor: 0, last: 6))
        let plan = try await DatabaseQueue(path: path).read { db in
            try Row.fetchAll(
                db, sql: "EXPLAIN QUERY PLAN SELECT MAX(sequenceNumber) FROM events WHERE streamId = 'cam'"
            )
            .map { $0["detail"] as String }
        }
        #expect(plan.contains { $0.contains("events_stream_sequence") }, "\(plan)")
    }

    @Test(
        "visits and zone stays follow the events; the log holds exactly the published JSON", arguments: LogKind.allCases
    )
    func visitsAndStays(kind: LogKind) async throws {
        try await kind.with { store, _ in
            var visit = Visit(start: start)
            let batch = try visit.whole()
            let logged = try await store.append(batch)
            guard case .visitor(_, let published, _) = batch[2] else {
                Issue.record("not a visitor event")
                return
            }
            #expect(logged[2].payload == published.json)
            let faceId = published.event.visitor.faceId
            let stored = try #require(try await store.visit(faceId))
            #expect(stored.exitReason == .lost)
            #expect(
                stored.stays == [
                    .init(
                        zone: "display", enteredAt: start.addingTimeInterval(1), exitedAt: start.addingTimeInterval(5),
                        dwellSeconds: 4)
                ])
            let record = try JSONDecoder.sentinel().decode(VisitorRecord.self, from: stored.record)
            #expect(record.state == .exited && record.faceId == faceId && record.box == nil)
        }
    }

    @Test("a visit left open by a crash is closed as interrupted when the store is opened again")
    func interruptedVisits() async throws {
        let path = try temporaryDatabase()
        var visit = Visit(start: start)
        let open = try visit.whole().prefix(2)
        _ = try await EventStore(path: path).append(Array(open))
        guard case .visitor(_, let published, _) = try #require(open.first) else {
            Issue.record("the visit's first item is not a visitor event")
            return
        }
        let reopened = try EventStore(path: path)
        #expect(try await reopened.visit(published.event.visitor.faceId)?.exitReason == .interrupted)
    }

    @Test("one process owns a database: a second store on it is refused, naming the owner, and leaves it untouched")
    func oneOwner() async throws {
        let path = try temporaryDatabase()
        var visit = Visit(start: start)
        let open = try visit.whole().prefix(2)
        guard case .visitor(_, let published, _) = try #require(open.first) else {
            Issue.record("the visit's first item is not a visitor event")
            return
        }
        let faceId = published.event.visitor.faceId
        do {
            let first = try EventStore(path: path)
            _ = try await first.append(Array(open))
            // Opening it would have closed the first one's open visit as interrupted.
            let refused = #expect(throws: StoreError.self) { try EventStore(path: path) }
            #expect(refused?.code == .inUse)
            #expect(refused?.message.contains("\(path) is in use by another process (pid \(getpid()))") == true)
            let stored = try #require(try await first.visit(faceId))
            #expect(stored.exitReason == nil)
        }
        // Gone (as a process that ends, however it ends): the next one opens it.
        #expect(try await EventStore(path: path).visit(faceId)?.exitReason == .interrupted)
    }

    @Test(
        "retention deletes exactly the records older than the limit, and the job runs once per interval",
        arguments: LogKind.allCases)
    func retention(kind: LogKind) async throws {
        try await kind.with { store, _ in
            var policy = RetentionPolicy()
            policy.maxAgeSeconds = 30 * 86_400
            let now = start.addingTimeInterval(40 * 86_400)
            var visit = Visit(start: start)
            // A visit and a reading 40 days before now (gone), and a visit that starts exactly at the limit (kept).
            _ = try await store.append(try visit.whole(id: "cam#1#1", at: 0) + [.gauge(reading(at: 6))])
            let limit = 10 * 86_400.0
            _ = try await store.append(try visit.whole(id: "cam#1#2", at: limit) + [.gauge(reading(at: limit))])
            var job = RetentionJob(policy: policy)
            var target = store
            // 4 events + 1 gauge event, 1 gauge row, 1 visit (its stay goes with it, not counted).
            #expect(try await job.runIfDue(now: now, on: &target) == .init(byAge: 5 + 1 + 1))
            #expect(try await job.runIfDue(now: now.addingTimeInterval(60), on: &target) == nil)
            #expect(try await store.events(after: 0, limit: 100).map(\.id) == [6, 7, 8, 9, 10])
            #expect(try await store.logBounds() == (floor: 5, last: 10))
            #expect(try await store.gaugeReadings(since: start, limit: 10).count == 1)
            #expect(try await store.visits(from: start, to: now, after: nil, limit: 10).records.count == 1)
            let report = try await store.reportInput(from: start, to: now, source: nil)
            #expect(report.visits.count == 1 && report.stays.count == 1 && report.moods.count == 1)
        }
    }

    @Test("a database written by 0.4.0 is upgraded in place: its records are kept, stays now belong to visits")
    func upgradeFrom040() async throws {
        let path = try temporaryDatabase()
        let dump = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
            .appendingPathComponent("Fixtures/store-0.4.0.sql")
        let old = try DatabaseQueue(path: path)
        // The dump is its own transaction.
        try await old.writeWithoutTransaction { db in
            try db.execute(sql: try String(contentsOf: dump, encoding: .utf8))
            // A stay whose visit is gone: 0.4.0 had no foreign key to prevent it.
            try db.execute(sql: "INSERT INTO zoneStays (faceId, zone, enteredAt) VALUES ('gone', 'display', 0)")
        }
        let before = try await old.read { db in
            (
                events: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events")!,
                visits: try String.fetchAll(db, sql: "SELECT faceId FROM visits ORDER BY firstSeen, rowid"),
                stays: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM zoneStays")!
            )
        }
        try old.close()
        #expect(before.events > 100 && before.visits.count >= 3 && before.stays > before.visits.count)

        let store = try EventStore(path: path)
        let check = try DatabaseQueue(path: path)
        let after = try await check.read { db in
            (
                migrations: try String.fetchAll(db, sql: "SELECT identifier FROM grdb_migrations").count,
                events: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM events")!,
                stays: try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM zoneStays")!,
                keys: try Row.fetchAll(db, sql: "PRAGMA foreign_key_list(zoneStays)").count
            )
        }
        #expect(after.migrations == 5 && after.events == before.events)
        // An output that forwards the log starts from its beginning; nothing has been received from a site.
        #expect(try await store.acknowledged(by: "mqtt") == 0)
        #expect(try await store.received().isEmpty)
        #expect(after.stays == before.stays - 1 && after.keys == 1)
        let history = try await store.visits(from: .distantPast, to: .distantFuture, after: nil, limit: 100)
        #expect(history.records.count == before.visits.count)
        let first = try #require(await store.visit(before.visits[0]))
        #expect(!first.stays.isEmpty)
        // The log goes on from where 0.4.0 left it.
        let (_, last) = try await store.logBounds()
        var visit = Visit(start: Date())
        let appended = try await store.append(try visit.whole(id: "cam#9#1"))
        #expect(appended.first?.id == last + 1)
        // Deleting a visit deletes its stays.
        try await check.write { db in
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            try db.execute(sql: "DELETE FROM visits WHERE faceId = ?", arguments: [before.visits[0]])
        }
        #expect(try await store.visit(before.visits[0]) == nil)
        let orphans = try await check.read {
            try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM zoneStays WHERE faceId NOT IN (SELECT faceId FROM visits)")
        }
        #expect(orphans == 0)
    }

    @Test(
        "history pages visits overlapping a window in order of first sighting, a long visit included",
        arguments: LogKind.allCases)
    func historyPages(kind: LogKind) async throws {
        try await kind.with { store, _ in
            var visit = Visit(start: start)
            // One visit an hour for two days (the whole() visit lasts 8 s), and one that began 30 hours before the end.
            var batch: [LogEntry] = []
            for hour in 0..<48 { batch += try visit.whole(id: "cam#1#\(hour)", at: Double(hour) * 3_600) }
            batch.append(try visit.logEntry(.entered, id: "cam#2#1", at: 18 * 3_600, since: 18 * 3_600))
            batch.append(try visit.logEntry(.updated, id: "cam#2#1", at: 47 * 3_600 + 10, since: 18 * 3_600))
            _ = try await store.append(batch)
            // The last six hours: six hourly visits, and the long one (first seen before them).
            let from = start.addingTimeInterval(42 * 3_600 - 1)
            var seen: [Data] = []
            var cursor: VisitCursor?
            repeat {
                let page = try await store.visits(from: from, to: .distantFuture, after: cursor, limit: 3)
                seen += page.records
                cursor = page.next
            } while cursor != nil
            let firstSeen = try seen.map { try JSONDecoder.sentinel().decode(VisitorRecord.self, from: $0).firstSeen! }
            #expect(seen.count == 7)
            #expect(firstSeen == firstSeen.sorted())
            #expect(firstSeen.first == start.addingTimeInterval(18 * 3_600))
            #expect(VisitCursor("garbage") == nil && VisitCursor("1.5:7")?.description == "1.5:7")
        }
    }

    @Test("database failures say which file and what is wrong: full disk, locked, not a database")
    func errorsAreClear() async throws {
        let path = try temporaryDatabase()
        // A full disk, as SQLite reports it when the file may not grow.
        let queue = try DatabaseQueue(path: path)
        let full = #expect(throws: DatabaseError.self) {
            try queue.write { db in
                try db.execute(sql: "CREATE TABLE t (x BLOB)")
                try db.execute(sql: "PRAGMA max_page_count = \(try Int.fetchOne(db, sql: "PRAGMA page_count")! + 1)")
                for _ in 0..<10 { try db.execute(sql: "INSERT INTO t VALUES (zeroblob(8192))") }
            }
        }
        let diskFull = StoreError(try #require(full), path: path)
        #expect(
            diskFull.code == .diskFull && diskFull.message.contains(path) && diskFull.message.contains("disk is full"))

        let garbage = try temporaryDatabase()
        try Data(repeating: 0x41, count: 4096).write(to: URL(fileURLWithPath: garbage))
        let corrupt = #expect(throws: StoreError.self) { try EventStore(path: garbage) }
        #expect(corrupt?.code == .corrupt && corrupt?.message.contains(garbage) == true)

        // Another process holds the write lock.
        let lockedPath = try temporaryDatabase()
        let store = try EventStore(path: lockedPath)
        var holder = Configuration()
        holder.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: lockedPath, configuration: holder)
        try await other.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
        var visit = Visit(start: start)
        let batch = try visit.whole()
        let locked = await #expect(throws: StoreError.self) { try await store.append(batch) }
        #expect(locked?.code == .locked && locked?.message.contains(lockedPath) == true)
        try await other.writeWithoutTransaction { try $0.execute(sql: "COMMIT") }
        #expect(try await store.append(batch).count == 4)
    }

    func reading(at second: Double) -> GaugeReading {
        var gauge = SentimentGauge(
            settings: GaugeSettings(), minGroupSize: 3, sources: ["cam"],
            zones: [ZoneID(sourceId: "cam", name: "display")])
        return gauge.reading(now: start.addingTimeInterval(second))
    }
}

/// The checkpointer under a loaded machine: beside the whole suite (../shared's evaluations among it) it completed no
/// checkpoint in 120 s, which it does in about a second alone or in a fresh clone's full run; the cause is not found
/// yet (`run()` swallows the checkpoint's error). Run alone, after the rest (the Makefile), until it is.
@Suite("Store checkpoints")
struct CheckpointTests {
    let start = Date(timeIntervalSince1970: 1_790_000_000)

    @Test(
        "run as a service, the SQLite store checkpoints off the write path: its write-ahead log restarts instead of growing by every batch, and the service ends when cancelled"
    )
    func checkpoints() async throws {
        let path = try temporaryDatabase()
        let store = try EventStore(path: path)
        // The write-ahead log's header from its checkpoint sequence number on (bytes 12-23, with the salts): written
        // anew each time the log restarts from its beginning, after a checkpoint copied all of it.
        func restarts() throws -> Data {
            let handle = try #require(FileHandle(forReadingAtPath: path + "-wal"))
            defer { try? handle.close() }
            return try handle.bytes(upTo: 24).dropFirst(12)
        }
        var visit = Visit(start: start)
        var next = 0
        func write(_ count: Int) async throws {
            for _ in 0..<count {
                next += 1
                _ = try await store.append(try visit.whole(id: "cam#1#\(next)", at: Double(next) * 60))
            }
        }
        // Not run: nothing checkpoints (SQLite's own checkpoints are off), the log only grows.
        try await write(100)
        let before = try restarts()
        try await write(100)
        #expect(try restarts() == before)
        // Run: the log restarts at the first write after a checkpoint has copied all of it. Each round waits for a
        // checkpoint that began after the last write (the count moving on twice), however long a loaded machine
        // makes that take, then writes.
        let service = Task { await store.run() }
        var restarted = false
        for _ in 0..<5 where !restarted {
            let rounds = store.checkpointRounds
            #expect(try await waitFor(seconds: 120) { store.checkpointRounds >= rounds + 2 }, "no checkpoint ran")
            try await write(1)
            restarted = try restarts() != before
        }
        #expect(restarted, "the write-ahead log never restarted")
        service.cancel()
        await service.value
        #expect(try await store.events(after: 0, limit: 100_000).count == next * 4)
    }
}
