import CoreMetrics
import Foundation
import Logging
import SentinelCore
import SentinelMQTT
import SentinelStore
import ServiceLifecycle

/// The `outputs.mqtt:` section: the broker the event log is forwarded to, and how. Credentials never sit in the
/// pipeline file: they come from `credentialsFile` (one line, `username:password`, not readable by every user) or
/// from the environment.
public struct MQTTSettings: Sendable, Equatable {
    /// `mqtt://host[:port]` or `mqtts://host[:port]` (then `caFile` names the CA that signed the broker's certificate).
    public var url: String
    /// This box's name in topics and messages: `{topicPrefix}/{site}/...`.
    public var site: String
    public var caFile: String?
    /// The MQTT client id (default `sentinel-{site}`).
    public var clientId: String
    public var topicPrefix = "sentinel"
    public var credentialsFile: String?
    public var usernameEnvironment = "SENTINEL_MQTT_USERNAME"
    public var passwordEnvironment = "SENTINEL_MQTT_PASSWORD"
    /// Messages sent and not yet acknowledged at most.
    public var inFlight = 100

    public init(url: String, site: String) {
        self.url = url
        self.site = site
        clientId = "sentinel-\(site)"
    }

    /// The section's declared settings (`url`, `site`, `caFile` and `credentialsFile` are read by hand).
    public static let settings: [Setting<MQTTSettings>] = [
        .text("clientId", \.clientId, "the MQTT client id (default sentinel-{site})"),
        .text("topicPrefix", \.topicPrefix, "topics are {topicPrefix}/{site}/{stream}/{type}"),
        .text("usernameEnvironment", \.usernameEnvironment, "environment variable holding the broker username"),
        .text("passwordEnvironment", \.passwordEnvironment, "environment variable holding the broker password"),
        .integer("inFlight", \.inFlight, in: 1...1_000, "messages sent and not yet acknowledged at most"),
    ]

    /// The username and password, from the credentials file or the environment (nil: anonymous).
    func credentials() throws(ServiceError) -> (username: String, password: String)? {
        if let line = try AccessToken.load(
            file: credentialsFile, environment: "", key: "outputs.mqtt.credentialsFile", minimumLength: 1)
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

    var availabilityTopic: String { "\(topicPrefix)/\(site)/availability" }
}

/// Forwards the event log to an MQTT broker, the log being the outbox: every event, in id order, as its SSE envelope
/// with the site added, under `{prefix}/{site}/{stream}/{type}` at QoS 1, its log id and site also in MQTT 5 user
/// properties so a consumer drops duplicates. A durable position advances only on PUBACK; while the broker is down
/// or unreachable the box keeps recording and the client reconnects with backoff, then the backlog goes in order;
/// after a restart (even kill -9) forwarding resumes after the last acknowledged id. Duplicates happen only across a
/// crash, and carry the same id. The latest gauge reading is also kept retained under `{prefix}/{site}/gauge`, and
/// `{prefix}/{site}/availability` says `online`, or `offline` (the last will) when the box is gone.
public final class MQTTOutput: Service, Sendable {
    let settings: MQTTSettings
    let store: EventStore
    let live: LiveState
    let logger: Logger
    let published: CoreMetrics.Counter
    let backlog: CoreMetrics.Gauge
    /// The name of this output's position in the store's outbox table.
    static let outbox = "mqtt"

    public init(settings: MQTTSettings, store: EventStore, live: LiveState, telemetry: Telemetry, logger: Logger) {
        self.settings = settings
        self.store = store
        self.live = live
        self.logger = logger
        published = telemetry.mqttPublished
        backlog = telemetry.mqttBacklog
    }

    /// What the owner of the connection keeps between rounds.
    struct Progress {
        /// Every id up to this one is acknowledged (and stored as such).
        var acknowledged: Int64
        /// Sent and waiting for PUBACK, in id order.
        var inFlight: [(id: Int64, mid: Int32)] = []
        var acked: Set<Int32> = []
        /// Messages besides the log (availability, the retained gauge): their PUBACKs are not the log's.
        var untracked: Set<Int32> = []
        var connects = 0
        var rejected = 0
        var sent: Int64 { inFlight.last?.id ?? acknowledged }
    }

