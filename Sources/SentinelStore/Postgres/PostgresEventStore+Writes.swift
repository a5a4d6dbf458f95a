public import Foundation
import PostgresNIO
import SentinelCore
import SentinelPrivacy
import SentinelWire

/// Appends (ids, sequence numbers, each origin once), the visit rows every replica updates, and retention.
extension PostgresEventStore {
    public func append(_ batch: [LogEntry]) async throws(StoreError) -> [LoggedEvent] {
        guard !batch.isEmpty else { return [] }
        return try await guarded {
            try await self.client.withTransaction(logger: self.logger) { db in
                try await self.append(batch, in: db)
            }
        }
    }

    func append(_ batch: [LogEntry], in db: PostgresConnection) async throws -> [LoggedEvent] {
        try await db.query("SELECT pg_advisory_xact_lock(\(Self.appendLock))", logger: logger)
        let fresh = try await unlogged(batch, in: db)
        guard !fresh.isEmpty else { return [] }
        let rows = try await numbered(fresh, in: db)
        try await insert(rows, of: fresh, in: db)
        let encoder = JSONEncoder.sentinel()
        var longest = 0.0
        var visits: [(event: VisitorEvent, record: Data)] = []
        var received: [String: Int64] = [:]
        for logEntry in fresh {
            if let origin = logEntry.origin { received[origin.site] = max(received[origin.site] ?? 0, origin.id) }
            guard let visit = try logEntry.visit(encoder: encoder) else { continue }
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

    /// What of `batch` is not logged yet, found in one round trip under the append lock.
    private func unlogged(_ batch: [LogEntry], in db: PostgresConnection) async throws -> [LogEntry] {
        // Each origin once, whichever replica stored it, and every origin up to the highest retention deleted of its
        // site (inbox.retired; `retired` rows).
        var seen = Set<String>()
        var retired: [String: Int64] = [:]
        let origins = batch.compactMap(\.origin)
        if !origins.isEmpty {
            let rows = try await db.query(
                """
                SELECT origin_site, origin_id, false FROM events WHERE (origin_site, origin_id) IN
                    (SELECT * FROM unnest(\(origins.map(\.site))::text[], \(origins.map(\.id))::bigint[]))
                UNION ALL
                SELECT site, retired, true FROM inbox WHERE site = ANY(\(Array(Set(origins.map(\.site))))::text[])
                """, logger: logger)
            for try await (site, id, isRetired) in rows.decode((String, Int64, Bool).self) {
                if isRetired { retired[site] = id } else { seen.insert("\(site) \(id)") }
            }
        }
        return batch.filter { logEntry in
            guard let origin = logEntry.origin else { return true }
            return origin.id > retired[origin.site] ?? 0 && seen.insert("\(origin.site) \(origin.id)").inserted
        }
    }

    /// `fresh` as log rows: each with the next id of the log and the next sequence number of its stream.
    private func numbered(_ fresh: [LogEntry], in db: PostgresConnection) async throws -> [LoggedEvent] {
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
        for (logEntry, id) in zip(fresh, ids) {
            let stream = logEntry.streamId
            let number = sequences[stream, default: 0] + 1
            sequences[stream] = number
            var row = try logEntry.logRow(sequenceNumber: number, encoder: encoder)
            row.id = id
            rows.append(row)
        }
        return rows
    }

    /// Writes `rows` (made of `fresh`, in order) into the events table, the gauge readings among them also into theirs.
    private func insert(_ rows: [LoggedEvent], of fresh: [LogEntry], in db: PostgresConnection) async throws {
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
                try await self.deleteEvents(in: db, where: "time", below: time)
                    + self.deleted(in: db, "DELETE FROM visits WHERE last_seen < \(time)")
            }
        }
    }

    public func deleteOldest(keeping fraction: Double) async throws -> Int {
        try await guarded {
            try await self.client.withTransaction(logger: self.logger) { db in
                func kept(of table: String) async throws -> Int {
                    var rows = 0
                    for try await count in try await db.query(
                        "SELECT count(*) FROM \(unescaped: table)", logger: self.logger
                    ).decode(Int.self) {
                        rows = count
                    }
                    return Int((Double(rows) * fraction).rounded(.down))
                }
                var oldestKept: Int64?
                for try await id in try await db.query(
                    "SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET \(max(try await kept(of: "events"), 1) - 1)",
                    logger: self.logger
                ).decode(Int64.self) {
                    oldestKept = id
                }
                var deleted = 0
                if let oldestKept { deleted += try await self.deleteEvents(in: db, where: "id", below: oldestKept) }
                return try await deleted
                    + self.deleted(
                        in: db,
                        """
                        DELETE FROM visits WHERE face_id IN
                            (SELECT face_id FROM visits ORDER BY last_seen DESC, seq DESC OFFSET \(try await kept(of: "visits")))
                        """)
            }
        }
    }

    /// Deletes the events whose `column` is below `bound`, and their gauge readings, first noting each site's highest
    /// origin id deleted (a broker replaying it later must not store it again); the rows deleted.
    private func deleteEvents(
        in db: PostgresConnection, where column: String, below bound: some PostgresThrowingDynamicTypeEncodable
    ) async throws -> Int {
        try await db.query(
            """
            INSERT INTO inbox (site, received, retired)
            SELECT origin_site, max(origin_id), max(origin_id) FROM events
            WHERE \(unescaped: column) < \(bound) AND origin_site IS NOT NULL GROUP BY origin_site
            ON CONFLICT (site) DO UPDATE SET retired = greatest(inbox.retired, excluded.retired)
            """, logger: logger)
        let readings = column == "id" ? "event_id" : column
        return try await deleted(
            in: db, "DELETE FROM gauge_readings WHERE \(unescaped: readings) < \(bound)")
            + deleted(in: db, "DELETE FROM events WHERE \(unescaped: column) < \(bound)")
    }

    /// The rows a `DELETE` deleted.
    private func deleted(in db: PostgresConnection, _ delete: PostgresQuery) async throws -> Int {
        var query = delete
        query.sql = "WITH gone AS (\(query.sql) RETURNING 1) SELECT count(*) FROM gone"
        var total = 0
        for try await count in try await db.query(query, logger: logger).decode(Int.self) { total += count }
        return total
    }

    /// Nothing to give back by hand: PostgreSQL's autovacuum makes deleted rows' room reusable, and its write-ahead
    /// log is recycled by its own checkpoints.
    public func reclaim() async throws {}

    /// The live rows' bytes (the relations' files keep deleted rows until a vacuum, and their size seldom shrinks,
    /// so they cannot say whether deleting was enough) and the events logged. Indexes aside; a scan per run.
    public func storedSize() async throws -> (bytes: Int64, events: Int) {
        try await guarded {
            let rows = try await self.client.query(
                """
                SELECT ((SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM events t)
                    + (SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM visits t)
                    + (SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM zone_stays t)
                    + (SELECT coalesce(sum(pg_column_size(t.*)), 0) FROM gauge_readings t))::bigint,
                    (SELECT count(*) FROM events)::bigint
                """, logger: self.logger)
            for try await (bytes, events) in rows.decode((Int64, Int64).self) { return (bytes, Int(events)) }
            return (0, 0)
        }
    }
}
