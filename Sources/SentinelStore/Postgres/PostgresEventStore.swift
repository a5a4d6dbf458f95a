public import Foundation
public import Logging
import NIOSSL
import PostgresNIO
public import SentinelConfig
import SentinelCore
import SentinelPrivacy
public import ServiceLifecycle
import Synchronization

/// The event log on a PostgreSQL server, shared by the replicas of a fleet: the same tables, guarantees and answers
/// as the SQLite store (`EventStore`), for many writers.
///
/// Every append takes one transaction-scoped advisory lock before it assigns ids and sequence numbers, so appends
/// commit one at a time, in id order: a reader that follows the log by id (an SSE client, a replica) never passes an
/// id that commits later. A forwarded event's origin (site, id) is unique in the log: a message the broker delivers
/// to a second replica after the first stored it (the first died before acknowledging) is left out, whichever
/// replica sees it and in whatever order.
///
/// The log is a service: its `run()` runs the connection pool (every query waits for it) and, when it stops, gives
/// up the lead. It goes in the service group before what queries the log, so it stops after them; outside a group,
/// run it beside the work (`async let`).
public final class PostgresEventStore: EventLog, Service {
    public let location: String
    public var interrupted: [Data] { [] }
    public var isShared: Bool { true }
    let client: PostgresClient
    let logger: Logger
    /// How to open a connection of its own: for migrating, and for holding (or trying for) the lead.
    let leadConnection: PostgresConnection.Configuration
    private let lead = Mutex(Lead())
    /// Opens when `run()` starts the pool: a query waits for it there rather than lease from a pool not running.
    private let running = Doorbell()
    /// How long a query waits for `run()`: a store whose service never runs fails its queries, not hangs them.
    static let startTimeout = Duration.seconds(30)

    private struct Lead {
        var connection: PostgresConnection?
        var held = false
        /// The log has stopped (`run()` ended): no connection is opened again.
        var stopped = false
    }

    /// Appends take this lock, migrations the next, the lead the third: numbers no other program is likely to use.
    static let appendLock: Int64 = 0x5345_4e54_0001
    static let migrationLock: Int64 = 0x5345_4e54_0002
    static let leadLock: Int64 = 0x5345_4e54_0003

    /// Waits for the server (at most `timeout`) and migrates the schema, on a connection of its own; the pool starts
    /// with `run()`. A fleet's visits are its sites' to close, so nothing is closed as interrupted here.
    public static func open(_ server: DatabaseServer, logger: Logger, timeout: Duration = .seconds(15))
        async throws(StoreError) -> PostgresEventStore
    {
        guard let endpoint = server.endpoint else {
            throw StoreError(.cannotOpen, "database \(server.url): not a postgres://user@host[:port]/database URL")
        }
        let tls: PostgresClient.Configuration.TLS
        let leadTLS: PostgresConnection.Configuration.TLS
        do {
            switch server.tls {
            case .disable:
                (tls, leadTLS) = (.disable, .disable)
            case .prefer:
                tls = .prefer(.makeClientConfiguration())
                leadTLS = .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
            case .require:
                tls = .require(.makeClientConfiguration())
                leadTLS = .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
            }
        } catch {
            throw StoreError(.cannotOpen, "database \(endpoint): cannot set up TLS: \(error)", underlying: error)
        }
        let password = try server.password()
        var configuration = PostgresClient.Configuration(
            host: endpoint.host, port: endpoint.port, username: endpoint.user, password: password,
            database: endpoint.database, tls: tls)
        configuration.options.maximumConnections = server.connections
        configuration.options.minimumConnections = 1
        let store = PostgresEventStore(
            location: endpoint.description,
            client: PostgresClient(configuration: configuration, backgroundLogger: logger),
            leadConnection: .init(
                host: endpoint.host, port: endpoint.port, username: endpoint.user, password: password,
                database: endpoint.database, tls: leadTLS),
            logger: logger)
        try await store.within(timeout) { try await store.migrate() }
        return store
    }

    private init(
        location: String, client: PostgresClient, leadConnection: PostgresConnection.Configuration, logger: Logger
    ) {
        self.location = location
        self.client = client
        self.leadConnection = leadConnection
        self.logger = logger
    }

