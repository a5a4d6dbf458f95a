public import Foundation
import PostgresNIO
import SentinelCore
import SentinelPrivacy
import SentinelWire

/// What the API, the SSE stream and the reports read.
extension PostgresEventStore {
    public func events(after id: Int64, limit: Int, bytes: Int) async throws(StoreError) -> [LoggedEvent] {
        // The rows whose predecessors' payloads come to less than `bytes`: sized by the server, only those are sent.
        try await rows(
            """
            SELECT e.id, e.sequence_number, e.stream_id, e.type, e.time, e.zone, e.payload FROM events e
            JOIN (SELECT id, sum(octet_length(payload)) OVER (ORDER BY id) - octet_length(payload) AS before
                  FROM events WHERE id > \(id) ORDER BY id LIMIT \(limit)) page ON page.id = e.id
            WHERE page.before < \(Int64(clamping: bytes)) ORDER BY e.id
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
}
