import CoreMetrics
import Foundation
import Logging
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelMQTT
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelWire
import ServiceLifecycle

/// The fleet's source: what the sites' boxes forward by MQTT, taken from the broker through a persistent session
/// (the broker queues for the fleet while it is away) and a shared subscription (replicas in one group split the
/// load). Each message is checked where it enters (topic, site, id, type and payload must agree; the payload passes
/// `EventCheck`; the id lies in the window the site's last one makes plausible), dropped if its site's log id was
/// stored already, and handed to the hub as the fleet's policy stores it, with its origin: the store writer records
/// the site's id in the same transaction as the event, so a message delivered again after a crash is still
/// recognised. A refused message is counted per site and reason and logged without its content. A gap in a site's
/// ids is counted and logged: those events never reached this fleet.
final class FleetIngest: Service, Sendable {
    let broker: FleetBroker
    let sites: FleetSites
    let store: any EventLog
    let hub: Hub
    let live: LiveState
    let policy: PrivacyPolicy
    let telemetry: Telemetry
    let logger: Logger
    let check: EventCheck
    /// Rung by the store writer as it commits.
    let commits: Doorbell
    /// What the hub holds (`store.bufferEvents`).
    let bufferEvents: Int

    init(
        broker: FleetBroker, sites: FleetSites, store: any EventLog, hub: Hub, bufferEvents: Int, commits: Doorbell,
        live: LiveState, policy: PrivacyPolicy, telemetry: Telemetry, logger: Logger
    ) {
        self.commits = commits
        self.bufferEvents = bufferEvents
        self.broker = broker
        self.sites = sites
        self.store = store
        self.hub = hub
        self.live = live
        self.policy = policy
        self.telemetry = telemetry
        self.logger = logger
        check = EventCheck(timeResolution: policy.timestampResolution)
    }

    /// What the ingest alone holds.
    struct Progress {
        var sites: [String: SiteHealth]
        /// The sites taken that `sites.allow` does not name (at most `sites.learn`), and the availability of sites
        /// that may yet be learned (as many), kept until their first event.
        var learned: Set<String>
        var heard: [String: String] = [:]
        var sources: Set<String>
        var zones: Set<ZoneID>
        /// How many cameras and zones each site has named (`sites.cameras`, `sites.zones` bound them).
        var camerasOf: [String: Int] = [:]
        var zonesOf: [String: Int] = [:]
        /// When each site's last message was taken, on this process's clock (the id window grows from it).
        var lastTaken: [String: ContinuousClock.Instant] = [:]
        let started = ContinuousClock.now
        /// Refusals that no site known here can be held to.
        var rejected: [InvalidEvent.Reason: Int] = [:]
        var connects = 0
        var reported = ContinuousClock.now - .seconds(1)
    }

    /// The ids a site's next message may carry: from its last id on, as many more as a box could have logged since
    /// this fleet last took one of its messages (or started) at `maxSiteRate` a second, and `idSlack` more. A spoofed
    /// id far ahead would otherwise make every real event of the site a duplicate; a real jump (events the box deleted
    /// before sending them) is taken once the window has grown past it. A site never heard of is bounded only by
    /// JSON's exact integers.
    static let maxSiteRate = 1_000.0
    static let idSlack: Int64 = 10_000
    static let maxId: Int64 = 1 << 53
    /// The largest message taken: a visitor event with every zone of a large showroom is a few KiB.
    static let maxPayload = 64 * 1_024

    private func idWindow(_ site: String, last: Int64, _ progress: Progress) -> ClosedRange<Int64> {
        guard last > 0 else { return 1...Self.maxId }
        let since = ContinuousClock.now - (progress.lastTaken[site] ?? progress.started)
        let seconds = Double(since.components.seconds) + Double(since.components.attoseconds) * 1e-18
        let allowance = Int64(min(Double(Self.maxId), seconds * Self.maxSiteRate)) + Self.idSlack
        return (last + 1)...min(Self.maxId, last + allowance)
    }

