public import Foundation
import GRDB
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

    /// Gives the pages a cut freed back to the file system (incremental vacuum), then checkpoints the write-ahead log
    /// into the database and truncates it to nothing: a cut writes every page it frees to the log first, and SQLite's
    /// automatic checkpoints reuse the log's file without shrinking it. A reader still holding an old snapshot keeps
    /// its pages until it ends; the next cut takes them.
    public func reclaim() async throws {
        do {
            try await pool.writeWithoutTransaction { db in
                try db.execute(sql: "PRAGMA incremental_vacuum")
                try db.execute(sql: "PRAGMA wal_checkpoint(TRUNCATE)")
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// The pages in use (free pages left by deletions are reused, not counted) and the events logged.
    public func storedSize() async throws -> (bytes: Int64, events: Int) {
        try await read { db in
            let pages = try Int64.fetchOne(db, sql: "PRAGMA page_count") ?? 0
            let free = try Int64.fetchOne(db, sql: "PRAGMA freelist_count") ?? 0
            let size = try Int64.fetchOne(db, sql: "PRAGMA page_size") ?? 0
            return ((pages - free) * size, try Int.fetchOne(db, sql: "SELECT count(*) FROM events") ?? 0)
        }
    }

    public func deleteOldest(keeping fraction: Double) async throws -> Int {
        do {
            return try await pool.write { db in
                func kept(of table: String) throws -> Int {
                    Int(
                        (Double(try Int.fetchOne(db, sql: "SELECT count(*) FROM \(table)") ?? 0) * fraction).rounded(
                            .up))
                }
                var deleted = 0
                let events = try kept(of: "events")
                if let oldestKept = try Int64.fetchOne(
                    db, sql: "SELECT id FROM events ORDER BY id DESC LIMIT 1 OFFSET ?", arguments: [max(events, 1) - 1])
                {
                    try db.execute(sql: "DELETE FROM gaugeReadings WHERE eventId < ?", arguments: [oldestKept])
                    deleted += db.changesCount
                    try db.execute(sql: "DELETE FROM events WHERE id < ?", arguments: [oldestKept])
                    deleted += db.changesCount
                }
                try db.execute(
                    sql: """
                        DELETE FROM visits WHERE rowid IN
                            (SELECT rowid FROM visits ORDER BY lastSeen DESC, rowid DESC LIMIT -1 OFFSET ?)
                        """, arguments: [try kept(of: "visits")])
                deleted += db.changesCount
                return deleted
            }
        } catch {
            throw StoreError(error, path: path)
        }
    }
}
