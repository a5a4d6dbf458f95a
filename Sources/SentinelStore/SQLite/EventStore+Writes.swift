import Foundation
import GRDB
import SentinelCore
import SentinelPrivacy
import SentinelWire
import Synchronization

extension EventStore {
    /// The write runs on GRDB's writer queue: waiting for a lock held by another process suspends the caller instead
    /// of blocking its thread. A forwarded log entry is logged already when its id is at or below the last one
    /// stored from its site: one ingest takes each site's ids in order.
    public func append(_ batch: [LogEntry]) async throws(StoreError) -> [LoggedEvent] {
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
                for logEntry in batch {
                    if let origin = logEntry.origin, try Self.isLogged(origin, in: db) { continue }
                    var row = try logEntry.logRow(
                        sequenceNumber: try next(logEntry.streamId), encoder: encoder)
                    if let visit = try logEntry.visit(encoder: encoder) {
                        try Self.record(visit.event, record: visit.record, in: db)
                        longest = max(longest, visit.span)
                    }
                    try db.cachedStatement(
                        sql:
                            "INSERT INTO events (streamId, sequenceNumber, type, time, zone, payload) VALUES (?, ?, ?, ?, ?, ?)"
                    ).execute(
                        arguments: [
                            row.streamId, row.sequenceNumber, row.type.rawValue, row.time.timeIntervalSince1970,
                            row.zone,
                            String(decoding: row.payload, as: UTF8.self),
                        ])
                    row.id = db.lastInsertedRowID
                    if let origin = logEntry.origin { try Self.received(origin, in: db) }
                    if case .gauge = logEntry {
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
}
