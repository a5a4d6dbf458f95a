import Foundation
import SentinelCore

/// How Sentinel reaches an MQTT broker, as a box's `outputs.mqtt:` and a fleet's `broker:` both write it.
/// Credentials never sit in the file: they come from `credentialsFile` (one line, `username:password`, not readable
/// by every user) or from the environment.
public struct MQTTConnection: Sendable, Equatable {
    /// `mqtt://host[:port]` or `mqtts://host[:port]` (then `caFile` names the CA that signed the broker's certificate).
    public var url: String
    public var caFile: String?
    public var clientId: String
    /// Topics are `{topicPrefix}/{site}/...`.
    public var topicPrefix = "sentinel"
    public var credentialsFile: String?
    public var usernameEnvironment = "SENTINEL_MQTT_USERNAME"
    public var passwordEnvironment = "SENTINEL_MQTT_PASSWORD"

    public init(url: String, clientId: String) {
        self.url = url
        self.clientId = clientId
    }

    /// The declared settings (`url`, `caFile` and `credentialsFile` are read by hand).
    public static let settings: [Setting<MQTTConnection>] = [
        .text("clientId", \.clientId, "the MQTT client id"),
        .text("topicPrefix", \.topicPrefix, "topics are {topicPrefix}/{site}/{stream}/{type}"),
        .text("usernameEnvironment", \.usernameEnvironment, "environment variable holding the broker username"),
        .text("passwordEnvironment", \.passwordEnvironment, "environment variable holding the broker password"),
    ]
    package static let handRead: Set<String> = ["url", "caFile", "credentialsFile"]

    /// Reads the connection's keys of a section whose fields are `fields`, reporting problems into the reader.
    package mutating func read(_ fields: [String: Field], in section: Field, _ reader: ConfigReader) {
        reader.apply(Self.settings, from: fields, to: &self)
        if let f = reader.required(fields, "url", in: section), let url = reader.string(f) {
            if let endpoint = MQTTEndpoint(url: url) {
                self.url = url
                if endpoint.tls, fields["caFile"] == nil {
                    reader.report(f, "an mqtts:// broker needs caFile: the CA that signed its certificate")
                }
            } else {
                reader.report(
                    f, "\"\(url)\" is not a broker URL such as mqtt://broker.local:1883 or mqtts://broker:8883")
            }
        }
        if let f = fields["caFile"], let path = reader.string(f) { caFile = reader.resolve(path) }
        if let f = fields["credentialsFile"], let path = reader.string(f) { credentialsFile = reader.resolve(path) }
    }
}

/// Where a broker listens, from an `mqtt://host[:port]` or `mqtts://host[:port]` URL.
public struct MQTTEndpoint: Sendable, Equatable {
    public var host: String
    public var port: Int
    public var tls: Bool

    public init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "mqtt" || scheme == "mqtts", let host = components.host, !host.isEmpty,
            components.path.isEmpty || components.path == "/", components.query == nil
        else { return nil }
        self.host = host
        tls = scheme == "mqtts"
        port = components.port ?? (tls ? 8883 : 1883)
    }
}

/// The `outputs.mqtt:` section: the broker the event log is forwarded to (`connection`), under which site name, and
/// how.
public struct MQTTSettings: Sendable, Equatable {
    public var connection: MQTTConnection
    /// This box's name in topics and messages: `{topicPrefix}/{site}/...`.
    public var site: String
    /// Messages sent and not yet acknowledged at most.
    public var inFlight = 100
    /// Announce the gauge and the occupancy sensors to Home Assistant (MQTT discovery).
    public var homeAssistant = false
    public var discoveryPrefix = "homeassistant"

    /// The client id is `sentinel-{site}` unless set.
    public init(url: String, site: String) {
        connection = MQTTConnection(url: url, clientId: "sentinel-\(site)")
        self.site = site
    }

    /// The section's own declared settings, beside the connection's (`site` is read by hand).
    public static let settings: [Setting<MQTTSettings>] = [
        .integer("inFlight", \.inFlight, in: 1...1_000, "messages sent and not yet acknowledged at most"),
        .flag("homeAssistant", \.homeAssistant, "announce the gauge and occupancy sensors to Home Assistant"),
        .text("discoveryPrefix", \.discoveryPrefix, "Home Assistant's discovery prefix"),
    ]

    package static let section = "outputs.mqtt"
}

extension MQTTSettings {
    /// Reads the `outputs.mqtt:` section; nil when it has problems (reported).
    package static func read(_ field: Field, _ reader: ConfigReader) -> MQTTSettings? {
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
