import Foundation
import GRDB
import SentinelCore
import SentinelPrivacy
import Synchronization

extension EventStore {
    /// The store's claim on its database, so that one process writes it: a second `sentinel run` on the same file
    /// would otherwise close the first one's open visits as `interrupted` when it opens the store, then write beside
    /// it. An exclusive `flock` on `<database>.lock`, holding the owner's pid for the message; the kernel releases it
    /// when the process ends, however it ends, so a crash never leaves a stale claim. (Not a lock on the database file
    /// itself: closing any other descriptor of that file would drop SQLite's own locks.)
    final class Owner: Sendable {
        private let descriptor: Mutex<Int32?>

        init(database: String, mode: mode_t) throws(StoreError) {
            let path = database + ".lock"
            let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, mode)
            guard descriptor >= 0 else {
                throw StoreError(
                    .cannotOpen, "database \(database): cannot open \(path): \(String(cString: strerror(errno)))")
            }
            // A lock this process let go of can still be held a moment by a child it was forking (the descriptor
            // is closed only at the child's exec): when the holder named is this process, wait for that.
            let deadline = ContinuousClock.now + .seconds(2)
            func lock() -> Int32 { flock(descriptor, LOCK_EX | LOCK_NB) == 0 ? 0 : errno }
            var failure = lock()
            while failure == EWOULDBLOCK, Self.holder(descriptor) == "\(getpid())", ContinuousClock.now < deadline {
                usleep(10_000)
                failure = lock()
            }
            guard failure == 0 else {
                let held = failure == EWOULDBLOCK
                let reason = String(cString: strerror(failure))
                let pid = Self.holder(descriptor)
                close(descriptor)
                guard held else {
                    throw StoreError(.cannotOpen, "database \(database): cannot lock \(path): \(reason)")
                }
                throw StoreError(
                    .inUse,
                    "database \(database) is in use by another process\(pid.isEmpty ? "" : " (pid \(pid))"): one "
                        + "sentinel per database; stop that one, or give this one its own store.path")
            }
            let pid = Array("\(getpid())".utf8)
            ftruncate(descriptor, 0)
            _ = pwrite(descriptor, pid, pid.count, 0)
            self.descriptor = Mutex(descriptor)
        }

        /// The pid the lock file names.
        private static func holder(_ descriptor: Int32) -> String {
            var bytes = [UInt8](repeating: 0, count: 32)
            let count = pread(descriptor, &bytes, bytes.count, 0)
            return count > 0 ? String(decoding: bytes[..<count], as: UTF8.self) : ""
        }

        func release() {
            descriptor.withLock { descriptor in
                if let open = descriptor { close(open) }
                descriptor = nil
            }
        }

        deinit { release() }
    }
}
