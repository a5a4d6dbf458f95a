import CoreMetrics
import Foundation
package import Logging
package import SentinelConfig
package import SentinelCore
package import SentinelPrivacy
package import SentinelRuntime
package import SentinelStore
import SentinelWire
public import ServiceLifecycle

/// Forwards the event log to an MQTT broker, the log being the outbox: every event, in id order, as its SSE envelope
/// with the site added, under `{prefix}/{site}/{stream}/{type}` at QoS 1, its log id and site also in MQTT 5 user
/// properties so a consumer drops duplicates. A durable position advances only on PUBACK; while the broker is down
/// or unreachable the box keeps recording and the client reconnects with backoff, then the backlog goes in order;
/// after a restart (even kill -9) forwarding resumes after the last acknowledged id. Duplicates happen only across a
/// crash, and carry the same id. Retained topics: the latest gauge reading (`{prefix}/{site}/gauge`), who is present
/// by zone (`{prefix}/{site}/occupancy`, k-suppressed as `/api/zones`), and `{prefix}/{site}/availability`: `online`,
/// or `offline` (the last will) when the box is gone. With `homeAssistant`, discovery messages announce them as
/// sensors.
public final class MQTTOutput: Service, Sendable {
    let settings: MQTTSettings
    let zones: [ZoneID]
    /// Its `mqtt` allowlist narrows what the log holds.
    let policy: PrivacyPolicy
    let store: EventStore
    let commits: Doorbell
    let live: LiveState
    let logger: Logger
    let published: CoreMetrics.Counter
    let backlog: CoreMetrics.Gauge
    /// The name of this output's position in the store's outbox table.
    static let outbox = "mqtt"

    package init(
        settings: MQTTSettings, zones: [ZoneID], policy: PrivacyPolicy, store: EventStore, commits: Doorbell,
        live: LiveState, telemetry: Telemetry, logger: Logger
    ) {
        self.settings = settings
        self.commits = commits
        self.zones = zones
        self.policy = policy
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
        /// Sent and waiting for PUBACK, in id order, with their topics.
        var inFlight: [(id: Int64, mid: Int32, topic: String)] = []
        var acked: Set<Int32> = []
        /// Messages besides the log (availability, discovery, the retained gauge), by message id: their PUBACKs are
        /// not the log's.
        var untracked: [Int32: String] = [:]
        var connects = 0
        /// Failed attempts already logged.
        var failures = 0
        /// Messages the broker refused, and the topics refused (the first 20).
        var rejected = 0
        var rejectedTopics: [String] = []
        var refusedTopics: Set<String> = []
        /// The occupancy and the gauge reading last published (retained), to retain only changes.
        var occupancy: Data?
        var gauge: GaugeReading?
        var sent: Int64 { inFlight.last?.id ?? acknowledged }
    }

