import Foundation
import NIOCore
import NIOPosix
import SentinelCore
import SentinelMQTT
import SentinelPipeline
import SentinelStore

/// A pipeline file as `sentinel run` serves it: the pipeline, and the `store:` and `server:` sections, each read by
/// its owner's declarations, with every problem reported by file, line and field together.
public struct ServiceDefinition: Sendable {
    public var pipeline: PipelineDefinition
    public var store: StoreSettings
    public var server = ServerSettings()
    /// Where the event log is forwarded besides SSE (`outputs.mqtt`).
    public var mqtt: MQTTSettings?
    /// Where `store.group` was written, for the message when this machine has no such group.
    var groupLocation: ConfigProblem?

    public static func load(_ path: String, overrides: [ConfigOverride] = []) throws(ConfigError) -> ServiceDefinition {
        try read(file: path) { sections throws(ConfigError) in
            try PipelineDefinition.load(path, sections: sections, overrides: overrides)
        }
    }

    public static func parse(_ text: String, file: String) throws(ConfigError) -> ServiceDefinition {
        try read(file: file) { sections throws(ConfigError) in
            try PipelineDefinition.parse(text, file: file, sections: sections)
        }
    }

    private static func read(
        file: String,
        pipeline: ([String: PipelineDefinition.SectionReader]) throws(ConfigError) -> PipelineDefinition
    ) throws(ConfigError) -> ServiceDefinition {
        var store = StoreSettings(beside: file)
        var server = ServerSettings()
        var mqtt: MQTTSettings?
        var groupLocation: ConfigProblem?
        let definition = try pipeline([
            "store": { field, reader in groupLocation = store.read(field, reader) },
            "server": { field, reader in server.read(field, reader) },
            "outputs": { field, reader in
                guard let outputs = reader.mapping(field, keys: ["mqtt"]), let section = outputs["mqtt"] else { return }
                mqtt = MQTTSettings.read(section, reader)
            },
        ])
        return ServiceDefinition(
            pipeline: definition, store: store, server: server, mqtt: mqtt, groupLocation: groupLocation)
    }

    /// Every tunable setting of a pipeline file that `sentinel run` serves, as commented YAML (see
    /// `PipelineReference`).
    public static var reference: String {
        PipelineReference.text(
            appending: PipelineReference.section("store", StoreSettings.settings, StoreSettings(path: ""))
                + PipelineReference.section("server", ServerSettings.settings, ServerSettings())
                + [
                    "# Forwarding by MQTT is off until outputs.mqtt gives a url and a site (see README.md):",
                    "# outputs:",
                ]
                + (PipelineReference.section(
                    "mqtt", MQTTConnection.settings, MQTTSettings(url: "mqtt://127.0.0.1", site: "{site}").connection,
                    indent: "    ")
                + PipelineReference.section(
                    "mqtt", MQTTSettings.settings, MQTTSettings(url: "mqtt://127.0.0.1", site: "{site}"),
                    indent: "    "
                ).dropFirst()).map { "# " + $0 })
    }
}

extension StoreSettings {
    /// By default the database sits beside its pipeline or fleet file, named after it.
    init(beside file: String) {
        let url = URL(fileURLWithPath: file)
        self.init(
            path: url.deletingLastPathComponent().appendingPathComponent(
                url.deletingPathExtension().lastPathComponent + ".sqlite"
            ).standardizedFileURL.path)
    }

    /// Reads the `store:` section; returns where `group` was written, for the message when this machine has no such
    /// group.
    mutating func read(_ field: Field, _ reader: ConfigReader) -> ConfigProblem? {
        guard let fields = reader.section(field, Self.settings, extra: ["path", "group"], into: &self) else {
            return nil
        }
        if let f = fields["path"], let path = reader.string(f) { self.path = reader.resolve(path) }
        guard let f = fields["group"], let group = reader.string(f) else { return nil }
        self.group = group
        return reader.location(of: f)
    }
}

/// The HTTP server of `sentinel run`. Tokens are never written here: only where to read one.
public struct ServerSettings: Sendable, Equatable {
    /// Loopback by default; any other address requires a bearer token.
    public var host = "127.0.0.1"
    public var port = 8080
    /// The ports a pipeline file or `sentinel run --port` may name (0: any free port).
    public static let portRange = 0...65_535
    /// A file holding the bearer token (its first line).
    public var tokenFile: String?
    /// An environment variable holding the bearer token.
    public var tokenEnvironment = "SENTINEL_TOKEN"
    /// A token for aggregates only (zone counts, the gauge): no per-visitor record, as PRIVACY.md explains.
    public var aggregateTokenFile: String?
    public var aggregateTokenEnvironment = "SENTINEL_AGGREGATE_TOKEN"
    /// Dashboard origins allowed to call the API from a browser (CORS).
    public var corsOrigins: [String] = []
    /// Seconds between SSE comment heartbeats on an idle stream.
    public var heartbeatSeconds = 15.0
    /// The reconnection delay SSE clients are told to use.
    public var retryMilliseconds = 3_000
    /// Messages queued for one SSE client; a client that falls this far behind is cut off.
    public var clientBufferEvents = 1_024
    /// Seconds a connection may stay silent: before its request is complete (a slowloris), or between requests.
    /// Open SSE streams are not idle: they end with the client or the service.
    public var idleTimeoutSeconds = 10.0
    /// Open connections at most; beyond, new ones wait in the listen backlog until one closes.
    public var maxConnections = 1_200
    /// Open SSE streams at most (within maxConnections); beyond, /events answers 503 with Retry-After.
    public var maxSubscribers = 1_000

