public import Foundation
public import Logging
import NIOSSL
import PostgresNIO
import SentinelAggregates
public import SentinelConfig
import SentinelCore
public import SentinelStore
import Synchronization

/// The event log on a PostgreSQL server, shared by the replicas of a fleet: the same tables, guarantees and answers
/// as the SQLite store (`EventStore`), for many writers.
///
/// Every append takes one transaction-scoped advisory lock before it assigns ids and sequence numbers, so appends
/// commit one at a time, in id order: a reader that follows the log by id (an SSE client, a replica) never passes an
/// id that commits later. A forwarded event's origin (site, id) is unique in the log: a message the broker delivers
/// to a second replica after the first stored it (the first died before acknowledging) is left out, whichever
/// replica sees it and in whatever order.
public final class PostgresEventStore: EventLog {
    public let location: String
    public var interrupted: [Data] { [] }
    public var isShared: Bool { true }
    let client: PostgresClient
    let runner: Task<Void, Never>
    let logger: Logger
    /// The connection of its own on which this replica holds (or tries for) the lead.
    let leadConnection: PostgresConnection.Configuration
    private let lead = Mutex<(connection: PostgresConnection?, held: Bool)>((nil, false))

    /// Appends take this lock, migrations the next, the lead the third: numbers no other program is likely to use.
    static let appendLock: Int64 = 0x5345_4e54_0001
    static let migrationLock: Int64 = 0x5345_4e54_0002
    static let leadLock: Int64 = 0x5345_4e54_0003

