import Foundation
import GRDB
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import Synchronization

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
                _ = try? connection.writeWithoutTransaction { try $0.checkpoint(.passive) }
            }
        }
        thread.name = "sqlite checkpoint"
        thread.start()
    }

    func stop() { stopped.withLock { $0 = true } }
}
