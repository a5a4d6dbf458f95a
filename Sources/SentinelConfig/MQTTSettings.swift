import Foundation
public import SentinelCore

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

    /// The settings of a broker connection, in a box's `outputs.mqtt:` and a fleet's `broker:`.
    public static let settings: [Setting<MQTTConnection>] = [
        .text(
            "url", \.url,
            check: {
                MQTTEndpoint(url: $0) == nil
                    ? "\"\($0)\" is not a broker URL such as mqtt://broker.local:1883 or mqtts://broker:8883" : nil
            },
            "the broker, mqtt://host[:port] or mqtts://host[:port] (required)"),
        .path("caFile", \.caFile, "the CA that signed an mqtts:// broker's certificate (required for mqtts://)"),
        .text("clientId", \.clientId, "the MQTT client id"),
        .text("topicPrefix", \.topicPrefix, "topics are {topicPrefix}/{site}/{stream}/{type}"),
        .path("credentialsFile", \.credentialsFile, "one line username:password, not readable by every user"),
        .text("usernameEnvironment", \.usernameEnvironment, "environment variable holding the broker username"),
        .text("passwordEnvironment", \.passwordEnvironment, "environment variable holding the broker password"),
    ]

    /// Reads the connection's keys of a section whose fields are `fields`, reporting problems into the reader.
    package mutating func read(_ fields: [String: Field], in section: Field, _ reader: ConfigReader) {
        reader.apply(Self.settings, from: fields, to: &self)
        guard let f = reader.required(fields, "url", in: section) else { return }
        if MQTTEndpoint(url: url)?.tls == true, caFile == nil {
            reader.report(f, "an mqtts:// broker needs caFile: the CA that signed its certificate")
        }
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

    /// The section's own settings, beside the connection's.
    public static let settings: [Setting<MQTTSettings>] = [
        .text(
            "site", \.site, check: { Name.isValid($0) ? nil : "a site id \"\($0)\" \(Name.rule)" },
            "this box's name in topics and messages (required)"),
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
        let keys = Set(MQTTConnection.settings.map(\.key) + Self.settings.map(\.key))
        guard let fields = reader.mapping(field, keys: keys) else { return nil }
        let before = reader.problems.count
        _ = reader.required(fields, "site", in: field)
        reader.apply(Self.settings, from: fields, to: &settings)
        settings.connection.clientId = "sentinel-\(settings.site)"
        settings.connection.read(fields, in: field, reader)
        return reader.problems.count == before ? settings : nil
    }
}