    public func run() async throws {
        let client: MQTTClient
        do {
            client = try connect()
        } catch {
            // The rest of the box goes on; /healthz says why nothing is forwarded.
            logger.error("cannot start MQTT forwarding", metadata: ["error": "\(error)"])
            live.updateMQTT(
                MQTTHealth(
                    connected: false, message: "\(error)", failedAttempts: 0, acknowledged: 0, backlog: 0,
                    rejected: 0))
            throw error
        }
        var progress = Progress(acknowledged: try await store.acknowledged(by: Self.outbox))
        logger.info(
            "forwarding the event log by MQTT",
            metadata: ["broker": "\(settings.connection.url)", "after": "\(progress.acknowledged)"])
        var failure: String?
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            // A round that fails (the store locked, a message the library refuses) is logged once and tried again:
            // forwarding never stops the box.
            do {
                try await round(client, &progress)
                failure = nil
            } catch {
                let message = "\(error)"
                if message != failure { logger.error("MQTT forwarding failed", metadata: ["error": "\(message)"]) }
                failure = message
                try? await Task.sleep(for: .seconds(1))
            }
            // Woken by the writer's commit; else 50 ms on, for the broker's acknowledgements and state.
            await commits.wait(timeout: .milliseconds(50))
        }
        // Shutting down: the writer has stored the last events; send them while the broker acknowledges, briefly.
        let deadline = ContinuousClock.now + .seconds(2)
        while ContinuousClock.now < deadline, client.state.connected {
            guard (try? await round(client, &progress)) != nil else { break }
            if progress.inFlight.isEmpty, try await store.logBounds().last <= progress.acknowledged { break }
            try? await Task.sleep(for: .milliseconds(50))
        }
        if client.state.connected {
            try publish(client, settings.availabilityTopic, Data("offline".utf8), &progress)
            try? await Task.sleep(for: .milliseconds(200))
        }
    }

    /// A client set up from the settings, connecting.
    private func connect() throws -> MQTTClient {
        let client = try settings.connection.client(section: MQTTSettings.section)
        try client.will(topic: settings.availabilityTopic, payload: "offline", retain: true)
        try client.start(settings.connection.endpoint)
        return client
    }

    /// Takes the acknowledgements, moves the durable position, sends what the window allows, and reports.
    private func round(_ client: MQTTClient, _ progress: inout Progress) async throws {
        let state = client.state
        try announce(client, state, &progress)
        try await settle(client, &progress)
        if state.connected, progress.inFlight.count < settings.inFlight { try await send(client, &progress) }
        try await report(state, progress)
    }

    /// Says a failed attempt once; on each new connection publishes availability (and Home Assistant's discovery);
    /// while connected, the occupancy whenever it changed.
    private func announce(_ client: MQTTClient, _ state: MQTTClient.State, _ progress: inout Progress) throws {
        if state.failures > progress.failures {
            logger.warning(
                "cannot connect to the MQTT broker; trying again",
                metadata: [
                    "broker": "\(settings.connection.url)", "reason": "\(state.reason)", "attempt": "\(state.failures)",
                ])
        }
        progress.failures = state.failures
        if state.connected, state.connects != progress.connects {
            progress.connects = state.connects
            try publish(client, settings.availabilityTopic, Data("online".utf8), &progress)
            if settings.homeAssistant {
                for (topic, config) in try discovery() { try publish(client, topic, config, &progress) }
            }
            progress.occupancy = nil
            logger.notice("connected to the MQTT broker", metadata: ["broker": "\(settings.connection.url)"])
        }
        if state.connected {
            let snapshot = live.now.occupancy.snapshot(zones: zones)
            let occupancy = try JSONEncoder.sentinel().encode(
                OccupancyMessage(
                    visitors: snapshot.visitors,
                    zones: Dictionary(uniqueKeysWithValues: snapshot.zones.map { ($0.key.description, $0.value) })))
            if occupancy != progress.occupancy {
                try publish(client, settings.occupancyTopic, occupancy, &progress)
                progress.occupancy = occupancy
            }
        }
    }

    /// Publishes a retained message besides the log.
    private func publish(_ client: MQTTClient, _ topic: String, _ payload: Data, _ progress: inout Progress) throws {
        progress.untracked[try client.publish(topic: topic, payload: payload, retain: true)] = topic
    }

    /// Takes the broker's acknowledgements: the log's acknowledged id moves on over every message acknowledged in
    /// order, and is stored. A message the broker refused (MQTT 5 reason 0x80 or above: 0x87, not authorised for its
    /// topic, say) is counted and logged with its topic, the log's and the others alike: sending it again cannot help.
    private func settle(_ client: MQTTClient, _ progress: inout Progress) async throws {
        for ack in client.takeAcks() {
            let untracked = progress.untracked.removeValue(forKey: ack.mid)
            if !ack.accepted {
                let topic = untracked ?? progress.inFlight.first { $0.mid == ack.mid }?.topic ?? "?"
                progress.rejected += 1
                // Logged once a topic (every event on it would be refused alike), shown for the first 20.
                if progress.refusedTopics.insert(topic).inserted {
                    if progress.rejectedTopics.count < 20 { progress.rejectedTopics.append(topic) }
                    logger.error(
                        "the MQTT broker refused a message; others on its topic are counted, not logged",
                        metadata: ["topic": "\(topic)", "reason": "0x\(String(ack.reason, radix: 16))"])
                }
            }
            if untracked == nil { progress.acked.insert(ack.mid) }
        }
        var advanced = false
        while let first = progress.inFlight.first, progress.acked.remove(first.mid) != nil {
            progress.acknowledged = first.id
            progress.inFlight.removeFirst()
            advanced = true
        }
        // An acknowledgement for no message in flight (one the library sent again) must not linger: message ids wrap
        // at 65,535 and it would later acknowledge another message before the broker did.
        progress.acked.formIntersection(progress.inFlight.map(\.mid))
        if advanced { try await store.acknowledge(progress.acknowledged, by: Self.outbox) }
    }

    /// Publishes the log's next events, up to the in-flight window; a gauge reading with new figures is retained too.
    private func send(_ client: MQTTClient, _ progress: inout Progress) async throws {
        for event in try await store.events(
            after: progress.sent, limit: settings.inFlight - progress.inFlight.count)
        {
            let topic = "\(settings.topicPrefix)/\(settings.site)/\(event.streamId)/\(event.type)"
            let mid = try client.publish(
                topic: topic, payload: Data(try envelope(event).utf8),
                properties: [("id", "\(event.id)"), ("site", settings.site)])
            progress.inFlight.append((event.id, mid, topic))
            published.increment()
            // The retained reading changes only when its figures do: a reading sent again at the gauge's steady
            // interval is in the log (and on its topic), not retained again for every subscriber to re-record.
            if event.type == .gauge,
                let reading = try? JSONDecoder.sentinel().decode(GaugeReading.self, from: event.payload),
                progress.gauge.map({ !reading.sameFigures(as: $0) }) ?? true
            {
                progress.gauge = reading
                try publish(client, settings.gaugeTopic, event.payload, &progress)
            }
        }
    }

    /// The backlog metric and `/healthz`'s MQTT part.
    private func report(_ state: MQTTClient.State, _ progress: Progress) async throws {
        let last = try await store.logBounds().last
        backlog.record(Int(last - progress.acknowledged))
        let oldest = try await store.events(after: progress.acknowledged, limit: 1).first
        live.updateMQTT(
            MQTTHealth(
                connected: state.connected, message: state.connected ? nil : state.reason,
                failedAttempts: state.failures, acknowledged: progress.acknowledged,
                backlog: Int(last - progress.acknowledged),
                oldestUnacknowledgedSeconds: oldest.map { max(0, Date().timeIntervalSince($0.time)).wholeMilliseconds },
                rejected: progress.rejected, rejectedTopics: progress.rejectedTopics))
    }

    /// Who is present, as the retained occupancy topic carries it: the total and each zone (`source/zone`), each
    /// `{"value": n, "visitors": n}` or `{"suppressed": true}` below the group size.
    struct OccupancyMessage: Encodable {
        var visitors: Aggregate<Int>
        var zones: [String: Aggregate<Int>]
    }

    /// Home Assistant MQTT discovery, as its current documentation has it: one retained config per sensor (the mood's
    /// score and label, visitors present, and each zone's count), all on this box's device, with the origin, the
    /// availability topic, `default_entity_id` (`object_id` stopped working in Home Assistant 2026.4) and, on every
    /// number, `state_class: measurement`, so that Home Assistant keeps its history and long-term statistics (without
    /// it the mood was kept as text). The label is an `enum` sensor with its five options. A suppressed figure has no
    /// value, which Home Assistant shows as unknown.
    func discovery() throws -> [(topic: String, config: Data)] {
        let nodeID = String("sentinel_\(settings.site)".map { $0.isLetter || $0.isNumber ? $0 : "_" })
        // The topic's node keeps the site's hyphens (Home Assistant allows them there, not in entity ids), so that the
        // broker's ACL can hold a site to its own discovery topics: `homeassistant/+/sentinel_%u/#`.
        let topicNode = String("sentinel_\(settings.site)".map { $0.isLetter || $0.isNumber || $0 == "-" ? $0 : "_" })
        func sensor(_ object: String, _ name: String, _ topic: String, _ template: String, extra: [String: Any])
            throws -> (String, Data)
        {
            var config: [String: Any] = [
                "name": name, "unique_id": "\(nodeID)_\(object)",
                "default_entity_id": "sensor.\(nodeID)_\(object)".lowercased(),
                "state_topic": topic, "value_template": template,
                "availability_topic": settings.availabilityTopic, "payload_available": "online",
                "payload_not_available": "offline",
                "device": [
                    "identifiers": [nodeID], "name": "Sentinel \(settings.site)", "manufacturer": "Sentinel",
                    "model": "visitor telemetry",
                ],
                "origin": ["name": "Sentinel"],
            ]
            config.merge(extra) { $1 }
            // Never an empty payload instead: a retained empty config makes Home Assistant delete the entity.
            let data = try JSONSerialization.data(
                withJSONObject: config, options: [.sortedKeys, .withoutEscapingSlashes])
            return ("\(settings.discoveryPrefix)/sensor/\(topicNode)/\(object)/config", data)
        }
        let count: [String: Any] = [
            "state_class": "measurement", "unit_of_measurement": "visitors", "suggested_display_precision": 0,
        ]
        var sensors = try [
            // The thermometer: a score from 0 (cold) to 100 (hot), no unit.
            sensor(
                "mood", "Mood", settings.gaugeTopic,
                "{{ value_json.overall.value.score if value_json.overall.value is defined else None }}",
                extra: ["state_class": "measurement", "suggested_display_precision": 0, "icon": "mdi:thermometer"]),
            sensor(
                "mood_label", "Mood label", settings.gaugeTopic,
                "{{ value_json.overall.value.label if value_json.overall.value is defined else None }}",
                extra: ["device_class": "enum", "options": GaugeReading.Level.bands.map(\.label)]),
            sensor(
                "visitors", "Visitors present", settings.occupancyTopic,
                "{{ value_json.visitors.value if value_json.visitors.value is defined else None }}", extra: count),
        ]
        for zone in zones {
            let key = zone.description
            let object = "zone_\(zone.sourceId)_\(zone.name)".map { $0.isLetter || $0.isNumber ? $0 : "_" }
            sensors.append(
                try sensor(
                    String(object), "Visitors in \(zone.name) (\(zone.sourceId))", settings.occupancyTopic,
                    "{{ value_json.zones['\(key)'].value if value_json.zones['\(key)'].value is defined else None }}",
                    extra: count))
        }
        return sensors
    }

    /// The SSE envelope with the site: `{"id", "site", "streamId", "sequenceNumber", "payloadType", "payload",
    /// "timestamp"}`, a visitor event's payload narrowed to the `mqtt` allowlist.
    func envelope(_ event: LoggedEvent) throws -> String {
        var event = event
        if event.type != .gauge { event.payload = try policy.narrowed(event.payload, for: .mqtt) }
        return ServerSentEvents.envelope(for: event, site: settings.site)
    }
}

extension MQTTSettings {
    var topicPrefix: String { connection.topicPrefix }
    var availabilityTopic: String { "\(topicPrefix)/\(site)/availability" }
    var gaugeTopic: String { "\(topicPrefix)/\(site)/gauge" }
    var occupancyTopic: String { "\(topicPrefix)/\(site)/occupancy" }
}
