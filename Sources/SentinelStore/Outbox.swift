import Foundation
import GRDB

/// The event log as an outbox: each output that forwards the log (MQTT) keeps here, durably, the last log id its
/// receiver acknowledged, and resumes after it when it starts again.
extension EventStore {
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
