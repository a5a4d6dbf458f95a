import Foundation
public import SentinelCore
public import SentinelPrivacy

/// A fleet file, as `sentinel fleet` reads it: the broker the sites forward to, the fleet's own store and server,
/// and the privacy and gauge settings that hold across sites. Every problem is reported by file, line and field
/// together, as for a pipeline file.
public struct FleetDefinition: Sendable {
    public var file: String
    public var broker: FleetBroker
    public var store: StoreSettings
    /// The PostgreSQL server the fleet stores into instead of `store.path` (replicas share it); nil: SQLite.
    public var database: DatabaseServer?
    public var server = ServerSettings()
    /// `minGroupSize` holds across sites; the allowlists can only narrow what the sites sent.
    public var privacy = PrivacyPolicy()
    public var gauge = GaugeSettings()
    public var sites = FleetSites()
    package var groupLocation: ConfigProblem?

    public static func load(_ path: String) throws(ConfigError) -> FleetDefinition {
        try ConfigFile.load(path) { root, reader in read(root, reader) }
    }

    public static func parse(_ text: String, file: String) throws(ConfigError) -> FleetDefinition {
        try ConfigFile.parse(text, file: file) { root, reader in read(root, reader) }
    }

    private static func read(_ root: Field, _ reader: ConfigReader) -> FleetDefinition? {
        guard
            let top = reader.mapping(
                root, keys: ["version", "broker", "sites", "store", "database", "server", "privacy", "gauge"])
        else { return nil }
        if let version = reader.required(top, "version", in: root), let value = reader.integer(version, in: 1...1000),
            value != 1
        {
            reader.report(version, "version \(value) is not supported; this Sentinel reads version 1")
        }
        var definition = FleetDefinition(
            file: reader.file, broker: FleetBroker(url: ""), store: StoreSettings(beside: reader.file))
        if let field = reader.required(top, "broker", in: root) { definition.broker.read(field, reader) }
        let problems = reader.problems.count
        if let field = top["sites"] { _ = reader.section(field, FleetSites.settings, into: &definition.sites) }
        // Said only of a section that reads well: "name the sites" beside a refused site name would mislead.
        if definition.sites.allow.isEmpty && definition.sites.learn == 0 && reader.problems.count == problems {
            reader.report(
                top["sites"] ?? root,
                "name the sites this fleet takes (sites.allow) or how many it may learn (sites.learn)")
        }
        if let field = top["store"] {
            _ = reader.section(field, StoreSettings.settings, into: &definition.store)
            definition.groupLocation = reader.locations["store.group"]
        }
        if let field = top[DatabaseServer.section] { definition.database = DatabaseServer.read(field, reader) }
        if let field = top["server"] { definition.server.read(field, reader) }
        if let field = top["privacy"] {
            PipelineDefinition.readPrivacy(field, reader, into: &definition.privacy, outputs: [.events, .store])
        }
        if let field = top["gauge"] { _ = reader.section(field, GaugeSettings.settings, into: &definition.gauge) }
        return definition
    }

    /// What the fleet publishes across sites: the gauge overall and per camera and zone of every site as their
    /// events name them, who is present, the reports, under the fleet's own k.
    package var aggregation: Aggregation { Aggregation(policy: privacy, gauge: gauge) }

    /// Every tunable setting of a fleet file, as commented YAML.
    public static var reference: String {
        let broker = FleetBroker(url: "mqtt://127.0.0.1:1883")
        return
            ([
                "# Every setting of a fleet file (sentinel fleet), at its default. Generated from the settings'",
                "# declarations: sentinel fleet --reference. broker.url is required; credentials come from",
                "# credentialsFile or the environment, never this file. privacy takes a pipeline file's privacy section",
                "# (its outputs: events and store; a fleet has no MQTT output).",
                "version: 1",
            ]
            + PipelineReference.section("broker", MQTTConnection.settings, broker.connection)
            + PipelineReference.section("broker", FleetBroker.settings, broker).dropFirst()
            + PipelineReference.section("sites", FleetSites.settings, FleetSites())
            + PipelineReference.section("store", StoreSettings.settings, StoreSettings(path: ""))
            + ["# database: a PostgreSQL server to store into instead of store.path (replicas share it)."]
            + PipelineReference.section(
                DatabaseServer.section, DatabaseServer.settings,
                DatabaseServer(url: "postgres://sentinel@127.0.0.1:5432/sentinel")
            ).map { "# " + $0 }
            + PipelineReference.section("server", ServerSettings.settings, ServerSettings())
            + PipelineReference.section("privacy", PrivacyPolicy.settings, PrivacyPolicy())
            + PipelineReference.section("gauge", GaugeSettings.settings, GaugeSettings())).joined(separator: "\n")
            + "\n"
    }
}