    public init() {}

    /// The `server:` section's declared settings (token files, CORS origins and maxSubscribers are read by hand).
    public static let settings: [Setting<ServerSettings>] = [
        .text("host", \.host, "address to listen on; any other than loopback requires a bearer token"),
        .integer("port", \.port, in: portRange, "port to listen on (0: any free port)"),
        .text("tokenEnvironment", \.tokenEnvironment, "environment variable holding the bearer token"),
        .text(
            "aggregateTokenEnvironment", \.aggregateTokenEnvironment,
            "environment variable holding the aggregates-only token"),
        .number("heartbeatSeconds", \.heartbeatSeconds, in: 1...300, "seconds between SSE heartbeats"),
        .integer(
            "retryMilliseconds", \.retryMilliseconds, in: 100...600_000,
            "reconnection delay SSE clients are told to use"),
        .integer(
            "clientBufferEvents", \.clientBufferEvents, in: 16...1_000_000,
            "messages queued for one SSE client; one that falls this far behind is cut off"),
        .number(
            "idleTimeoutSeconds", \.idleTimeoutSeconds, in: 1...3_600,
            "seconds a connection may stay silent before its request is complete, or between requests"),
        .integer("maxConnections", \.maxConnections, in: 8...100_000, "open connections at most"),
    ]

    /// Whether `host` only accepts connections from this machine.
    public var isLoopback: Bool { ["127.0.0.1", "::1", "localhost"].contains(host) }

    /// Throws unless this process can listen on `host:port` now: a port another program holds (a second `sentinel
    /// run`), one below 1024 without the right, a host that is not this machine's. `sentinel run` and `sentinel fleet`
    /// ask before they open the store or start a source, so an instance that cannot serve changes nothing. Port 0
    /// (any free port) always can.
    func checkListening() throws(ServiceError) {
        guard port != 0 else { return }
        do {
            let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).wait()
            try channel.close().wait()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw ServiceError(
                "cannot listen on \(host):\(port): another program holds that port (another sentinel? see "
                    + "`ss -ltnp 'sport = :\(port)'`); choose another with --port or server.port")
        } catch {
            throw ServiceError("cannot listen on \(host):\(port): \(error)")
        }
    }
}

extension ServerSettings {
    /// Reads the `server:` section into these settings.
    mutating func read(_ field: Field, _ reader: ConfigReader) {
        guard
            let fields = reader.section(
                field, Self.settings, extra: ["tokenFile", "aggregateTokenFile", "corsOrigins", "maxSubscribers"],
                into: &self)
        else { return }
        if let f = fields["tokenFile"], let v = reader.string(f) { tokenFile = reader.resolve(v) }
        if let f = fields["aggregateTokenFile"], let v = reader.string(f) { aggregateTokenFile = reader.resolve(v) }
        if let f = fields["corsOrigins"], let list = reader.sequence(f) {
            corsOrigins = list.compactMap { item in
                guard let origin = reader.string(item) else { return nil }
                guard let url = URL(string: origin), url.scheme == "http" || url.scheme == "https", url.host != nil,
                    url.path.isEmpty
                else {
                    reader.report(
                        item,
                        "\"\(origin)\" is not an origin such as https://dashboard.example.com (scheme, host and port only)"
                    )
                    return nil
                }
                return origin
            }
        }
        if let f = fields["maxSubscribers"], let v = reader.integer(f, in: 1...100_000) {
            if v >= maxConnections {
                reader.report(f, "\(v) SSE subscribers need fewer than maxConnections (\(maxConnections))")
            } else {
                maxSubscribers = v
            }
        }
    }
}

extension MQTTSettings {
    /// Reads the `outputs.mqtt:` section; nil when it has problems (reported).
    static func read(_ field: Field, _ reader: ConfigReader) -> MQTTSettings? {
        var settings = MQTTSettings(url: "", site: "")
        let keys = Set((MQTTConnection.settings.map(\.key) + Self.settings.map(\.key) + ["site"]))
        guard let fields = reader.mapping(field, keys: keys.union(MQTTConnection.handRead)) else { return nil }
        let before = reader.problems.count
        if let f = reader.required(fields, "site", in: field), let site = reader.name(f, of: "a site id") {
            settings = MQTTSettings(url: "", site: site)
        }
        reader.apply(Self.settings, from: fields, to: &settings)
        settings.connection.read(fields, in: field, reader)
        return reader.problems.count == before ? settings : nil
    }
}
