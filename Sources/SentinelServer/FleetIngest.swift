import CoreMetrics
import Foundation
import Logging
import SentinelAggregates
import SentinelCore
import SentinelMQTT
import SentinelPipeline
import SentinelPrivacy
import SentinelStore
import ServiceLifecycle

/// The fleet's source: what the sites' boxes forward by MQTT, taken from the broker through a persistent session
/// (the broker queues for the fleet while it is away) and a shared subscription (replicas in one group split the
/// load). Each message is checked (topic, site, id, type and payload must agree), dropped if its site's log id was
/// stored already, and handed to the hub as the fleet's policy stores it, with its origin: the store writer records
/// the site's id in the same transaction as the event, so a message delivered again after a crash is still
/// recognised. A gap in a site's ids is counted and logged: those events never reached this fleet.
final class FleetIngest: Service, Sendable {
    let broker: FleetBroker
    let store: EventStore
    let hub: Hub
    let live: LiveState
    let policy: PrivacyPolicy
    let telemetry: Telemetry
    let logger: Logger

    init(
        broker: FleetBroker, store: EventStore, hub: Hub, live: LiveState, policy: PrivacyPolicy,
        telemetry: Telemetry, logger: Logger
    ) {
        self.broker = broker
        self.store = store
        self.hub = hub
        self.live = live
        self.policy = policy
        self.telemetry = telemetry
        self.logger = logger
    }

    /// What the ingest alone holds.
    struct Progress {
        var sites: [String: SiteHealth]
        var sources: Set<String>
        var zones: Set<ZoneID>
        var connects = 0
        var reported = ContinuousClock.now - .seconds(1)
    }

