public import Foundation
import GRDB
public import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import Synchronization

extension EventStore {
    /// Deletes log rows and gauge readings older than `cutoff`, and visits last seen before it (their stays go with
    /// them, by the foreign key). Returns the rows deleted, cascaded ones not counted.
    public func deleteRecords(olderThan cutoff: Date) async throws -> Int {
        let time = cutoff.timeIntervalSince1970
        do {
            return try await pool.write { db in
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
