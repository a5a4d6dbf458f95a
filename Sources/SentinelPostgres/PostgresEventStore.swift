public import Foundation
public import Logging
import NIOSSL
import PostgresNIO
import SentinelAggregates
public import SentinelConfig
import SentinelCore
public import SentinelStore
import Synchronization

/// The event log on a PostgreSQL server, shared by the replicas of a fleet: the same tables, guarantees and answers
/// as the SQLite store (`EventStore`), for many writers.
///
/// Every append takes one transaction-scoped advisory lock before it assigns ids and sequence numbers, so appends
/// commit one at a time, in id order: a reader that follows the log by id (an SSE client, a replica) never passes an
/// id that commits later. A forwarded event's origin (site, id) is unique in the log: a message the broker delivers
/// to a second replica after the first stored it (the first died before acknowledging) is left out, whichever
/// replica sees it and in whatever order.
public final class PostgresEventStore: EventLog {
    public let location: String
    public var interrupted: [Data] { [] }
    public var isShared: Bool { true }
    let client: PostgresClient
    let runner: Task<Void, Never>
    let logger: Logger
    /// The connection of its own on which this replica holds (or tries for) the lead.
    let leadConnection: PostgresConnection.Configuration
    private let lead = Mutex<(connection: PostgresConnection?, held: Bool)>((nil, false))

    /// Appends take this lock, migrations the next, the lead the third: numbers no other program is likely to use.
    static let appendLock: Int64 = 0x5345_4e54_0001
    static let migrationLock: Int64 = 0x5345_4e54_0002
    static let leadLock: Int64 = 0x5345_4e54_0003

    /// Connects, waits for the server (at most `timeout`) and migrates the schema. A fleet's visits are its sites' to
    /// close, so nothing is closed as interrupted here.
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
        do {
            try await store.within(timeout) { try await store.migrate() }
        } catch {
            store.relinquish()
            throw error
        }
        return store
    }

    private init(
        location: String, client: PostgresClient, leadConnection: PostgresConnection.Configuration, logger: Logger
    ) {
        self.location = location
        self.client = client
        self.leadConnection = leadConnection
        self.logger = logger
        // The pool's own loop: every query waits for it, so it must not queue behind ordinary work on a busy
        // machine (at the default priority, a test run's backlog held it back past the 15 s open timeout).
        runner = Task(priority: .high) { await client.run() }
    }

    deinit { relinquish() }

    /// Closes the connections, and with the lead's the lead.
    public func relinquish() {
        runner.cancel()
        if let connection = lead.withLock({ state in
            defer { state = (nil, false) }
            return state.connection
        }) {
            Task { try? await connection.close() }
        }
    }

    /// One replica leads: the one holding a session advisory lock on a connection of its own. When it dies its
    /// session ends, the server releases the lock, and the next replica to ask takes the lead.
    public func leads() async -> Bool {
        let (held, open) = lead.withLock { ($0.held, $0.connection.map { !$0.isClosed } ?? false) }
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
            lead.withLock { $0 = (connection, taken) }
            if taken && !held { logger.notice("this replica leads", metadata: ["database": "\(location)"]) }
            return taken
        } catch {
            lead.withLock { $0 = (nil, false) }
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

    /// Runs `body`, its errors said as a store's: which server, and the server's own message.
    func guarded<T>(_ body: () async throws -> T) async throws(StoreError) -> T {
        do { return try await body() } catch { throw failure(error) }
    }

    /// Runs `body`, or fails with `cannotOpen` once `timeout` has passed (the pool waits for a server that is down).
    func within(_ timeout: Duration, _ body: @escaping @Sendable () async throws -> Void)
        async throws(StoreError)
    {
        try await guarded {
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
