import Foundation
import SentinelCore
import SentinelPipeline
import SentinelRuntime

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
            if let endpoint = MQTTClient.Endpoint(url: url) {
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

    /// The username and password, from the credentials file or the environment (nil: anonymous); `section` names
    /// the file's setting in messages.
    func credentials(section: String) throws(ServiceError) -> (username: String, password: String)? {
        if let line = try AccessToken.load(
            file: credentialsFile, environment: "", key: "\(section).credentialsFile", minimumLength: 1)
        {
            guard let colon = line.firstIndex(of: ":") else {
                throw ServiceError("the credentials file \(credentialsFile ?? "") must hold one line username:password")
            }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]))
        }
        let environment = ProcessInfo.processInfo.environment
        guard let username = environment[usernameEnvironment], !username.isEmpty else { return nil }
        return (username, environment[passwordEnvironment] ?? "")
    }

    /// What `sentinel check` and start-up find wrong with the credentials and the CA file, as (setting, message).
    package func problems(section: String) -> [(path: String, message: String)] {
        var problems: [(String, String)] = []
        do { _ = try credentials(section: section) } catch {
            problems.append(("\(section).credentialsFile", error.description))
        }
        if let ca = caFile, !FileManager.default.isReadableFile(atPath: ca) {
            problems.append(("\(section).caFile", "cannot read the CA file \(ca)"))
        }
        return problems
    }

    /// A client with these credentials and CA, not started yet (a caller adds its will and subscriptions first).
    package func client(cleanStart: Bool = true, sessionExpiry: UInt32 = 0, section: String) throws -> MQTTClient {
        let client = try MQTTClient(clientID: clientId, cleanStart: cleanStart, sessionExpiry: sessionExpiry)
        if let credentials = try credentials(section: section) {
            try client.credentials(username: credentials.username, password: credentials.password)
        }
        if try endpoint.tls, let ca = caFile { try client.tls(caFile: ca) }
        return client
    }

    /// Where the broker listens (`read` refused a URL that names none, so this throws only for a connection made in
    /// code with a bad URL).
    package var endpoint: MQTTClient.Endpoint {
        get throws {
            guard let endpoint = MQTTClient.Endpoint(url: url) else {
                throw ServiceError("\"\(url)\" is not a broker URL such as mqtt://broker.local:1883")
            }
            return endpoint
        }
    }
}
