import Foundation
public import Logging
public import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelMQTT
import SentinelPrivacy
public import SentinelRuntime
public import SentinelStore
public import ServiceLifecycle
import UnixSignals

/// `sentinel fleet`: the sites' forwarded events, the fleet's store writer and the same HTTP API as a box, as one
/// ServiceGroup. The writer, the gauge, the SSE broadcaster and the API are a box's own: the ingest takes the place
/// of the cameras. On SIGTERM the ingest disconnects and hands over what it received, the writer stores it and ends
/// the SSE streams, and the server stops. The store is the fleet file's SQLite file, or its PostgreSQL server
/// (`database:`), which replicas share.
public struct FleetService: Sendable {
    public let group: ServiceGroup
    public let store: any EventLog
    public let live: LiveState
    public let telemetry: Telemetry
    public let broadcaster: Broadcaster

    public init(
        definition: FleetDefinition, options: HostingOptions = .init(), logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) async throws {
        let (definition, tokens) = try Self.preflight(definition: definition, options: options)
        let server = definition.server
        try server.checkListening()
        let pool: PostgresEventStore? =
            if let database = definition.database, options.databasePath == nil {
                try await PostgresEventStore.open(database, logger: logger)
            } else { nil }
        store =
            try pool
            ?? EventStore(
                path: options.databasePath ?? definition.store.path, group: definition.store.group, ownsVisits: false)
        let telemetry = Telemetry()
        self.telemetry = telemetry
        let aggregation = definition.aggregation
        let live = LiveState(
            running: [], catalogue: LiveState.Catalogue(sources: [], zones: []), aggregation: aggregation)
        self.live = live
        let broadcaster = Broadcaster(telemetry: telemetry, memoryLimit: server.streamMemoryMegabytes << 20)
        self.broadcaster = broadcaster
        let hub = Hub(bound: definition.store.bufferEvents, telemetry: telemetry)
        let log = StoreWriter.services(
            store: store, hub: hub, broadcaster: broadcaster, live: live, policy: definition.privacy,
            aggregation: aggregation, clientBufferEvents: server.clientBufferEvents, telemetry: telemetry,
            logger: logger)
        let ingest = FleetIngest(
            broker: definition.broker, sites: definition.sites, store: store, hub: hub,
            bufferEvents: definition.store.bufferEvents, commits: broadcaster.commits, live: live,
            policy: definition.privacy, telemetry: telemetry, logger: logger)
        let api = HTTPAPI(
            settings: server, store: store, live: live, hub: hub, broadcaster: broadcaster, telemetry: telemetry,
            tokens: tokens, aggregation: aggregation, logger: logger)
        // The gauge's readings are due by the clock: a fleet has no frames to tick it.
        let clock = GaugeClock(hub: hub)
        // Started in this order, stopped in reverse: the ingest first, then the writer, retention and (of a shared
        // log) the follower, then the server, and last the store (SQLite's checkpoints, PostgreSQL's connections).
        group = ServiceGroup(
            configuration: .init(
                services: [.init(service: store), .init(service: api.application(onListening: onListening))]
                    + log.map { .init(service: $0) } + [.init(service: clock), .init(service: ingest)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
    }

    /// Runs until SIGTERM or SIGINT (or every service has ended), then gives up the database.
    public func run() async throws {
        defer { store.relinquish() }
        try await group.run()
    }

    /// Every check `sentinel fleet` makes before it serves: the broker's credentials and CA file, the tokens, the
    /// store. Returns the definition with the command line's server settings applied, and the tokens.
    public static func preflight(definition: FleetDefinition, options: HostingOptions = .init())
        throws(ConfigError) -> (FleetDefinition, AccessTokens)
    {
        var definition = definition
        if let host = options.host { definition.server.host = host }
        if let port = options.port { definition.server.port = port }
        var problems = definition.broker.connection.problems(section: FleetBroker.section).map {
            ConfigProblem(file: definition.file, path: $0.path, message: $0.message)
        }
        if let database = definition.database {
            do { _ = try database.password() } catch {
                problems.append(
                    ConfigProblem(file: definition.file, path: "database.passwordFile", message: error.message))
            }
        }
        let tokens = Hosting.checks(
            file: definition.file, server: definition.server,
            database: options.databasePath ?? definition.store.path, group: definition.store.group,
            groupLocation: definition.groupLocation, problems: &problems)
        guard problems.isEmpty else { throw ConfigError(problems: problems) }
        return (definition, tokens)
    }
}

/// Ticks the hub every second by the wall clock: the gauge publishes when its figures change, or when it is due
/// again, without frames to tick it.
struct GaugeClock: Service {
    let hub: Hub

    func run() async throws {
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            hub.tick(time: Date())
            try? await Task.sleep(for: .seconds(1))
        }
    }
}