    func run() async throws {
        let client = try broker.connection.client(
            cleanStart: false, sessionExpiry: UInt32(broker.sessionExpiryHours * 3_600), section: FleetBroker.section)
        // A message is acknowledged to the broker once it is stored (or refused, or found a duplicate), never before:
        // what this process had taken and not stored when it died comes again from the session. The broker sends at
        // most this many unacknowledged, fewer than the hub holds, so the hub never drops a forwarded event.
        try client.holdAcknowledgements(receiveMaximum: min(1_000, max(1, bufferEvents / 2)))
        try client.subscribe(broker.eventsFilter)
        try client.subscribe(broker.availabilityFilter)
        try client.start(broker.connection.endpoint)
        let catalogue = live.catalogue
        let stored = try await store.received()
        var known = Dictionary(uniqueKeysWithValues: sites.allow.map { ($0, SiteHealth(site: $0)) })
        for (site, last) in stored { known[site, default: .init(site: site)].lastId = last }
        var progress = Progress(
            sites: known, learned: Set(stored.keys.filter { !sites.allow.contains($0) }.sorted().prefix(sites.learn)),
            sources: Set(catalogue.sources), zones: Set(catalogue.zones.map(\.id)))
        for source in progress.sources { progress.camerasOf[Self.site(of: source), default: 0] += 1 }
        for zone in progress.zones { progress.zonesOf[Self.site(of: zone.sourceId), default: 0] += 1 }
        logger.info(
            "following the sites through the broker",
            metadata: ["broker": "\(broker.connection.url)", "subscription": "\(broker.eventsFilter)"])
        // The messages taken and not acknowledged yet, in order: each with its place among the hub's forwarded
        // entries, if it was forwarded (a refused message or a duplicate has nothing to wait for).
        var unacknowledged: [(sequence: Int, forwarded: Int?)] = []
        while !Task.isShuttingDownGracefully && !Task.isCancelled {
            let messages = client.takeMessages()
            for message in messages { unacknowledged.append((message.sequence, take(message, &progress))) }
            let settled = hub.settled
            let safe = unacknowledged.prefix { ($0.forwarded ?? 0) <= settled }
            if let last = safe.last {
                client.release(through: last.sequence)
                unacknowledged.removeFirst(safe.count)
            }
            report(client.state, &progress)
            // The writer rings as it commits: what it stored is acknowledged at once.
            if messages.isEmpty { await commits.wait(timeout: .milliseconds(5)) }
        }
        // Disconnect first, so nothing more is acknowledged, then hand over what arrived: the writer, stopped after
        // this service, stores it. What the broker sent and this fleet did not acknowledge comes again next time,
        // and is dropped then as logged already.
        client.stop()
        for message in client.takeMessages() { take(message, &progress) }
        report(client.state, &progress, force: true)
    }

    /// Checks a message and hands it to the hub; returns its place among the hub's forwarded entries if it was
    /// forwarded.
    @discardableResult
    private func take(_ message: MQTTClient.Message, _ progress: inout Progress) -> Int? {
        let prefix = broker.connection.topicPrefix + "/"
        let levels = message.topic.hasPrefix(prefix) ? message.topic.dropFirst(prefix.count).split(separator: "/") : []
        switch levels.count {
        case 2 where levels[1] == "availability" && Name.isValid(levels[0]):
            // Said of a site taken, or kept until its first event if it may be learned; it never makes a site.
            let site = String(levels[0])
            let availability = String(decoding: message.payload.prefix(16), as: UTF8.self)
            if takes(site, progress) {
                progress.sites[site]?.availability = availability
            } else if progress.heard[site] != nil || progress.heard.count < learnable(progress) {
                progress.heard[site] = availability
            }
        case 3:
            let site = String(levels[0])
            do {
                return try forward(message, site: site, stream: String(levels[1]), type: String(levels[2]), &progress)
            } catch {
                reject(error, site: site, &progress)
            }
        default:
            break
        }
        return nil
    }

    /// Whether the fleet takes `site`'s messages: allowed, or learned already.
    private func takes(_ site: String, _ progress: Progress) -> Bool {
        sites.allow.contains(site) || progress.learned.contains(site)
    }

