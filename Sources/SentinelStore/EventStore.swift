import Foundation
import GRDB
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import Synchronization

/// Something to publish: a visitor event that has passed the mask for the store, or a gauge reading. Either may have
/// been logged by another box first and forwarded (`sentinel fleet`): its origin is then stored with it, in the same
/// transaction, so each (site, id) is logged once.
public enum Publication: Sendable {
    case visitor(stored: MaskedEvent, published: MaskedEvent, origin: Origin? = nil)
    case gauge(GaugeReading, origin: Origin? = nil)

    /// The stream of gauge readings, beside one stream per source.
    public static let gaugeStream = "sentiment"

    /// Where a forwarded event was logged first: the box's site and its log id there.
    public struct Origin: Sendable, Equatable {
        public var site: String
        public var id: Int64
        public init(site: String, id: Int64) {
            self.site = site
            self.id = id
        }
    }

    var origin: Origin? {
        switch self {
        case .visitor(_, _, let origin), .gauge(_, let origin): origin
        }
    }
}

/// One row of the event log: what the SSE stream sends, in the order it was committed.
public struct LoggedEvent: Sendable, Equatable {
    /// The log's monotonic id, also the SSE `id:`.
    public var id: Int64
    /// Position within its stream (a source, or the gauge's), from 1 without gaps.
    public var sequenceNumber: Int64
    public var streamId: String
    public var type: String
    public var time: Date
    /// The zone of a visitor event (its stay's, else the visitor's), for filtering.
    public var zone: String?
    /// The published JSON.
    public var payload: Data

    public init(
        id: Int64, sequenceNumber: Int64, streamId: String, type: String, time: Date, zone: String?, payload: Data
    ) {
        self.id = id
        self.sequenceNumber = sequenceNumber
        self.streamId = streamId
        self.type = type
        self.time = time
        self.zone = zone
        self.payload = payload
    }
}

/// The SQLite store (GRDB, WAL): an append-only event log, visits, zone stays and gauge readings.
///
/// Everything here has passed the mask: rows hold the store's copy of each event, and the log holds the published
/// copy (the store's, reduced to what the events output allows). Every batch is one transaction with
/// `synchronous = FULL`, so a batch that `append` returned from survives kill -9 and power loss.
public final class EventStore: Sendable {
    /// The SQLite library's version, as loaded ("3.40.1"), or "unknown" if an in-memory database cannot be opened.
    public static var sqliteVersion: String {
        ((try? DatabaseQueue().read { try String.fetchOne($0, sql: "SELECT sqlite_version()") }) ?? nil) ?? "unknown"
    }

    public let path: String
    let pool: DatabasePool
    /// The store's records of the visits a crash (or kill -9) left open, closed as `interrupted` when this store was
    /// opened: the service publishes their `visitor.exited`, so clients drop them.
    public let interrupted: [Data]
    /// The longest visit stored (seconds from first to last sighting): a history query for visits overlapping a
    /// window only reads those first seen that long before it, on the `firstSeen` index.
    private let longestVisit: Mutex<Double>
    private let checkpointer: Checkpointer
    private let owner: Owner