    /// Runs the connection pool until the service group shuts down (or the task is cancelled), then closes the
    /// lead's connection, and with it the lead.
    public func run() async {
        running.open()
        await client.run()
        let connection = lead.withLock { state in
            defer { state = Lead(stopped: true) }
            return state.connection
        }
        try? await connection?.close()
    }

    /// Nothing is left to give up once `run()` has ended: the pool has stopped and the lead is closed.
    public func relinquish() {}

    /// One replica leads: the one holding a session advisory lock on a connection of its own. When it dies its
    /// session ends, the server releases the lock, and the next replica to ask takes the lead.
    public func leads() async -> Bool {
        let (held, open, stopped) = lead.withLock {
            ($0.held, $0.connection.map { !$0.isClosed } ?? false, $0.stopped)
        }
        if stopped { return false }
        if held && open { return true }
        do {
            let connection: PostgresConnection
            if open, let kept = lead.withLock({ $0.connection }) {
                connection = kept
            } else {
                connection = try await PostgresConnection.connect(configuration: leadConnection, id: 0, logger: logger)
            }
            var taken = false
            for try await value in try await connection.query(
                "SELECT pg_try_advisory_lock(\(Self.leadLock))", logger: logger
            ).decode(Bool.self) {
                taken = value
            }
            let kept = lead.withLock { state in
                guard !state.stopped else { return false }
                (state.connection, state.held) = (connection, taken)
                return true
            }
            guard kept else {
                try? await connection.close()
                return false
            }
            if taken && !held { logger.notice("this replica leads", metadata: ["database": "\(location)"]) }
            return taken
        } catch {
            lead.withLock { ($0.connection, $0.held) = (nil, false) }
            return false
        }
    }

    public func check() async throws(StoreError) {
        _ = try await rows("SELECT 1") { _ in () }
    }

    // MARK: Plumbing

    /// Runs a query and maps each row.
    func rows<T>(_ query: PostgresQuery, _ transform: (PostgresRow) throws -> T) async throws(StoreError)
        -> [T]
    {
        try await guarded {
            var results: [T] = []
            for try await row in try await self.client.query(query, logger: self.logger) {
                results.append(try transform(row))
            }
            return results
        }
    }

    /// Runs `body` on the pool once it runs, its errors said as a store's: which server, and the server's own
    /// message.
    func guarded<T>(_ body: () async throws -> T) async throws(StoreError) -> T {
        guard await running.wait(timeout: Self.startTimeout) else {
            throw StoreError(
                .cannotOpen,
                "database \(location): its connection pool is not running (not started within \(Self.startTimeout), "
                    + "or the query was cancelled)")
        }
        do { return try await body() } catch { throw failure(error) }
    }

    /// Runs `body`, or fails with `cannotOpen` once `timeout` has passed (a server that is down is asked again).
    func within(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Void)
        async throws(StoreError)
    {
        do {
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await body()
                    return true
                }
                group.addTask {
                    try await Task.sleep(for: timeout)
                    return false
                }
                let finished = try await group.next() ?? false
                group.cancelAll()
                guard finished else {
                    throw StoreError(
                        .cannotOpen,
                        "database \(self.location): no answer within \(timeout) (is the server running, and does it "
                            + "accept this user from this host? see its log)")
                }
            }
        } catch {
            throw failure(error)
        }
    }

    func failure(_ error: any Error) -> StoreError {
        switch error {
        case let error as StoreError:
            return error
        case let error as PostgresTransactionError:
            return failure(error.closureError ?? error.beginError ?? error.commitError ?? error.rollbackError ?? error)
        case let error as PSQLError:
            guard let info = error.serverInfo, let message = info[.message] else {
                let cause = error.underlying.map { ": \($0)" } ?? ""
                return StoreError(
                    .cannotOpen, "database \(location): cannot reach the server (\(error.code))\(cause)",
                    underlying: error)
            }
            let state = info[.sqlState] ?? ""
            let code: StoreError.Code =
                switch state {
                case "53100": .diskFull
                case "25006": .readOnly
                case "55P03", "40P01": .locked
                case _ where state.hasPrefix("28") || state == "3D000": .cannotOpen
                case "XX001", "XX002": .corrupt
                default: .other
                }
            return StoreError(code, "database \(location): \(message) (SQLSTATE \(state))", underlying: error)
        default:
            return StoreError(.other, "database \(location): \(error)", underlying: error)
        }
    }
}