    /// Connects, waits for the server (at most `timeout`) and migrates the schema. A fleet's visits are its sites' to
    /// close, so nothing is closed as interrupted here.
    public static func open(_ server: DatabaseServer, logger: Logger, timeout: Duration = .seconds(15))
        async throws(StoreError) -> PostgresEventStore
    {
        guard let endpoint = server.endpoint else {
            throw StoreError(.cannotOpen, "database \(server.url): not a postgres://user@host[:port]/database URL")
        }
        let tls: PostgresClient.Configuration.TLS
        let leadTLS: PostgresConnection.Configuration.TLS
        do {
            switch server.tls {
            case .disable:
                (tls, leadTLS) = (.disable, .disable)
            case .prefer:
                tls = .prefer(.makeClientConfiguration())
                leadTLS = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require:
                tls = .require(.makeClientConfiguration())
                leadTLS = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            throw StoreError(.cannotOpen, "database \(endpoint): cannot set up TLS: \(error)", underlying: error)
        }
        let password = try server.password()
        var configuration = PostgresClient.Configuration(
            host: endpoint.host, port: endpoint.port, username: endpoint.user, password: password,
            database: endpoint.database, tls: tls)
        configuration.options.maximumConnections = server.connections
        configuration.options.minimumConnections = 1
        let store = PostgresEventStore(
            location: endpoint.description,
            client: PostgresClient(configuration: configuration, backgroundLogger: logger),
            leadConnection: .init(
                host: endpoint.host, port: endpoint.port, username: endpoint.user, password: password,
                database: endpoint.database, tls: leadTLS),
            logger: logger)
        do {
            try await store.within(timeout) { try await store.migrate() }
        } catch {
            store.relinquish()
            throw error
        }
        return store
    }

    private init(
        location: String, client: PostgresClient, leadConnection: PostgresConnection.Configuration, logger: Logger
    ) {
        self.location = location
        self.client = client
        self.leadConnection = leadConnection
        self.logger = logger
        runner = Task { await client.run() }
    }

    deinit { relinquish() }

    /// Closes the connections, and with the lead's the lead.
    public func relinquish() {
        runner.cancel()
        if let connection = lead.withLock({ state in
            defer { state = (nil, false) }
            return state.connection
        }) {
            Task { try? await connection.close() }
        }
    }

    /// One replica leads: the one holding a session advisory lock on a connection of its own. When it dies its
    /// session ends, the server releases the lock, and the next replica to ask takes the lead.
    public func leads() async -> Bool {
        let (held, open) = lead.withLock { ($0.held, $0.connection.map { !$0.isClosed } ?? false) }
        if held && open { return true }
        do {
            let connection: PostgresConnection
            if open, let kept = lead.withLock({ $0.connection }) {
                connection = kept
            } else {
                connection = try await PostgresConnection.connect(configuration: leadConnection, id: 0, logger: logger)
            }
            var taken = false
            for try await value in try await connection.query(
                "SELECT pg_try_advisory_lock(\(Self.leadLock))", logger: logger
            ).decode(Bool.self) {
                taken = value
            }
            lead.withLock { $0 = (connection, taken) }
            if taken && !held { logger.notice("this replica leads", metadata: ["database": "\(location)"]) }
            return taken
        } catch {
            lead.withLock { $0 = (nil, false) }
            return false
        }
    }

    public func check() async throws(StoreError) {
        _ = try await rows("SELECT 1") { _ in () }
    }

    // MARK: Writes

    public func append(_ batch: [Publication]) async throws(StoreError) -> [LoggedEvent] {
        guard !batch.isEmpty else { return [] }
        return try await guarded {
            try await self.client.withTransaction(logger: self.logger) { db in
                try await self.append(batch, in: db)
            }
        }
    }

    private func append(_ batch: [Publication], in db: PostgresConnection) async throws -> [LoggedEvent] {
        try await db.query("SELECT pg_advisory_xact_lock(\(Self.appendLock))", logger: logger)
        // What is logged already: each origin once, whichever replica stored it.
        var seen = Set<String>()
        let origins = batch.compactMap(\.origin)
        if !origins.isEmpty {
            let rows = try await db.query(
                """
                SELECT origin_site, origin_id FROM events WHERE (origin_site, origin_id) IN
                    (SELECT * FROM unnest(\(origins.map(\.site))::text[], \(origins.map(\.id))::bigint[]))
                """, logger: logger)
            for try await (site, id) in rows.decode((String, Int64).self) { seen.insert("\(site) \(id)") }
        }
        // And what retention deleted: every origin up to the highest it deleted of that site.
        var retired: [String: Int64] = [:]
        if !origins.isEmpty {
            let rows = try await db.query(
                "SELECT site, retired FROM inbox WHERE site = ANY(\(Array(Set(origins.map(\.site))))::text[])",
                logger: logger)
            for try await (site, id) in rows.decode((String, Int64).self) { retired[site] = id }
        }
        let fresh = batch.filter { publication in
            guard let origin = publication.origin else { return true }
            return origin.id > retired[origin.site] ?? 0 && seen.insert("\(origin.site) \(origin.id)").inserted
        }
        guard !fresh.isEmpty else { return [] }
        var sequences: [String: Int64] = [:]
        let streams = Array(Set(fresh.map(\.streamId)))
        let last = try await db.query(
            """
            SELECT stream_id, max(sequence_number) FROM events WHERE stream_id = ANY(\(streams)::text[])
            GROUP BY stream_id
            """, logger: logger)
        for try await (stream, number) in last.decode((String, Int64).self) { sequences[stream] = number }
        var ids: [Int64] = []
        for try await id in try await db.query(
            "SELECT nextval('events_id_seq') FROM generate_series(1, \(fresh.count))", logger: logger
        ).decode(Int64.self) {
            ids.append(id)
        }
        ids.sort()
        let encoder = JSONEncoder.sentinel()
        var rows: [LoggedEvent] = []
        var longest = 0.0
        var received: [String: Int64] = [:]
        for (publication, id) in zip(fresh, ids) {
            let stream = publication.streamId
            let number = sequences[stream, default: 0] + 1
            sequences[stream] = number
            var row = try publication.logRow(sequenceNumber: number, encoder: encoder)
            row.id = id
            rows.append(row)
            if let origin = publication.origin { received[origin.site] = max(received[origin.site] ?? 0, origin.id) }
        }
        try await db.query(
            """
            INSERT INTO events (id, stream_id, sequence_number, type, time, zone, payload, origin_site, origin_id)
            SELECT id, stream, number, type, time, NULLIF(zone, ''), payload, NULLIF(site, ''), NULLIF(origin, 0)
            FROM unnest(\(rows.map(\.id))::bigint[], \(rows.map(\.streamId))::text[],
                \(rows.map(\.sequenceNumber))::bigint[], \(rows.map(\.type.rawValue))::text[],
                \(rows.map(\.time.timeIntervalSince1970))::float8[], \(rows.map { $0.zone ?? "" })::text[],
                \(rows.map { String(decoding: $0.payload, as: UTF8.self) })::text[],
                \(fresh.map { $0.origin?.site ?? "" })::text[], \(fresh.map { $0.origin?.id ?? 0 })::bigint[])
                AS t(id, stream, number, type, time, zone, payload, site, origin)
            """, logger: logger)
        let readings = rows.filter { $0.type == .gauge }
        if !readings.isEmpty {
            try await db.query(
                """
                INSERT INTO gauge_readings (event_id, time, reading)
                SELECT * FROM unnest(\(readings.map(\.id))::bigint[],
                    \(readings.map(\.time.timeIntervalSince1970))::float8[],
                    \(readings.map { String(decoding: $0.payload, as: UTF8.self) })::text[])
                """, logger: logger)
        }
        var visits: [(event: VisitorEvent, record: Data)] = []
        for publication in fresh {
            guard let visit = try publication.visit(encoder: encoder) else { continue }
            visits.append((visit.event, visit.record))
            longest = max(longest, visit.span)
        }
        try await record(visits, in: db)
        if longest > 0 {
            try await db.query("UPDATE visit_span SET longest = greatest(longest, \(longest))", logger: logger)
        }
        if !received.isEmpty {
            try await db.query(
                """
                INSERT INTO inbox (site, received)
                SELECT * FROM unnest(\(Array(received.keys))::text[], \(Array(received.values))::bigint[])
                ON CONFLICT (site) DO UPDATE SET received = greatest(inbox.received, excluded.received)
                """, logger: logger)
        }
        return rows
    }

    /// Keeps the visits and zone-stay tables in step with a batch's events (the store's copies), as `EventStore` does
    /// event by event: one statement for the visits (each as its last event in the batch left it, first seen as its
    /// first said), then each zone stay in order.
    private func record(_ events: [(event: VisitorEvent, record: Data)], in db: PostgresConnection) async throws {
        guard !events.isEmpty else { return }
        var order: [String] = []
        var latest: [String: (event: VisitorEvent, record: Data, firstSeen: Double)] = [:]
        for (event, record) in events {
            let visitor = event.visitor
            let firstSeen =
                latest[visitor.faceId]?.firstSeen ?? (visitor.firstSeen ?? event.time).timeIntervalSince1970
            if latest[visitor.faceId] == nil { order.append(visitor.faceId) }
            latest[visitor.faceId] = (event, record, firstSeen)
        }
        let rows = order.compactMap { latest[$0] }
        try await db.query(
            """
            INSERT INTO visits (face_id, source_id, state, zone, first_seen, last_seen, exit_reason, record)
            SELECT face, source, state, NULLIF(zone, ''), first, last, NULLIF(reason, ''), record
            FROM unnest(\(rows.map(\.event.visitor.faceId))::text[], \(rows.map(\.event.visitor.sourceId))::text[],
                \(rows.map(\.event.visitor.state.rawValue))::text[], \(rows.map { $0.event.visitor.zone ?? "" })::text[],
                \(rows.map(\.firstSeen))::float8[], \(rows.map(\.event.time.timeIntervalSince1970))::float8[],
                \(rows.map { $0.event.reason?.rawValue ?? "" })::text[],
                \(rows.map { String(decoding: $0.record, as: UTF8.self) })::text[])
                AS t(face, source, state, zone, first, last, reason, record)
            ON CONFLICT (face_id) DO UPDATE SET state = excluded.state, zone = excluded.zone,
                last_seen = excluded.last_seen, exit_reason = excluded.exit_reason, record = excluded.record
            """, logger: logger)
        for (event, _) in events {
            guard let stay = event.stay else { continue }
            let face = event.visitor.faceId
            switch event.type {
            case .zoneEntered:
                try await db.query(
                    """
                    INSERT INTO zone_stays (face_id, zone, entered_at)
                    VALUES (\(face), \(stay.zone), \(stay.enteredAt.timeIntervalSince1970))
                    """, logger: logger)
            case .zoneExited:
                try await db.query(
                    """
                    UPDATE zone_stays SET exited_at = \((stay.exitedAt ?? event.time).timeIntervalSince1970),
                        dwell_seconds = \(stay.dwellSeconds)
                    WHERE face_id = \(face) AND zone = \(stay.zone) AND exited_at IS NULL
                    """, logger: logger)
            default:
                break
            }
        }
    }

    public func deleteRecords(olderThan cutoff: Date) async throws -> Int {
        let time = cutoff.timeIntervalSince1970
        return try await guarded {
            try await self.client.withTransaction(logger: self.logger) { db in
                var deleted = 0
                try await db.query(
                    """
                    INSERT INTO inbox (site, received, retired)
                    SELECT origin_site, max(origin_id), max(origin_id) FROM events
                    WHERE time < \(time) AND origin_site IS NOT NULL GROUP BY origin_site
                    ON CONFLICT (site) DO UPDATE SET retired = greatest(inbox.retired, excluded.retired)
                    """, logger: self.logger)
                for table in ["gauge_readings", "events"] {
                    for try await count in try await db.query(
                        "WITH gone AS (DELETE FROM \(unescaped: table) WHERE time < \(time) RETURNING 1) SELECT count(*) FROM gone",
                        logger: self.logger
                    ).decode(Int.self) {
                        deleted += count
                    }
                }
                for try await count in try await db.query(
                    "WITH gone AS (DELETE FROM visits WHERE last_seen < \(time) RETURNING 1) SELECT count(*) FROM gone",
                    logger: self.logger
                ).decode(Int.self) {
                    deleted += count
                }
                return deleted
            }
        }
    }

    // MARK: Reads

    public func events(after id: Int64, limit: Int) async throws(StoreError) -> [LoggedEvent] {
        try await rows(
            """
            SELECT id, sequence_number, stream_id, type, time, zone, payload FROM events
            WHERE id > \(id) ORDER BY id LIMIT \(limit)
            """
        ) { cells in
            let row = try cells.decode((Int64, Int64, String, String, Double, String?, String).self)
            guard let type = LoggedEvent.Kind(rawValue: row.3) else {
                throw StoreError(.corrupt, "database \(self.location): event \(row.0) has an unknown type \"\(row.3)\"")
            }
            return LoggedEvent(
                id: row.0, sequenceNumber: row.1, streamId: row.2, type: type,
                time: Date(timeIntervalSince1970: row.4), zone: row.5, payload: Data(row.6.utf8))
        }
    }

    public func logBounds() async throws(StoreError) -> (floor: Int64, last: Int64) {
        let bounds = try await rows(
            """
            SELECT CASE WHEN s.is_called THEN s.last_value ELSE 0 END, (SELECT min(id) FROM events)
            FROM events_id_seq s
            """
        ) { try $0.decode((Int64, Int64?).self) }
        let (last, oldest) = bounds.first ?? (0, nil)
        return (floor: oldest.map { $0 - 1 } ?? last, last: last)
    }

    public func visitorEvents(since time: Date) async throws(StoreError) -> [Data] {
        try await rows(
            """
            SELECT payload FROM events WHERE time >= \(time.timeIntervalSince1970) AND type LIKE 'visitor.%'
            ORDER BY id
            """
        ) { Data(try $0.decode(String.self).utf8) }
    }

    public func visit(_ faceId: String) async throws(StoreError) -> StoredVisit? {
        let visits = try await rows("SELECT record, exit_reason FROM visits WHERE face_id = \(faceId)") {
            try $0.decode((String, String?).self)
        }
        guard let (record, exitReason) = visits.first else { return nil }
        let stays = try await rows(
            "SELECT zone, entered_at, exited_at, dwell_seconds FROM zone_stays WHERE face_id = \(faceId) ORDER BY id"
        ) { cells in
            let row = try cells.decode((String, Double, Double?, Double?).self)
            return VisitorEvent.Stay(
                zone: row.0, enteredAt: Date(timeIntervalSince1970: row.1),
                exitedAt: row.2.map(Date.init(timeIntervalSince1970:)), dwellSeconds: row.3)
        }
        return StoredVisit(
            record: Data(record.utf8), exitReason: exitReason.flatMap(ExitReason.init(rawValue:)), stays: stays)
    }

    public func visits(from: Date, to: Date, after cursor: VisitCursor?, limit: Int) async throws(StoreError) -> (
        records: [Data], next: VisitCursor?
    ) {
        // As in `EventStore`: a visit overlapping the window was first seen before its end and at most the longest
        // visit before its start, a range of the (first_seen, seq) index walked from the cursor.
        let start = cursor ?? .start
        let rows = try await rows(
            """
            SELECT seq, first_seen, record FROM visits
            WHERE first_seen >= \(from.timeIntervalSince1970) - (SELECT longest FROM visit_span)
                AND first_seen < \(to.timeIntervalSince1970) AND last_seen >= \(from.timeIntervalSince1970)
                AND (first_seen, seq) > (\(start.firstSeen), \(start.row))
            ORDER BY first_seen, seq LIMIT \(limit + 1)
            """
        ) { try $0.decode((Int64, Double, String).self) }
        let page = rows.prefix(limit)
        let next = rows.count > limit ? page.last.map { VisitCursor(firstSeen: $0.1, row: $0.0) } : nil
        return (page.map { Data($0.2.utf8) }, next)
    }

    public func gaugeReadings(since: Date, limit: Int) async throws(StoreError) -> [Data] {
        try await rows(
            """
            SELECT reading FROM gauge_readings WHERE time >= \(since.timeIntervalSince1970)
            ORDER BY time DESC LIMIT \(limit)
            """
        ) { Data(try $0.decode(String.self).utf8) }.reversed()
    }

    public func reportInput(from: Date, to: Date, source: String?) async throws(StoreError) -> ReportInput {
        let (from, to) = (from.timeIntervalSince1970, to.timeIntervalSince1970)
        let visits = try await rows(
            """
            SELECT face_id, source_id, first_seen, last_seen FROM visits
            WHERE first_seen >= \(from) - (SELECT longest FROM visit_span) AND first_seen < \(to)
                AND last_seen >= \(from) AND (\(source)::text IS NULL OR source_id = \(source))
            """
        ) { cells in
            let row = try cells.decode((String, String, Double, Double).self)
            return ReportBuilder.Visit(
                faceId: row.0, sourceId: row.1, firstSeen: Date(timeIntervalSince1970: row.2),
                lastSeen: Date(timeIntervalSince1970: row.3))
        }
        let stays = try await rows(
            """
            SELECT s.face_id, v.source_id, s.zone, s.entered_at, s.exited_at, s.dwell_seconds
            FROM zone_stays s JOIN visits v ON v.face_id = s.face_id
            WHERE v.first_seen >= \(from) - (SELECT longest FROM visit_span) AND v.first_seen < \(to)
                AND v.last_seen >= \(from) AND (\(source)::text IS NULL OR v.source_id = \(source))
            """
        ) { cells in
            let row = try cells.decode((String, String, String, Double, Double?, Double?).self)
            return ReportBuilder.Stay(
                faceId: row.0, sourceId: row.1, zone: row.2, enteredAt: Date(timeIntervalSince1970: row.3),
                exitedAt: row.4.map(Date.init(timeIntervalSince1970:)), dwellSeconds: row.5)
        }
        let decoder = JSONDecoder.sentinel()
        let moods = try await rows(
            "SELECT reading FROM gauge_readings WHERE time >= \(from) AND time < \(to) ORDER BY time"
        ) { cells in
            let reading = try decoder.decode(GaugeReading.self, from: Data(try cells.decode(String.self).utf8))
            return (time: reading.time, overall: reading.overall)
        }
        return ReportInput(visits: visits, stays: stays, moods: moods)
    }

    public func received() async throws(StoreError) -> [String: Int64] {
        Dictionary(
            uniqueKeysWithValues: try await rows("SELECT site, received FROM inbox") {
                try $0.decode((String, Int64).self)
            })
    }

    // MARK: Plumbing

    /// Runs a query and maps each row.
    private func rows<T>(_ query: PostgresQuery, _ transform: (PostgresRow) throws -> T) async throws(StoreError)
        -> [T]
    {
        try await guarded {
            var results: [T] = []
            for try await row in try await self.client.query(query, logger: self.logger) {
                results.append(try transform(row))
            }
            return results
        }
    }

    /// Runs `body`, its errors said as a store's: which server, and the server's own message.
    private func guarded<T>(_ body: () async throws -> T) async throws(StoreError) -> T {
        do { return try await body() } catch { throw failure(error) }
    }

    /// Runs `body`, or fails with `cannotOpen` once `timeout` has passed (the pool waits for a server that is down).
    private func within(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Void)
        async throws(StoreError)
    {
        try await guarded {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await body()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return false
                }
                let finished = try await group.next() ?? false
                group.cancelAll()
                guard finished else {
                    throw StoreError(
                        .cannotOpen,
                        "database \(self.location): no answer within \(timeout) (is the server running, and does it "
                            + "accept this user from this host? see its log)")
                }
            }
        }
    }

    private func failure(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as PostgresTransactionError:
            return failure(error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? error)
        case let error as PSQLError:
            guard let info = error.serverInfo, let message = info[.message] else {
                let cause = error.underlying.map { ": \($0)" } ?? ""
                return StoreError(
                    .cannotOpen, "database \(location): cannot reach the server (\(error.code))\(cause)",
                    underlying: error)
            }
            let state = info[.sqlState] ?? ""
            let code: StoreError.Code =
                switch state {
                case "53100": .diskFull
                case "25006": .readOnly
                case "55P03", "40P01": .locked
                case _ where state.hasPrefix("28") || state == "3D000": .cannotOpen
                case "XX001", "XX002": .corrupt
                default: .other
                }
            return StoreError(code, "database \(location): \(message) (SQLSTATE \(state))", underlying: error)
        default:
            return StoreError(.other, "database \(location): \(error)", underlying: error)
        }
    }
}
