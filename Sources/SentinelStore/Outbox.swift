import Foundation
import GRDB

/// The event log as an outbox: each output that forwards the log (MQTT) keeps here, durably, the last log id its
/// receiver acknowledged, and resumes after it when it starts again. And as an inbox: a store that logs what other
/// boxes forwarded (`sentinel fleet`) keeps the last log id it stored from each site, in the transaction that stored
/// it, so a message the broker delivers again is recognised as a duplicate even after a crash.
extension EventStore {
    public func received() async throws(StoreError) -> [String: Int64] {
        try await read { db in
            Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT site, received FROM inbox").map {
                    ($0["site"], $0["received"])
                })
        }
    }

    static func isLogged(_ origin: LogEntry.Origin, in db: Database) throws -> Bool {
        let last = try Int64.fetchOne(
            db.cachedStatement(sql: "SELECT received FROM inbox WHERE site = ?"), arguments: [origin.site])
        return origin.id <= last ?? 0
    }

    static func received(_ origin: LogEntry.Origin, in db: Database) throws {
        try db.cachedStatement(
            sql: """
                INSERT INTO inbox (site, received) VALUES (?, ?)
                ON CONFLICT(site) DO UPDATE SET received = MAX(received, excluded.received)
                """
        ).execute(arguments: [origin.site, origin.id])
    }

    /// The last log id `output` had acknowledged; 0 when it never had one.
    public func acknowledged(by output: String) async throws(StoreError) -> Int64 {
        try await read { db in
            try Int64.fetchOne(db, sql: "SELECT acknowledged FROM outbox WHERE output = ?", arguments: [output]) ?? 0
        }
    }

    /// Records that `output`'s receiver has acknowledged every log id up to `id`.
    public func acknowledge(_ id: Int64, by output: String) async throws(StoreError) {
        do {
            try await pool.write { db in
                try db.cachedStatement(
                    sql: """
                        INSERT INTO outbox (output, acknowledged) VALUES (?, ?)
                        ON CONFLICT(output) DO UPDATE SET acknowledged = MAX(acknowledged, excluded.acknowledged)
                        """
                ).execute(arguments: [output, id])
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }
}
