import Foundation
import Hummingbird
import HummingbirdCore
public import Logging
import NIOCore
public import SentinelConfig
public import SentinelCore
public import SentinelHTTP
import SentinelMQTT
public import SentinelModels
import SentinelPrivacy
public import SentinelRuntime
public import SentinelStore
import SentinelVision
public import ServiceLifecycle
import UnixSignals

/// `sentinel run`: every source, the store writer and the HTTP server as one ServiceGroup.
///
/// On SIGTERM or SIGINT the group shuts down in reverse order of start: the sources stop taking frames and end
/// their open visits (`exited`, reason `shutdown`), the writer stores what is left and ends the SSE streams, and
/// the server stops.
public struct SentinelService: Sendable {
    public let group: ServiceGroup
    public let store: EventStore
    public let live: LiveState
    public let broadcaster: Broadcaster
    public let telemetry: Telemetry
    /// Where sources hand over masked events.
    public let hub: Hub
    /// The HTTP API as the server answers it (tests call its router in-process).
    public let api: HTTPAPI

    public struct Options {
        public var pace: Pacing?
        public var loop = false
        /// Which sources to start (nil: all of them; empty: serve the store and API only).
        public var sources: Set<String>?
        /// Where to serve and store, over the file's settings.
        public var hosting = HostingOptions()
        public init() {}
    }

    /// Builds the service; `onListening` gets the bound port (useful with port 0).
    public init(
        definition service: ServiceDefinition, models: ModelStore, options: Options = Options(), logger: Logger,
        onListening: @escaping @Sendable (Int) async -> Void = { _ in }
    ) throws {
        let (service, tokens) = try Self.preflight(definition: service, models: models, options: options)
        let definition = service.pipeline
        let server = service.server
        try server.checkListening()
        store = try EventStore(path: options.hosting.databasePath ?? service.store.path, group: service.store.group)
        let started = definition.sources.filter { options.sources?.contains($0.id) ?? true }
        let telemetry = Telemetry()
        let aggregation = definition.aggregation
        let live = LiveState(
            running: started.map(\.id),
            catalogue: LiveState.Catalogue(
                sources: definition.sources.map(\.id),
                zones: definition.sources.flatMap { source in
                    source.zones.map {
                        LiveState.Zone(
                            id: ZoneID(sourceId: source.id, name: $0.name), emotion: $0.emotion, polygon: $0.polygon,
                            units: $0.units)
                    }
                }), aggregation: aggregation, stills: definition.privacy.review.stills)
        self.telemetry = telemetry
        self.live = live
        broadcaster = Broadcaster(telemetry: telemetry, memoryLimit: server.streamMemoryMegabytes << 20)
        let hub = Hub(bound: service.store.bufferEvents, telemetry: telemetry)
        self.hub = hub
        let log = StoreWriter.services(
            store: store, hub: hub, broadcaster: broadcaster, live: live, policy: definition.privacy,
            aggregation: aggregation, clientBufferEvents: server.clientBufferEvents,
            telemetry: telemetry, logger: logger)
        let keys = try PseudonymKeyRing(settings: definition.privacy.pseudonyms)
        let api = HTTPAPI(
            settings: server, store: store, live: live, hub: hub,
            broadcaster: broadcaster, telemetry: telemetry, tokens: tokens, aggregation: aggregation, logger: logger)
        self.api = api
        let app = api.application(onListening: onListening)
        var mqtt: MQTTOutput?
        if let settings = service.mqtt {
            mqtt = MQTTOutput(
                settings: settings, zones: definition.zoneIDs, policy: definition.privacy, store: store,
                commits: broadcaster.commits, live: live,
                telemetry: telemetry, logger: logger)
        }
        let shared = definition.sharing(sources: started.count)
        OpenCVFaceDetector.shareCores(sources: started.count)
        let pool = FramePool(bytes: FramePool.runBytes)
        let sources = started.map { source in
            SourceService(
                definition: shared, source: source, models: models, pace: options.pace, loop: options.loop,
                keys: keys, hub: hub,
                live: live, telemetry: telemetry, pool: pool, logger: logger)
        }
        // Started in this order, stopped in reverse: sources first, then the writer and retention, then the MQTT
        // output (which forwards what the writer stored last), then the server, and last the store's checkpoints. A
        // source that ends (a recording played once) leaves the rest running.
        typealias Entry = ServiceGroupConfiguration.ServiceConfiguration
        let services: [Entry] =
            [Entry(service: store), Entry(service: app)]
            + (mqtt.map {
                [Entry(service: $0, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)]
            } ?? []) + log.map { Entry(service: $0) }
            + sources.map {
                Entry(service: $0, successTerminationBehavior: .ignore, failureTerminationBehavior: .ignore)
            }
        group = ServiceGroup(
            configuration: .init(
                services: services,
                gracefulShutdownSignals: [.sigterm, .sigint],
                logger: logger))
    }

    /// Runs until SIGTERM or SIGINT (or every service has ended), then gives up the database.
    public func run() async throws {
        defer { store.relinquish() }
        try await group.run()
    }

    /// Every check `sentinel run` makes before it serves, and `sentinel check` prints: this machine's models and
    /// inputs, the access tokens, the pseudonym key file, the store's folder and group and the open-file limit.
    /// Returns the definition with the command line's server settings applied, and the tokens; throws every problem
    /// found.
    public static func preflight(
        definition service: ServiceDefinition, models: ModelStore, options: Options = Options()
    ) throws(ConfigError) -> (ServiceDefinition, AccessTokens) {
        var service = service
        if let host = options.hosting.host { service.server.host = host }
        if let port = options.hosting.port { service.server.port = port }
        let server = service.server
        let definition = service.pipeline
        var started = definition
        started.sources = definition.sources.filter { options.sources?.contains($0.id) ?? true }
        var problems = started.environmentProblems(
            models: models, frameSize: VideoFileSource.frameSize(of:),
            openClassifier: FaceClassifier.open)
        func problem(_ path: String, _ message: String) {
            problems.append(ConfigProblem(file: definition.file, path: path, message: message))
        }
        do { try PseudonymKeyRing.check(definition.privacy.pseudonyms) } catch {
            problem("privacy.pseudonyms.keyFile", error.description)
        }
        for (path, message) in service.mqtt?.connection.problems(section: MQTTSettings.section) ?? [] {
            problem(path, message)
        }
        let tokens = Hosting.checks(
            file: definition.file, server: server, database: options.hosting.databasePath ?? service.store.path,
            group: service.store.group, groupLocation: service.groupLocation, problems: &problems)
        guard problems.isEmpty else { throw ConfigError(problems: problems) }
        return (service, tokens)
    }

    /// Builds the service, runs it in a task of its own, and returns once it listens, with the port it bound (the
    /// system's choice for port 0): for the bench and the tests, which drive the hub themselves. A service that
    /// fails to start throws its error here.
    public static func start(
        definition: ServiceDefinition, models: ModelStore, options: Options, logger: Logger
    ) async throws -> (service: SentinelService, port: Int, task: Task<Void, any Error>) {
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let service = try SentinelService(definition: definition, models: models, options: options, logger: logger) {
            listening.yield($0)
        }
        let task = Task {
            defer { listening.finish() }
            try await service.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else {
            try await task.value
            throw CommandError("the service ended before it listened")
        }
        return (service, port, task)
    }
}