    func run() async throws {
        let client = try broker.connection.client(
            cleanStart: false, sessionExpiry: UInt32(broker.sessionExpiryHours * 3_600), section: FleetBroker.section)
        try client.subscribe(broker.eventsFilter)
        try client.subscribe(broker.availabilityFilter)
        try client.start(broker.connection.endpoint)
        let catalogue = live.catalogue
        var progress = Progress(
            sites: try await store.received().reduce(into: [:]) { sites, entry in
                sites[entry.key] = SiteHealth(
                    site: entry.key, lastId: entry.value, received: 0, duplicates: 0, missing: 0)
            }, sources: Set(catalogue.sources), zones: Set(catalogue.zones.map(\.id)))
        logger.info(
            "following the sites through the broker",
            metadata: ["broker": "\(broker.connection.url)", "subscription": "\(broker.eventsFilter)"])
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let messages = client.takeMessages()
            for message in messages { take(message, &progress) }
            report(client.state, &progress)
            if messages.isEmpty { try? await Task.sleep(for: .milliseconds(20)) }
        }
        // Disconnect first, so nothing more is acknowledged, then hand over what arrived: the writer, stopped after
        // this service, stores it. What the broker sent and this fleet did not acknowledge comes again next time.
        client.stop()
        for message in client.takeMessages() { take(message, &progress) }
        report(client.state, &progress, force: true)
    }

    private func take(_ message: MQTTClient.Message, _ progress: inout Progress) {
        let prefix = broker.connection.topicPrefix + "/"
        let levels = message.topic.hasPrefix(prefix) ? message.topic.dropFirst(prefix.count).split(separator: "/") : []
        switch levels.count {
        case 2 where levels[1] == "availability" && ConfigReader.isName(String(levels[0])):
            let site = String(levels[0])
            progress.sites[site, default: .init(site: site)].availability = String(
                decoding: message.payload.prefix(16), as: UTF8.self)
        case 3:
            do {
                try forward(
                    message, site: String(levels[0]), stream: String(levels[1]), type: String(levels[2]), &progress)
            } catch {
                telemetry.fleetRejected.increment()
                logger.warning(
                    "rejected a message from a site", metadata: ["topic": "\(message.topic)", "error": "\(error)"])
            }
        default:
            break
        }
    }

    /// The envelope's header, read before its payload: duplicates are dropped without decoding it.
    private struct Envelope: Decodable {
        var site: String
        var id: Int64
        var streamId: String
        var payloadType: String
    }

    private struct Payload<Content: Decodable>: Decodable {
        var payload: Content
    }

    private func forward(
        _ message: MQTTClient.Message, site: String, stream: String, type: String, _ progress: inout Progress
    ) throws {
        let decoder = JSONDecoder.sentinel()
        let envelope = try decoder.decode(Envelope.self, from: message.payload)
        guard envelope.site == site, envelope.streamId == stream, envelope.payloadType == type, envelope.id > 0 else {
            throw ServiceError("the envelope's site, streamId, payloadType or id does not match its topic")
        }
        guard ConfigReader.isName(site), ConfigReader.isName(stream), site.count <= 64 else {
            throw ServiceError("a site or source name may hold only letters, digits, _, - and . (64 at most)")
        }
        var health = progress.sites[site] ?? .init(site: site)
        defer { progress.sites[site] = health }
        guard envelope.id > health.lastId else {
            health.duplicates += 1
            telemetry.fleetDuplicates.increment()
            return
        }
        let origin = Publication.Origin(site: site, id: envelope.id)
        if type == EventEnvelope.gaugeType {
            var reading = try decoder.decode(Payload<GaugeReading>.self, from: message.payload).payload
            reading.sources = Dictionary(uniqueKeysWithValues: reading.sources.map { ("\(site)/\($0.key)", $0.value) })
            reading.zones = Dictionary(uniqueKeysWithValues: reading.zones.map { ("\(site)/\($0.key)", $0.value) })
            hub.forward(reading, origin: origin)
        } else if VisitorEvent.Kind(rawValue: type) != nil {
            var event = try decoder.decode(Payload<VisitorEvent>.self, from: message.payload).payload
            guard event.type.rawValue == type, event.visitor.sourceId == stream else {
                throw ServiceError("the event's type or source does not match its topic")
            }
            // Within the fleet a visitor is its site's: two boxes may share a pseudonym key (a cloned disk).
            event.visitor.sourceId = "\(site)/\(stream)"
            event.visitor.faceId = "\(site):\(event.visitor.faceId)"
            learn(event, &progress)
            hub.forward(policy.forwarded(event), origin: origin)
        } else {
            throw ServiceError("unknown event type \(type)")
        }
        if envelope.id > health.lastId + 1 {
            let missing = envelope.id - health.lastId - 1
            health.missing += missing
            telemetry.fleetMissing.increment(by: Int(missing))
            logger.warning(
                "events from a site never arrived (sent before this fleet subscribed, or lost on the way)",
                metadata: ["site": "\(site)", "count": "\(missing)", "before": "\(envelope.id)"])
        }
        health.lastId = envelope.id
        health.lastEventAt = Date()
        health.received += 1
        telemetry.fleetReceived.increment()
    }

    /// A new camera or zone is listed by the API from its first event on.
    private func learn(_ event: VisitorEvent, _ progress: inout Progress) {
        let source = event.visitor.sourceId
        let zone = (event.stay?.zone ?? event.visitor.zone).map { ZoneID(sourceId: source, name: $0) }
        let newSource = progress.sources.insert(source).inserted
        let newZone = zone.map { progress.zones.insert($0).inserted } ?? false
        guard newSource || newZone else { return }
        live.updateCatalogue { catalogue in
            if newSource { catalogue.sources.append(source) }
            if newZone, let zone { catalogue.zones.append(HTTPAPI.Zone(id: zone, emotion: true)) }
        }
    }

    /// Publishes the broker's state and the sites' for `/healthz`, a few times a second.
    private func report(_ state: MQTTClient.State, _ progress: inout Progress, force: Bool = false) {
        if state.connects != progress.connects, state.connected {
            progress.connects = state.connects
            logger.notice("connected to the MQTT broker", metadata: ["broker": "\(broker.connection.url)"])
        }
        guard force || ContinuousClock.now - progress.reported > .milliseconds(250) else { return }
        progress.reported = ContinuousClock.now
        live.updateFleet(
            FleetHealth(
                connected: state.connected, message: state.connected ? nil : state.reason,
                failedAttempts: state.failures, sites: progress.sites.values.sorted { $0.site < $1.site }))
    }
}

extension SiteHealth {
    init(site: String) { self.init(site: site, lastId: 0, received: 0, duplicates: 0, missing: 0) }
}
