public import Foundation
import GRDB
import SentinelCore
public import SentinelPrivacy
public import SentinelWire
import ServiceLifecycle
import Synchronization

/// Something to publish: a visitor event that has passed the mask for the store, or a gauge reading. Either may have
/// been logged by another box first and forwarded (`sentinel fleet`): its origin is then stored with it, in the same
/// transaction, so each (site, id) is logged once.
public enum LogEntry: Sendable {
    case visitor(stored: MaskedEvent, published: MaskedEvent, origin: Origin? = nil)
    case gauge(GaugeReading, origin: Origin? = nil)

    /// The stream of gauge readings, beside one stream per source.
    public static let gaugeStream = "sentiment"

    /// Where a forwarded event was logged first: the box's site and its log id there.
    public struct Origin: Sendable, Equatable {
        public var site: String
        public var id: Int64
        public init(site: String, id: Int64) {
            self.site = site
            self.id = id
        }
    }

    package var origin: Origin? {
        switch self {
        case .visitor(_, _, let origin), .gauge(_, let origin): origin
        }
    }
}

/// One row of the event log: what the SSE stream sends, in the order it was committed.
public struct LoggedEvent: Sendable, Equatable {
    /// The log's monotonic id, also the SSE `id:`.
    public var id: Int64
    /// Position within its stream (a source, or the gauge's), from 1 without gaps.
    public var sequenceNumber: Int64
    public var streamId: String
    public var type: Kind
    public var time: Date
    /// The zone of a visitor event (its stay's, else the visitor's), for filtering.
    public var zone: String?
    /// The published JSON.
    public var payload: Data

    public init(
        id: Int64, sequenceNumber: Int64, streamId: String, type: Kind, time: Date, zone: String?, payload: Data
    ) {
        self.id = id
        self.sequenceNumber = sequenceNumber
        self.streamId = streamId
        self.type = type
        self.time = time
        self.zone = zone
        self.payload = payload
    }
}

extension LoggedEvent {
    /// What a logged event carries: a visitor event of one kind, or a gauge reading. Its raw value is the SSE
    /// `event:` name, the envelope's `payloadType`, the MQTT topic's last level and the `type` column.
    public enum Kind: Hashable, Sendable, CustomStringConvertible {
        case visitor(VisitorEvent.Kind)
        case gauge

        /// Every kind, visitor events first.
        public static let all: [Kind] = VisitorEvent.Kind.allCases.map(Kind.visitor) + [.gauge]

        public init?(rawValue: String) {
            if rawValue == EventEnvelope.gaugeType {
                self = .gauge
            } else if let kind = VisitorEvent.Kind(rawValue: rawValue) {
                self = .visitor(kind)
            } else {
                return nil
            }
        }

        public var rawValue: String {
            switch self {
            case .visitor(let kind): kind.rawValue
            case .gauge: EventEnvelope.gaugeType
            }
        }

        public var description: String { rawValue }
    }
}

/// The SQLite store (GRDB, WAL): an append-only event log, visits, zone stays and gauge readings.
///
/// Everything here has passed the mask: rows hold the store's copy of each event, and the log holds the published
/// copy (the store's, reduced to what the events output allows). Every batch is one transaction with
/// `synchronous = FULL`, so a batch that `append` returned from survives kill -9 and power loss.
public final class EventStore: EventLog {
    /// The SQLite library's version, as loaded ("3.40.1"), or "unknown" if an in-memory database cannot be opened.
    public static var sqliteVersion: String {
        ((try? DatabaseQueue().read { try String.fetchOne($0, sql: "SELECT sqlite_version()") }) ?? nil) ?? "unknown"
    }

    public let path: String
    public var location: String { path }
    /// One process at a time (see `Owner`).
    public var isShared: Bool { false }
    public func leads() async -> Bool { true }
    let pool: DatabasePool
    /// The store's records of the visits a crash (or kill -9) left open, closed as `interrupted` when this store was
    /// opened: the service publishes their `visitor.exited`, so clients drop them.
    public let interrupted: [Data]
    /// The longest visit stored (seconds from first to last sighting): a history query for visits overlapping a
    /// window only reads those first seen that long before it, on the `firstSeen` index.
    let longestVisit: Mutex<Double>
    /// The checkpoints' connection of its own (`run()`).
    let checkpoints: DatabaseQueue
    /// Checkpoints `run()` has completed: what a test of the log's restart waits on, rather than on the clock.
    private let checkpointed = Mutex(0)
    public var checkpointRounds: Int { checkpointed.withLock { $0 } }
    let owner: Owner