    /// Opens (creating it and its folder if needed) and migrates the database: one process at a time (see `Owner`). Visits left open by a crash are closed as
    /// `interrupted`. The files are the service user's alone (0600), or also readable by `group` (0640), for a
    /// backup or reporting account.
    ///
    /// A fleet's store holds visits its sites own (`ownsVisits` false): they stay as they are, since the sites say
    /// when they end.
    public init(path: String, group: String? = nil, ownsVisits: Bool = true) throws(StoreError) {
        self.path = path
        var gid: gid_t?
        if let group {
            guard let entry = getgrnam(group) else {
                throw StoreError(.cannotOpen, "store.group \(group): no such group on this machine (see getent group)")
            }
            gid = entry.pointee.gr_gid
        }
        let mode: mode_t = gid == nil ? 0o600 : 0o640
        var configuration = Configuration()
        configuration.busyMode = .timeout(2)
        // Checkpoints are the checkpointer's, off the write path.
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0")
        }
        do {
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
            // Visits are personal data: only the service's user (and the configured group) may read them. SQLite gives
            // the -wal and -shm files the database file's mode, so making (or tightening) that file first covers
            // their mode; their group is set once they exist.
            let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, mode)
            if descriptor >= 0 {
                fchmod(descriptor, mode)
                close(descriptor)
            }
            owner = try Owner(database: path, mode: mode)
            pool = try DatabasePool(path: path, configuration: configuration)
            if let gid {
                for file in [path, path + "-wal", path + "-shm"]
                where chown(file, uid_t.max, gid) != 0 && errno != ENOENT {
                    throw StoreError(
                        .cannotOpen,
                        "database \(file): cannot give it to group \(group!): \(String(cString: strerror(errno))) "
                            + "(the service's user must be a member of that group)")
                }
            }
            try Self.migrator.migrate(pool)
            interrupted = try pool.write { db in
                guard ownsVisits else { return [] }
                let exited = VisitState.exited.rawValue
                let open = try VisitRow.filter(Column("state") != exited).fetchAll(db).map(\.record)
                try db.execute(
                    sql: "UPDATE visits SET state = ?, exitReason = ? WHERE state != ?",
                    arguments: [exited, ExitReason.interrupted.rawValue, exited])
                return open.map { Data($0.utf8) }
            }
            checkpointer = try Checkpointer(path: path, configuration: configuration)
            longestVisit = Mutex(
                try pool.read { try Double.fetchOne($0, sql: "SELECT MAX(lastSeen - firstSeen) FROM visits") } ?? 0)
        } catch {
            throw StoreError(error, path: path)
        }
    }

    private static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(
                sql: """
                    CREATE TABLE events (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        streamId TEXT NOT NULL,
                        sequenceNumber INTEGER NOT NULL,
                        type TEXT NOT NULL,
                        time REAL NOT NULL,
                        zone TEXT,
                        payload TEXT NOT NULL
                    );
                    CREATE INDEX events_time ON events(time);
                    CREATE INDEX events_type ON events(type, id);
                    CREATE TABLE visits (
                        faceId TEXT PRIMARY KEY,
                        sourceId TEXT NOT NULL,
                        state TEXT NOT NULL,
                        zone TEXT,
                        firstSeen REAL NOT NULL,
                        lastSeen REAL NOT NULL,
                        exitReason TEXT,
                        record TEXT NOT NULL
                    );
                    CREATE INDEX visits_lastSeen ON visits(lastSeen);
                    CREATE INDEX visits_firstSeen ON visits(firstSeen);
                    CREATE TABLE zoneStays (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        faceId TEXT NOT NULL,
                        zone TEXT NOT NULL,
                        enteredAt REAL NOT NULL,
                        exitedAt REAL,
                        dwellSeconds REAL
                    );
                    CREATE INDEX zoneStays_face ON zoneStays(faceId);
                    CREATE TABLE gaugeReadings (
                        eventId INTEGER PRIMARY KEY REFERENCES events(id) ON DELETE CASCADE,
                        time REAL NOT NULL,
                        reading TEXT NOT NULL
                    );
                    CREATE INDEX gaugeReadings_time ON gaugeReadings(time);
                    """)
        }
        // Every batch looks up each stream's last sequence number: without this index that scans the whole log
        // (measured: 380 ms per lookup at 2 M events, 0.04 ms with it; built in 2 s on such a table). Unique: a
        // stream's sequence numbers never repeat.
        migrator.registerMigration("v2 events by stream") { db in
            try db.execute(sql: "CREATE UNIQUE INDEX events_stream_sequence ON events(streamId, sequenceNumber)")
        }
        // A stay belongs to its visit: retention deletes a visit's stays with it. SQLite adds a foreign key only by
        // rebuilding the table; stays whose visit is gone (possible before this) are not carried over.
        migrator.registerMigration("v3 stays belong to visits") { db in
            try db.execute(
                sql: """
                    CREATE TABLE zoneStays_new (
                        id INTEGER PRIMARY KEY AUTOINCREMENT,
                        faceId TEXT NOT NULL REFERENCES visits(faceId) ON DELETE CASCADE,
                        zone TEXT NOT NULL,
                        enteredAt REAL NOT NULL,
                        exitedAt REAL,
                        dwellSeconds REAL
                    );
                    INSERT INTO zoneStays_new SELECT * FROM zoneStays WHERE faceId IN (SELECT faceId FROM visits);
                    DROP TABLE zoneStays;
                    ALTER TABLE zoneStays_new RENAME TO zoneStays;
                    CREATE INDEX zoneStays_face ON zoneStays(faceId);
                    """)
        }
        // Outputs that forward the log (MQTT) keep their acknowledged position here, durably.
        migrator.registerMigration("v4 outbox") { db in
            try db.execute(sql: "CREATE TABLE outbox (output TEXT PRIMARY KEY, acknowledged INTEGER NOT NULL)")
        }
        migrator.registerMigration("v5 inbox") { db in
            try db.execute(sql: "CREATE TABLE inbox (site TEXT PRIMARY KEY, received INTEGER NOT NULL)")
        }
        return migrator
    }

    deinit { checkpointer.stop() }

    /// Gives up this store's claim on its database (see `Owner`): for a service that has stopped, so that another
    /// store may open it in this process, as one would in the next. A process that ends gives it up all the same.
    public func relinquish() { owner.release() }

    /// The store's claim on its database, so that one process writes it: a second `sentinel run` on the same file
    /// would otherwise close the first one's open visits as `interrupted` when it opens the store, then write beside
    /// it. An exclusive `flock` on `<database>.lock`, holding the owner's pid for the message; the kernel releases it
    /// when the process ends, however it ends, so a crash never leaves a stale claim. (Not a lock on the database file
    /// itself: closing any other descriptor of that file would drop SQLite's own locks.)
    private final class Owner: Sendable {
        private let descriptor: Mutex<Int32?>

        init(database: String, mode: mode_t) throws(StoreError) {
            let path = database + ".lock"
            let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, mode)
            guard descriptor >= 0 else {
                throw StoreError(
                    .cannotOpen, "database \(database): cannot open \(path): \(String(cString: strerror(errno)))")
            }
            // A lock this process let go of can still be held a moment by a child it was forking (the descriptor
            // is closed only at the child's exec): when the holder named is this process, wait for that.
            let deadline = ContinuousClock.now + .seconds(2)
            func lock() -> Int32 { flock(descriptor, LOCK_EX | LOCK_NB) == 0 ? 0 : errno }
            var failure = lock()
            while failure == EWOULDBLOCK, Self.holder(descriptor) == "\(getpid())", ContinuousClock.now < deadline {
                usleep(10_000)
                failure = lock()
            }
            guard failure == 0 else {
                let held = failure == EWOULDBLOCK
                let reason = String(cString: strerror(failure))
                let pid = Self.holder(descriptor)
                close(descriptor)
                guard held else {
                    throw StoreError(.cannotOpen, "database \(database): cannot lock \(path): \(reason)")
                }
                throw StoreError(
                    .inUse,
                    "database \(database) is in use by another process\(pid.isEmpty ? "" : " (pid \(pid))"): one "
                        + "sentinel per database; stop that one, or give this one its own store.path")
            }
            let pid = Array("\(getpid())".utf8)
            ftruncate(descriptor, 0)
            _ = pwrite(descriptor, pid, pid.count, 0)
            self.descriptor = Mutex(descriptor)
        }

        /// The pid the lock file names.
        private static func holder(_ descriptor: Int32) -> String {
            var bytes = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &bytes, bytes.count, 0)
            return count > 0 ? String(decoding: bytes[..<count], as: UTF8.self) : ""
        }

        func release() {
            descriptor.withLock { descriptor in
                if let open = descriptor { close(open) }
                descriptor = nil
            }
        }

        deinit { release() }
    }

    /// Writes a batch in one transaction and returns its log rows, ids assigned. The write runs on GRDB's writer
    /// queue: waiting for a lock held by another process suspends the caller instead of blocking its thread.
    public func append(_ batch: [Publication]) async throws(StoreError) -> [LoggedEvent] {
        guard !batch.isEmpty else { return [] }
        do {
            let written = try await pool.write { db in
                let encoder = JSONEncoder.sentinel()
                var sequences: [String: Int64] = [:]
                func next(_ stream: String) throws -> Int64 {
                    let last =
                        try sequences[stream]
                        ?? Int64.fetchOne(
                            db, sql: "SELECT MAX(sequenceNumber) FROM events WHERE streamId = ?", arguments: [stream])
                        ?? 0
                    sequences[stream] = last + 1
                    return last + 1
                }
                var logged: [LoggedEvent] = []
                var longest = 0.0
                for publication in batch {
                    var row: LoggedEvent
                    switch publication {
                    case .visitor(let stored, let published, _):
                        let event = published.event
                        row = LoggedEvent(
                            id: 0, sequenceNumber: try next(event.visitor.sourceId), streamId: event.visitor.sourceId,
                            type: event.type.rawValue, time: event.time, zone: event.stay?.zone ?? event.visitor.zone,
                            payload: published.json)
                        try Self.record(stored.event, record: try encoder.encode(published.event.visitor), in: db)
                        let visitor = stored.event.visitor
                        longest = max(
                            longest, stored.event.time.timeIntervalSince(visitor.firstSeen ?? stored.event.time))
                    case .gauge(let reading, let origin):
                        // A site's readings are a stream of their own beside the fleet's.
                        let stream = origin.map { "\($0.site)/\(Publication.gaugeStream)" } ?? Publication.gaugeStream
                        row = LoggedEvent(
                            id: 0, sequenceNumber: try next(stream), streamId: stream,
                            type: EventEnvelope.gaugeType, time: reading.time, zone: nil,
                            payload: try encoder.encode(reading))
                    }
                    try db.cachedStatement(
                        sql:
                            "INSERT INTO events (streamId, sequenceNumber, type, time, zone, payload) VALUES (?, ?, ?, ?, ?, ?)"
                    ).execute(
                        arguments: [
                            row.streamId, row.sequenceNumber, row.type, row.time.timeIntervalSince1970, row.zone,
                            String(decoding: row.payload, as: UTF8.self),
                        ])
                    row.id = db.lastInsertedRowID
                    if let origin = publication.origin { try Self.received(origin, in: db) }
                    if case .gauge = publication {
                        try db.cachedStatement(
                            sql: "INSERT INTO gaugeReadings (eventId, time, reading) VALUES (?, ?, ?)"
                        ).execute(
                            arguments: [
                                row.id, row.time.timeIntervalSince1970, String(decoding: row.payload, as: UTF8.self),
                            ])
                    }
                    logged.append(row)
                }
                return (logged: logged, longest: longest)
            }
            longestVisit.withLock { $0 = max($0, written.longest) }
            return written.logged
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// Keeps the visits and zone-stay tables in step with an event (the store's copy). `record` is the visitor as
    /// published, which the REST API serves.
    private static func record(_ event: VisitorEvent, record: Data, in db: Database) throws {
        let visitor = event.visitor
        let time = event.time.timeIntervalSince1970
        try db.cachedStatement(
            sql: """
                INSERT INTO visits (faceId, sourceId, state, zone, firstSeen, lastSeen, exitReason, record)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(faceId) DO UPDATE SET state = excluded.state, zone = excluded.zone,
                    lastSeen = excluded.lastSeen, exitReason = excluded.exitReason, record = excluded.record
                """
        ).execute(
            arguments: [
                visitor.faceId, visitor.sourceId, visitor.state.rawValue, visitor.zone,
                (visitor.firstSeen ?? event.time).timeIntervalSince1970, time, event.reason?.rawValue,
                String(decoding: record, as: UTF8.self),
            ])
        guard let stay = event.stay else { return }
        switch event.type {
        case .zoneEntered:
            try db.cachedStatement(
                sql: "INSERT INTO zoneStays (faceId, zone, enteredAt) VALUES (?, ?, ?)"
            ).execute(
                arguments: [visitor.faceId, stay.zone, stay.enteredAt.timeIntervalSince1970])
        case .zoneExited:
            try db.cachedStatement(
                sql:
                    "UPDATE zoneStays SET exitedAt = ?, dwellSeconds = ? WHERE faceId = ? AND zone = ? AND exitedAt IS NULL"
            ).execute(
                arguments: [
                    (stay.exitedAt ?? event.time).timeIntervalSince1970, stay.dwellSeconds, visitor.faceId, stay.zone,
                ])
        default:
            break
        }
    }

    /// The published visitor events logged at or after `time`, oldest first (to rebuild the gauge's window).
    public func visitorEvents(since time: Date) async throws(StoreError) -> [Data] {
        try await read { db in
            try EventRow.filter(Column("time") >= time.timeIntervalSince1970 && Column("type").like("visitor.%"))
                .order(Column("id")).fetchAll(db).map { Data($0.payload.utf8) }
        }
    }

    /// Log rows after `id`, oldest first.
    public func events(after id: Int64, limit: Int) async throws(StoreError) -> [LoggedEvent] {
        try await read { db in
            try EventRow.filter(Column("id") > id).order(Column("id")).limit(limit).fetchAll(db).map(\.logged)
        }
    }

    /// What a resuming client can be given: ids after `floor` are all in the log (ids at or below it were deleted by
    /// retention), and `last` is the newest id ever assigned.
    public func logBounds() async throws(StoreError) -> (floor: Int64, last: Int64) {
        try await read { db in
            let last = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'events'") ?? 0
            let oldest = try Int64.fetchOne(db, sql: "SELECT MIN(id) FROM events")
            return (floor: oldest.map { $0 - 1 } ?? last, last: last)
        }
    }

    /// A visit as published, with its zone stays.
    public struct Visit: Sendable, Equatable {
        public var record: Data
        public var exitReason: ExitReason?
        public var stays: [VisitorEvent.Stay]
    }

    public func visit(_ faceId: String) async throws(StoreError) -> Visit? {
        try await read { db in
            guard let visit = try VisitRow.filter(Column("faceId") == faceId).fetchOne(db) else { return nil }
            let stays = try StayRow.filter(Column("faceId") == faceId).order(Column("id")).fetchAll(db)
            return Visit(record: Data(visit.record.utf8), exitReason: visit.exitReason, stays: stays.map(\.stay))
        }
    }

    /// Visits that overlap `from..<to`, in order of first sighting, a page at a time: pass the returned cursor back
    /// for the next page (nil when there is none).
    public func visits(from: Date, to: Date, after cursor: VisitCursor?, limit: Int) async throws(StoreError) -> (
        records: [Data], next: VisitCursor?
    ) {
        // A visit overlapping the window was first seen before its end and at most the longest visit before its
        // start: a range of the firstSeen index, walked in (firstSeen, rowid) order from the cursor.
        let earliest = from.timeIntervalSince1970 - longestVisit.withLock { $0 }
        let start = cursor ?? VisitCursor(firstSeen: -.greatestFiniteMagnitude, row: 0)
        return try await read { db in
            let rows = try Row.fetchAll(
                db,
                sql: """
                    SELECT rowid, * FROM visits
                    WHERE firstSeen >= ? AND firstSeen < ? AND lastSeen >= ? AND (firstSeen, rowid) > (?, ?)
                    ORDER BY firstSeen, rowid LIMIT ?
                    """,
                arguments: [
                    earliest, to.timeIntervalSince1970, from.timeIntervalSince1970, start.firstSeen, start.row,
                    limit + 1,
                ])
            let page = rows.prefix(limit)
            let next =
                rows.count > limit ? page.last.map { VisitCursor(firstSeen: $0["firstSeen"], row: $0["rowid"]) } : nil
            return (try page.map { Data(try VisitRow(row: $0).record.utf8) }, next)
        }
    }

    /// Where a page of visits ended. Written `firstSeen:rowid` (`firstSeen` as the shortest decimal that reads back
    /// exactly), opaque to clients.
    public struct VisitCursor: Sendable, Equatable, LosslessStringConvertible {
        var firstSeen: Double
        var row: Int64

        init(firstSeen: Double, row: Int64) {
            self.firstSeen = firstSeen
            self.row = row
        }

        public init?(_ text: String) {
            let parts = text.split(separator: ":")
            guard parts.count == 2, let firstSeen = Double(parts[0]), firstSeen.isFinite, let row = Int64(parts[1])
            else { return nil }
            self.init(firstSeen: firstSeen, row: row)
        }

        public var description: String { "\(firstSeen):\(row)" }
    }

    /// Gauge readings since `since`, oldest first, at most `limit` (the newest ones).
    public func gaugeReadings(since: Date, limit: Int) async throws(StoreError) -> [Data] {
        try await read { db in
            try GaugeRow.filter(Column("time") >= since.timeIntervalSince1970).order(Column("time").desc).limit(limit)
                .fetchAll(db).reversed().map { Data($0.reading.utf8) }
        }
    }

    /// What a report of `from..<to` is made of: the visits that overlap it (of `source` alone, if given), their zone
    /// stays, and the gauge's overall readings in it.
    public func reportInput(from: Date, to: Date, source: String?) async throws(StoreError) -> (
        visits: [ReportBuilder.Visit], stays: [ReportBuilder.Stay],
        moods: [(time: Date, overall: Aggregate<GaugeReading.Level>)]
    ) {
        let earliest = from.timeIntervalSince1970 - longestVisit.withLock { $0 }
        return try await read { db in
            let visitRows = try Row.fetchAll(
                db,
                sql: """
                    SELECT faceId, sourceId, firstSeen, lastSeen FROM visits
                    WHERE firstSeen >= ? AND firstSeen < ? AND lastSeen >= ? AND (? IS NULL OR sourceId = ?)
                    """,
                arguments: [earliest, to.timeIntervalSince1970, from.timeIntervalSince1970, source, source])
            let visits = visitRows.map { row in
                ReportBuilder.Visit(
                    faceId: row["faceId"], sourceId: row["sourceId"],
                    firstSeen: Date(timeIntervalSince1970: row["firstSeen"]),
                    lastSeen: Date(timeIntervalSince1970: row["lastSeen"]))
            }
            let stayRows = try Row.fetchAll(
                db,
                sql: """
                    SELECT s.faceId, v.sourceId, s.zone, s.enteredAt, s.exitedAt, s.dwellSeconds
                    FROM zoneStays s JOIN visits v ON v.faceId = s.faceId
                    WHERE v.firstSeen >= ? AND v.firstSeen < ? AND v.lastSeen >= ? AND (? IS NULL OR v.sourceId = ?)
                    """,
                arguments: [earliest, to.timeIntervalSince1970, from.timeIntervalSince1970, source, source])
            let stays = stayRows.map { row in
                ReportBuilder.Stay(
                    faceId: row["faceId"], sourceId: row["sourceId"], zone: row["zone"],
                    enteredAt: Date(timeIntervalSince1970: row["enteredAt"]),
                    exitedAt: (row["exitedAt"] as Double?).map(Date.init(timeIntervalSince1970:)),
                    dwellSeconds: row["dwellSeconds"])
            }
            let decoder = JSONDecoder.sentinel()
            let moods = try GaugeRow.filter(
                Column("time") >= from.timeIntervalSince1970 && Column("time") < to.timeIntervalSince1970
            ).order(Column("time")).fetchAll(db).map { row in
                let reading = try decoder.decode(GaugeReading.self, from: Data(row.reading.utf8))
                return (time: reading.time, overall: reading.overall)
            }
            return (visits, stays, moods)
        }
    }

    /// A cheap query that fails when the database cannot be read.
    public func check() async throws(StoreError) {
        _ = try await read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    /// Reads on GRDB's reader pool without blocking the caller's thread: the HTTP handlers that call this run on
    /// Swift's few cooperative threads.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw StoreError(error, path: path)
        }
    }
}

