public import Foundation
import GRDB
import SentinelCore
import SentinelPrivacy
import SentinelWire
import Synchronization

extension EventStore {
    public func visitorEvents(since time: Date) async throws(StoreError) -> [Data] {
        try await read { db in
            try EventRow.filter(Column("time") >= time.timeIntervalSince1970 && Column("type").like("visitor.%"))
                .order(Column("id")).fetchAll(db).map { Data($0.payload.utf8) }
        }
    }

    public func events(after id: Int64, limit: Int, bytes: Int) async throws(StoreError) -> [LoggedEvent] {
        try await read { db in
            // Row by row: a page sized in bytes never reads the rows beyond it.
            let rows = try EventRow.filter(Column("id") > id).order(Column("id")).limit(limit).fetchCursor(db)
            var page: [LoggedEvent] = []
            var size = 0
            while size < bytes, let row = try rows.next() {
                page.append(row.logged)
                size += row.payload.utf8.count
            }
            return page
        }
    }

    public func logBounds() async throws(StoreError) -> (floor: Int64, last: Int64) {
        try await read { db in
            let last = try Int64.fetchOne(db, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'events'") ?? 0
            let oldest = try Int64.fetchOne(db, sql: "SELECT MIN(id) FROM events")
            return (floor: oldest.map { $0 - 1 } ?? last, last: last)
        }
    }

    public func visit(_ faceId: String) async throws(StoreError) -> StoredVisit? {
        try await read { db in
            guard let visit = try VisitRow.filter(Column("faceId") == faceId).fetchOne(db) else { return nil }
            let stays = try StayRow.filter(Column("faceId") == faceId).order(Column("id")).fetchAll(db)
            return StoredVisit(record: Data(visit.record.utf8), exitReason: visit.exitReason, stays: stays.map(\.stay))
        }
    }

    public func visits(from: Date, to: Date, after cursor: VisitCursor?, limit: Int) async throws(StoreError) -> (
        records: [Data], next: VisitCursor?
    ) {
        // A visit overlapping the window was first seen before its end and at most the longest visit before its
        // start: a range of the firstSeen index, walked in (firstSeen, rowid) order from the cursor.
        let earliest = from.timeIntervalSince1970 - longestVisit.withLock { $0 }
        let start = cursor ?? .start
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

    public func gaugeReadings(since: Date, limit: Int) async throws(StoreError) -> [Data] {
        try await read { db in
            try GaugeRow.filter(Column("time") >= since.timeIntervalSince1970).order(Column("time").desc).limit(limit)
                .fetchAll(db).reversed().map { Data($0.reading.utf8) }
        }
    }

    public func reportInput(from: Date, to: Date, source: String?) async throws(StoreError) -> ReportInput {
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
            return ReportInput(visits: visits, stays: stays, moods: moods)
        }
    }
}