    public func run() async throws {
        let endpoint = MQTTClient.Endpoint(url: settings.url)!
        let client = try MQTTClient(clientID: settings.clientId)
        if let credentials = try settings.credentials() {
            try client.credentials(username: credentials.username, password: credentials.password)
        }
        if endpoint.tls, let ca = settings.caFile { try client.tls(caFile: ca) }
        try client.will(topic: settings.availabilityTopic, payload: "offline", retain: true)
        try client.start(endpoint)
        var progress = Progress(acknowledged: try await store.acknowledged(by: Self.outbox))
        logger.info(
            "forwarding the event log by MQTT",
            metadata: ["broker": "\(settings.url)", "after": "\(progress.acknowledged)"])
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            try await round(client, &progress)
            try? await Task.sleep(for: .milliseconds(50))
        }
        // Shutting down: the writer has stored the last events; send them while the broker acknowledges, briefly.
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline, client.state.connected {
            try await round(client, &progress)
            if progress.inFlight.isEmpty, try await store.logBounds().last <= progress.acknowledged { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        if client.state.connected {
            progress.untracked.insert(
                try client.publish(topic: settings.availabilityTopic, payload: Data("offline".utf8), retain: true))
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// Takes the acknowledgements, moves the durable position, sends what the window allows, and reports.
    private func round(_ client: MQTTClient, _ progress: inout Progress) async throws {
        let state = client.state
        if state.connected, state.connects != progress.connects {
            progress.connects = state.connects
            progress.untracked.insert(
                try client.publish(topic: settings.availabilityTopic, payload: Data("online".utf8), retain: true))
            logger.notice("connected to the MQTT broker", metadata: ["broker": "\(settings.url)"])
        }
        for ack in client.takeAcks() where progress.untracked.remove(ack.mid) == nil {
            if !ack.accepted {
                // Refused for good (not authorised for the topic, say): sending it again cannot help.
                progress.rejected += 1
                logger.error(
                    "the MQTT broker refused a message",
                    metadata: ["mid": "\(ack.mid)", "reason": "\(String(ack.reason, radix: 16))"])
            }
            progress.acked.insert(ack.mid)
        }
        var advanced = false
        while let first = progress.inFlight.first, progress.acked.remove(first.mid) != nil {
            progress.acknowledged = first.id
            progress.inFlight.removeFirst()
            advanced = true
        }
        if advanced { try await store.acknowledge(progress.acknowledged, by: Self.outbox) }
        if state.connected, progress.inFlight.count < settings.inFlight {
            for event in try await store.events(
                after: progress.sent, limit: settings.inFlight - progress.inFlight.count)
            {
                let mid = try client.publish(
                    topic: "\(settings.topicPrefix)/\(settings.site)/\(event.streamId)/\(event.type)",
                    payload: Data(envelope(event).utf8),
                    properties: [("id", "\(event.id)"), ("site", settings.site)])
                progress.inFlight.append((event.id, mid))
                published.increment()
                if event.type == Publication.gaugeType {
                    progress.untracked.insert(
                        try client.publish(
                            topic: "\(settings.topicPrefix)/\(settings.site)/gauge", payload: event.payload,
                            retain: true))
                }
            }
        }
        let last = try await store.logBounds().last
        backlog.record(Int(last - progress.acknowledged))
        let oldest = try await store.events(after: progress.acknowledged, limit: 1).first
        live.updateMQTT(
            LiveState.MQTTHealth(
                connected: state.connected, message: state.connected ? nil : state.reason,
                failedAttempts: state.failures, acknowledged: progress.acknowledged,
                backlog: Int(last - progress.acknowledged),
                oldestUnacknowledgedSeconds: oldest.map { max(0, Date().timeIntervalSince($0.time)) },
                rejected: progress.rejected))
    }

    /// The SSE envelope with the site: `{"id", "site", "streamId", "sequenceNumber", "payloadType", "payload",
    /// "timestamp"}`.
    func envelope(_ event: LoggedEvent) -> String {
        let data = ServerSentEvents.envelope(for: event)
        return "{\"site\":\(ServerSentEvents.quoted(settings.site)),\(data.dropFirst())"
    }
}