/// The `sites:` section of a fleet file: which sites the fleet takes messages from. Anyone who can publish to the
/// broker can name any site in a topic; the broker's ACL holds each site to its own topic (README, "Fleets"), and
/// this holds the fleet to the sites it was told of. A site not allowed is refused (reason `site`), unless the fleet
/// may learn sites: then the first `learn` sites it hears of are taken (and kept, as the store remembers them).
/// An availability message never makes a site.
public struct FleetSites: Sendable, Equatable {
    public var allow: [String] = []
    public var learn = 0
    /// What one site may name: a site's event naming one camera or zone more is refused (reason `limit`), so one site
    /// cannot grow the fleet's store, gauge, reports and metrics without bound.
    public var cameras = 32
    public var zones = 256

    public static let settings: [Setting<FleetSites>] = [
        .list(
            "allow", \.allow, check: { Name.isValid($0) ? nil : "site \"\($0)\" \(Name.rule)" },
            "the sites whose messages are taken (names; this or learn required)"),
        .integer("learn", \.learn, in: 0...100_000, "sites not in allow taken as they are first heard of, at most"),
        .integer("cameras", \.cameras, in: 1...10_000, "cameras one site may name, at most (more: refused, limit)"),
        .integer("zones", \.zones, in: 1...100_000, "zones one site may name over its cameras, at most"),
    ]
}

/// The `broker:` section of a fleet file: where the sites publish, and how the fleet subscribes.
public struct FleetBroker: Sendable, Equatable {
    /// The client id is also the broker's key to the fleet's persistent session (default `sentinel-fleet`).
    public var connection: MQTTConnection
    /// The MQTT 5 shared subscription's group: replicas with the same group split the sites' messages between them.
    /// Empty: a plain subscription (every replica gets everything).
    public var group = "sentinel-fleet"
    /// How long the broker keeps the fleet's session (and queues the sites' messages) while the fleet is away.
    public var sessionExpiryHours = 168.0

    public init(url: String) {
        connection = MQTTConnection(url: url, clientId: "sentinel-fleet")
    }

    public static let settings: [Setting<FleetBroker>] = [
        .text("group", \.group, "shared subscription group; replicas in one group split the load (empty: none)"),
        .number(
            "sessionExpiryHours", \.sessionExpiryHours, in: 0...8_760,
            "hours the broker queues the sites' messages while the fleet is away"),
    ]

    package static let section = "broker"

    mutating func read(_ field: Field, _ reader: ConfigReader) {
        let keys = Set(MQTTConnection.settings.map(\.key) + Self.settings.map(\.key))
        guard let fields = reader.mapping(field, keys: keys) else { return }
        reader.apply(Self.settings, from: fields, to: &self)
        connection.read(fields, in: field, reader)
        if group.contains(where: { "/+#".contains($0) }), let f = fields["group"] {
            reader.report(f, "a shared subscription group may not contain /, + or #")
        }
    }

    /// What the fleet subscribes to: every site's log events, through the shared subscription.
    package var eventsFilter: String {
        let topic = "\(connection.topicPrefix)/+/+/+"
        return group.isEmpty ? topic : "$share/\(group)/\(topic)"
    }

    /// Every site's retained availability (not shared: each replica wants every site's).
    package var availabilityFilter: String { "\(connection.topicPrefix)/+/availability" }
}