    /// How many more sites may be learned.
    private func learnable(_ progress: Progress) -> Int { max(0, sites.learn - progress.learned.count) }

    /// Counts a refusal under its site (if this fleet knows it) and reason, and logs it without the message's content:
    /// only the site's name when it is a valid one, the field and the reason.
    private func reject(_ error: InvalidEvent, site: String, _ progress: inout Progress) {
        let known = progress.sites[site] != nil
        if known {
            progress.sites[site]?.rejected[error.reason, default: 0] += 1
        } else {
            progress.rejected[error.reason, default: 0] += 1
        }
        telemetry.fleetRejected.increment()
        telemetry.fleetRejections(site: known ? site : "unknown", reason: error.reason).increment()
        logger.warning(
            "refused a message from a site",
            metadata: ["site": "\(known ? site : "unknown")", "reason": "\(error.reason)", "problem": "\(error)"])
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

    /// Returns the message's place among the hub's forwarded entries, or nil for a duplicate.
    private func forward(
        _ message: MQTTClient.Message, site: String, stream: String, type: String, _ progress: inout Progress
    ) throws(InvalidEvent) -> Int? {
        let decoder = JSONDecoder.sentinel()
        func decode<T: Decodable>(_ type: T.Type) throws(InvalidEvent) -> T {
            do { return try decoder.decode(type, from: message.payload) } catch {
                throw InvalidEvent(.format, "", "not a Sentinel envelope of its type")
            }
        }
        guard Name.isValid(site), Name.isValid(stream) else {
            throw InvalidEvent(.name, "topic", "a site or source name " + Name.rule)
        }
        guard takes(site, progress) || learnable(progress) > 0 else {
            throw InvalidEvent(.site, "topic", "not a site this fleet takes (sites.allow, sites.learn)")
        }
        guard message.payload.count <= Self.maxPayload else {
            throw InvalidEvent(.format, "", "larger than \(Self.maxPayload / 1_024) KiB, which no site's event is")
        }
        let envelope = try decode(Envelope.self)
        guard envelope.site == site else {
            throw InvalidEvent(.topic, "", "the envelope's site, streamId or payloadType does not match its topic")
        }
        guard envelope.id > 0 else { throw InvalidEvent(.id, "id", "not a log id (1 or more)") }
        let last = progress.sites[site]?.lastId ?? 0
        // A replica sharing the log sees only its share of a site's ids, in no set order: the log drops what another
        // stored already.
        guard envelope.id > last || store.isShared else {
            progress.sites[site]?.duplicates += 1
            telemetry.fleetDuplicates.increment()
            return nil
        }
        let window = idWindow(site, last: last, progress)
        guard (store.isShared ? 1...window.upperBound : window).contains(envelope.id) else {
            throw InvalidEvent(.id, "id", "beyond the ids the site's last one (\(last)) makes plausible")
        }
        let origin = LogEntry.Origin(site: site, id: envelope.id)
        let place: Int
        do throws(InvalidEvent) {
            // The site's own id, refused for what the message says: below, so that it is not counted missing.
            guard envelope.streamId == stream, envelope.payloadType == type else {
                throw InvalidEvent(.topic, "", "the envelope's site, streamId or payloadType does not match its topic")
            }
            switch LoggedEvent.Kind(rawValue: type) {
            case .gauge:
                var reading = try decode(Payload<GaugeReading>.self).payload
                try check.validate(reading)
                reading.sources = Dictionary(
                    uniqueKeysWithValues: reading.sources.map { (SiteSource.id(site: site, source: $0.key), $0.value) })
                reading.zones = Dictionary(
                    uniqueKeysWithValues: reading.zones.map { (SiteSource.id(site: site, source: $0.key), $0.value) })
                try learn(
                    sources: Set(reading.sources.keys).union(reading.zones.keys),
                    zones: Set(
                        reading.zones.flatMap { source, zones in zones.keys.map { ZoneID(sourceId: source, name: $0) } }
                    ),
                    site: site, &progress)
                place = hub.forward(reading, origin: origin)
            case .visitor(let kind):
                var event = try decode(Payload<VisitorEvent>.self).payload
                guard event.type == kind, event.visitor.sourceId == stream else {
                    throw InvalidEvent(.topic, "", "the event's type or source does not match its topic")
                }
                try check.validate(event)
                // Within the fleet a visitor is its site's: two boxes may share a pseudonym key (a cloned disk).
                event.visitor.sourceId = SiteSource.id(site: site, source: stream)
                event.visitor.faceId = "\(site):\(event.visitor.faceId)"
                let source = event.visitor.sourceId
                let zones =
                    [event.stay?.zone, event.visitor.zone].compactMap { $0 } + (event.visitor.zones ?? []).map(\.zone)
                try learn(
                    sources: [source], zones: Set(zones.map { ZoneID(sourceId: source, name: $0) }), site: site,
                    &progress)
                place = hub.forward(policy.forwarded(event), origin: origin)
            case nil:
                throw InvalidEvent(.format, "payloadType", "an event type Sentinel does not know")
            }
        } catch {
            // The id was the site's own and plausible: the message came and was refused for what it says, so its id
            // is not counted missing when the next one arrives (refused ids 2-6 were reported as 5 missing).
            if let last = progress.sites[site]?.lastId { progress.sites[site]?.lastId = max(last, envelope.id) }
            throw error
        }
        if !takes(site, progress) {
            progress.learned.insert(site)
            logger.notice("learned a site", metadata: ["site": "\(site)", "learned": "\(progress.learned.count)"])
        }
        var health = progress.sites[site] ?? .init(site: site, availability: progress.heard.removeValue(forKey: site))
        if envelope.id > health.lastId + 1, !store.isShared {
            let missing = envelope.id - health.lastId - 1
            health.missing += missing
            telemetry.fleetMissing.increment(by: Int(missing))
            logger.warning(
                "events from a site never arrived (sent before this fleet subscribed, or lost on the way)",
                metadata: ["site": "\(site)", "count": "\(missing)", "before": "\(envelope.id)"])
        }
        health.lastId = max(health.lastId, envelope.id)
        health.lastEventAt = Date()
        health.received += 1
        progress.sites[site] = health
        progress.lastTaken[site] = .now
        telemetry.fleetReceived.increment()
        return place
    }

    /// A new camera or zone is listed by the API from the first message that names it, within what one site may name:
    /// a message naming one camera or zone more (a visitor event where it is, its stay, the zones of its visit; a
    /// gauge reading its cameras and zones) is refused whole.
    private func learn(
        sources: Set<String>, zones: Set<ZoneID>, site: String, _ progress: inout Progress
    ) throws(InvalidEvent) {
        let newSources = sources.subtracting(progress.sources)
        let newZones = zones.subtracting(progress.zones)
        guard !newSources.isEmpty || !newZones.isEmpty else { return }
        guard (progress.camerasOf[site] ?? 0) + newSources.count <= sites.cameras else {
            throw InvalidEvent(
                .limit, "sourceId", "cameras beyond what a site may name (sites.cameras: \(sites.cameras))")
        }
        guard (progress.zonesOf[site] ?? 0) + newZones.count <= sites.zones else {
            throw InvalidEvent(.limit, "zone", "zones beyond what a site may name (sites.zones: \(sites.zones))")
        }
        progress.sources.formUnion(newSources)
        progress.camerasOf[site, default: 0] += newSources.count
        progress.zones.formUnion(newZones)
        progress.zonesOf[site, default: 0] += newZones.count
        live.updateCatalogue { catalogue in
            catalogue.sources += newSources.sorted()
            catalogue.zones += newZones.sorted().map { LiveState.Zone(id: $0, emotion: true) }
        }
    }

    /// The site of a fleet's `site/source` name (every source a fleet stores has one).
    static func site(of source: String) -> String { SiteSource.site(of: source) ?? source }

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
                failedAttempts: state.failures, sites: progress.sites.values.sorted { $0.site < $1.site },
                rejected: progress.rejected))
    }
}

extension SiteHealth {
    init(site: String, availability: String? = nil) {
        self.init(site: site, availability: availability, lastId: 0, received: 0, duplicates: 0, missing: 0)
    }
}