extension EventStore: RetentionTarget {
    /// Deletes log rows and gauge readings older than `cutoff`, and visits last seen before it (their stays go with
    /// them, by the foreign key). Returns the rows deleted, cascaded ones not counted.
    public func deleteRecords(olderThan cutoff: Date) throws -> Int {
        let time = cutoff.timeIntervalSince1970
        do {
            return try pool.write { db in
                var deleted = 0
                try db.execute(sql: "DELETE FROM gaugeReadings WHERE time < ?", arguments: [time])
                deleted += db.changesCount
                try db.execute(sql: "DELETE FROM events WHERE time < ?", arguments: [time])
                deleted += db.changesCount
                try db.execute(sql: "DELETE FROM visits WHERE lastSeen < ?", arguments: [time])
                deleted += db.changesCount
                return deleted
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }
}

/// Copies the write-ahead log into the database file off the write path. SQLite's own checkpoint runs inside the
/// commit that takes the log past 1000 pages, so one batch in forty waited for the database file to be written and
/// synced. This thread runs a passive checkpoint every half second on a connection of its own: it never waits for
/// the writer or a reader, nor they for it, and the log restarts from its beginning once everything in it is copied.
final class Checkpointer: Sendable {
    private let stopped = Mutex(false)

    init(path: String, configuration: Configuration) throws {
        let connection = try DatabaseQueue(path: path, configuration: configuration)
        let thread = Thread { [self] in
            while !stopped.withLock({ $0 }) {
                Thread.sleep(forTimeInterval: 0.5)
                // Busy or locked: the next round tries again.
                try? connection.writeWithoutTransaction { try $0.checkpoint(.passive) }
            }
        }
        thread.name = "sqlite checkpoint"
        thread.start()
    }

    func stop() { stopped.withLock { $0 = true } }
}

/// A database problem, said plainly: which file, and whether the disk is full, the file read-only, the database
/// locked by another process, owned by another Sentinel, or something else.
public struct StoreError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case diskFull, readOnly, locked, inUse, cannotOpen, corrupt, other
        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String
    public let underlying: (any Error)?

    init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
        underlying = nil
    }

    init(_ error: any Error, path: String) {
        if let error = error as? StoreError {
            self = error
            return
        }
        underlying = error
        guard let error = error as? DatabaseError else {
            code = .other
            message = "database \(path): \(error)"
            return
        }
        switch error.resultCode {
        case .SQLITE_FULL:
            code = .diskFull
            message = "database \(path): the disk is full; events are kept in memory until space is freed"
        case .SQLITE_READONLY:
            code = .readOnly
            message = "database \(path) is read-only (check the file's and its folder's permissions)"
        case .SQLITE_BUSY, .SQLITE_LOCKED:
            code = .locked
            message = "database \(path) is locked by another process or connection"
        case .SQLITE_CANTOPEN, .SQLITE_PERM, .SQLITE_AUTH:
            code = .cannotOpen
            message =
                "database \(path) cannot be opened: \(error.message ?? "\(error.resultCode)") (does its folder exist and is it writable?)"
        case .SQLITE_CORRUPT, .SQLITE_NOTADB:
            code = .corrupt
            message =
                "database \(path) is damaged or not a Sentinel database: \(error.message ?? "\(error.resultCode)")"
        default:
            code = .other
            message = "database \(path): \(error.message ?? "\(error.resultCode)")"
        }
    }

}