    /// Opens (creating it and its folder if needed) and migrates the database: one process at a time (see `Owner`). Visits left open by a crash are closed as
    /// `interrupted`. The files are the service user's alone (0600), or also readable by `group` (0640), for a
    /// backup or reporting account.
    ///
    /// A fleet's store holds visits its sites own (`ownsVisits` false): they stay as they are, since the sites say
    /// when they end.
    public init(path: String, group: String? = nil, ownsVisits: Bool = true) throws(StoreError) {
        self.path = path
        var gid: gid_t?
        if let group {
            guard let entry = getgrnam(group) else {
                throw StoreError(.cannotOpen, "store.group \(group): no such group on this machine (see getent group)")
            }
            gid = entry.pointee.gr_gid
        }
        let mode: mode_t = gid == nil ? 0o600 : 0o640
        var configuration = Configuration()
        configuration.busyMode = .timeout(2)
        // Checkpoints are `run()`'s, off the write path. A log that a checkpoint empties is cut back to its bound.
        configuration.prepareDatabase { db in
            try db.execute(
                sql:
                    "PRAGMA synchronous = FULL; PRAGMA wal_autocheckpoint = 0; PRAGMA journal_size_limit = \(Self.walBound)"
            )
        }
        do {
            try FileManager.default.createDirectory(
                at: URL(fileURLWithPath: path).deletingLastPathComponent(), withIntermediateDirectories: true)
            // Visits are personal data: only the service's user (and the configured group) may read them. SQLite gives
            // the -wal and -shm files the database file's mode, so making (or tightening) that file first covers
            // their mode; their group is set once they exist.
            let descriptor = open(path, O_CREAT | O_RDWR | O_CLOEXEC, mode)
            if descriptor >= 0 {
                fchmod(descriptor, mode)
                close(descriptor)
            }
            owner = try Owner(database: path, mode: mode)
            pool = try DatabasePool(path: path, configuration: configuration)
            if let gid {
                for file in [path, path + "-wal", path + "-shm"]
                where chown(file, uid_t.max, gid) != 0 && errno != ENOENT {
                    throw StoreError(
                        .cannotOpen,
                        "database \(file): cannot give it to group \(group!): \(String(cString: strerror(errno))) "
                            + "(the service's user must be a member of that group)")
                }
            }
            // Free pages are given back to the file system (`reclaim`), which needs incremental auto-vacuum: set before
            // the first table, or, in a store made before, by one VACUUM that rewrites the file.
            try pool.writeWithoutTransaction { db in
                guard try Int.fetchOne(db, sql: "PRAGMA auto_vacuum") != 2 else { return }
                try db.execute(sql: "PRAGMA auto_vacuum = INCREMENTAL")
                try db.execute(sql: "VACUUM")
            }
            try Self.migrator.migrate(pool)
            interrupted = try pool.write { db in
                guard ownsVisits else { return [] }
                let exited = VisitState.exited.rawValue
                let open = try VisitRow.filter(Column("state") != exited).fetchAll(db).map(\.record)
                try db.execute(
                    sql: "UPDATE visits SET state = ?, exitReason = ? WHERE state != ?",
                    arguments: [exited, ExitReason.interrupted.rawValue, exited])
                return open.map { Data($0.utf8) }
            }
            checkpoints = try DatabaseQueue(path: path, configuration: configuration)
            longestVisit = Mutex(
                try pool.read { try Double.fetchOne($0, sql: "SELECT MAX(lastSeen - firstSeen) FROM visits") } ?? 0)
        } catch {
            throw StoreError(error, path: path)
        }
    }

    /// Copies the write-ahead log into the database file off the write path, until the service group stops. SQLite's
    /// own checkpoint runs inside the commit that takes the log past 1000 pages, so one batch in forty waited for the
    /// database file to be written and synced. This runs a passive checkpoint every half second on a connection of
    /// its own: it never waits for the writer or a reader, nor they for it, and the log restarts from its beginning
    /// once everything in it is copied. A log grown past `walBound` (a burst while readers held old snapshots, so that
    /// it never restarted) is checkpointed whole and cut back to nothing, waiting for readers up to the busy timeout.
    /// A store that is not run keeps its log until retention reclaims it.
    public func run() async {
        await cancelWhenGracefulShutdown {
            while !Task.isCancelled {
                try? await Task.sleep(for: .milliseconds(500))
                let grown = self.walBytes > Self.walBound
                // Busy or locked: the next round tries again.
                if (try? await self.checkpoints.writeWithoutTransaction({
                    try $0.checkpoint(grown ? .truncate : .passive)
                })) != nil {
                    self.checkpointed.withLock { $0 += 1 }
                }
            }
        }
    }

    /// The write-ahead log's bound, in bytes: past it, it is checkpointed whole and cut back.
    static let walBound = 64 << 20

    /// The write-ahead log's size now (0 when there is none).
    var walBytes: Int {
        var status = stat()
        return stat(path + "-wal", &status) == 0 ? Int(status.st_size) : 0
    }

    /// Gives up this store's claim on its database (see `Owner`): for a service that has stopped, so that another
    /// store may open it in this process, as one would in the next. A process that ends gives it up all the same.
    public func relinquish() { owner.release() }

    public func check() async throws(StoreError) {
        _ = try await read { db in try Int.fetchOne(db, sql: "SELECT 1") }
    }

    /// Reads on GRDB's reader pool without blocking the caller's thread: the HTTP handlers that call this run on
    /// Swift's few cooperative threads.
    func read<T: Sendable>(_ body: @escaping @Sendable (Database) throws -> T) async throws(StoreError) -> T {
        do {
            return try await pool.read(body)
        } catch {
            throw StoreError(error, path: path)
        }
    }
}
