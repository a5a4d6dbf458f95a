import Foundation
import GRDB
import Logging
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelLoopback
import SentinelMQTT
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelTestSupport
import ServiceLifecycle
import Testing

extension FleetTests {
    @Test(
        "two replicas in one shared-subscription group, one dies: once its session expires (broker.sessionExpiryHours) every message reaches the live one, and what the dead session held shows as missing"
    )
    func replicaDies() async throws {
        // The broker says every second how many sessions it keeps for clients that are away.
        let broker = try await MQTTBroker(config: ["sys_interval 1"])
        defer { broker.stop() }
        let watch = try MQTTClient(clientID: "sessions", cleanStart: true, sessionExpiry: 0)
        try watch.subscribe("$SYS/broker/clients/disconnected")
        try watch.start(MQTTEndpoint(url: broker.url)!)
        var away: Int?
        func sessionsAway() -> Int? {
            for message in watch.takeMessages() { away = Int(String(decoding: message.payload, as: UTF8.self)) }
            return away
        }
        let folder = try Fixtures.temporaryFolder()
        // 0.001 hours: 3.6 s.
        let fleet = try await TestFleet(
            broker, folder: folder, sites: "{ allow: [lab] }", brokerExtra: ", sessionExpiryHours: 0.001")
        #expect(try await waitFor { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
        // The other replica: the same group, a session of its own that expires as the fleet's does.
        let replica = try MQTTClient(clientID: "replica-b", cleanStart: false, sessionExpiry: 4)
        try replica.subscribe("$share/test/sentinel/+/+/+")
        try replica.start(MQTTEndpoint(url: broker.url)!)
        #expect(try await waitFor { replica.state.connected })
        let lab = try await Self.site(broker, "lab")
        func publish(_ ids: ClosedRange<Int64>) throws {
            for id in ids {
                try lab.publish(
                    topic: "sentinel/lab/showroom/visitor.entered", payload: Self.goodEvent(site: "lab", id: id))
            }
        }
        // Both alive: the group splits the messages.
        try publish(1...6)
        var taken = 0
        #expect(
            try await waitFor {
                taken += replica.takeMessages().count
                return try await fleet.events().filter { $0.type != .gauge }.count + taken == 6
            })
        #expect(taken > 0 && taken < 6, "the replica took \(taken) of 6")
        // The replica dies: once the broker keeps its session, its share is queued for it until the session expires.
        replica.stop()
        #expect(try await waitFor { sessionsAway() == 1 })
        try publish(7...12)
        #expect(try await waitFor { sessionsAway() == 0 }, "the replica's session did not expire")
        try publish(13...18)
        #expect(try await waitFor { try await fleet.service.store.received()["lab"] == 18 })
        let payloads = try await fleet.events().map { String(decoding: $0.payload, as: UTF8.self) }
        let ids = Set((1...18).filter { id in payloads.contains { $0.contains(Self.pseudonym(Int64(id))) } })
        #expect(
            Set(13...18).isSubset(of: ids), "after the expiry every message reaches the live replica: \(ids.sorted())")
        let held = 6 - Set(7...12).intersection(ids).count
        var health: [String: Any] = [:]
        #expect(
            try await waitFor {
                health = try await Self.siteHealth(fleet, "lab")
                return health["lastId"] as? Int == 18
            })
        #expect(
            health["missing"] as? Int == taken + held, "taken \(taken), held \(held), ids \(ids.sorted()), \(health)")
        lab.stop()
        watch.stop()
        try await fleet.stop()
    }

    @Test(
        "two replicas share one PostgreSQL store through the group: one killed with -9 mid-run and started again, every event of every site is logged exactly once, and either answers for all"
    )
    func replicasOnPostgres() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let database = try await PostgresServer()
        defer { database.stop() }
        let folder = try Fixtures.temporaryFolder()
        func start(_ name: String) async throws -> RunningSentinel {
            let file = folder.appendingPathComponent("\(name).yml")
            try """
            version: 1
            broker: { url: "\(broker.url)", clientId: \(name), group: chain }
            sites: { learn: 10 }
            database: { url: "\(database.url)", tls: disable }
            """.write(to: file, atomically: true, encoding: .utf8)
            let logs = folder.appendingPathComponent(name + "-\(UUID().uuidString.prefix(4))")
            try FileManager.default.createDirectory(at: logs, withIntermediateDirectories: true)
            let fleet = try await RunningSentinel(
                arguments: ["fleet", file.path, "--port", "0"], folder: logs, database: database.url)
            _ = try await waitFor {
                let health = try await fleet.json("/healthz")
                return (health["fleet"] as? [String: Any])?["connected"] as? Bool == true
            }
            return fleet
        }
        var a = try await start("fleet-a")
        let b = try await start("fleet-b")
        let sites = ["paris-1", "lyon-2", "nice-3"]
        let perSite: Int64 = 200
        var clients: [MQTTClient] = []
        for site in sites { clients.append(try await Self.site(broker, site)) }
        // b's SSE clients see every event as it is logged, whichever replica stored it.
        // One connection, live from an empty log, no resuming: what a's commits are, b must follow as they happen.
        let stream = Task {
            var parser = EventStreamParser()
            var messages: [EventStreamParser.Message] = []
            try await LoopbackClient.get(port: b.port, path: "/events", timeout: .seconds(30)) { chunk in
                messages += parser.feed(chunk.readableBytesView)
                return messages.filter { $0.event == "visitor.entered" }.count < 600
            }
            return messages
        }
        // Each site sends its events at 100 a second; a dies a third of the way through, and comes back at the end.
        for id in 1...perSite {
            for (site, client) in zip(sites, clients) {
                try client.publish(
                    topic: "sentinel/\(site)/showroom/visitor.entered", payload: try Self.goodEvent(site: site, id: id))
            }
            if id == perSite / 3 { kill(a.process.processIdentifier, SIGKILL) }
            try await Task.sleep(for: .milliseconds(10))
        }
        a.process.waitUntilExit()
        a = try await start("fleet-a")
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        var server = DatabaseServer(url: database.url)
        server.tls = .disable
        let log = try await PostgresEventStore.open(server, logger: logger)
        async let _ = log.run()
        var visitors: [String] = []
        _ = try await waitFor {
            visitors = try await log.events(after: 0, limit: 10_000).filter { $0.type == .visitor(.entered) }.map {
                try JSONDecoder.sentinel().decode(VisitorEvent.self, from: $0.payload).visitor.faceId
            }
            return visitors.count >= sites.count * Int(perSite)
        }
        let expected = sites.flatMap { site in (1...perSite).map { "\(site):\(Self.pseudonym($0))" } }
        #expect(visitors.count == expected.count, "logged \(visitors.count) of \(expected.count)")
        let missing = Set(expected).subtracting(visitors)
        #expect(missing.isEmpty, "\(missing.count) never logged, such as \(missing.sorted().prefix(5))")
        #expect(try await log.received() == Dictionary(uniqueKeysWithValues: sites.map { ($0, perSite) }))
        let streamed = try await stream.value.filter { $0.event == "visitor.entered" }.compactMap {
            $0.id.flatMap { Int64($0) }
        }
        #expect(streamed.count == expected.count && Set(streamed).count == expected.count)
        #expect(streamed == streamed.sorted(), "in log order")
        // Either replica answers for every site from the shared store, and for no foreign name.
        for fleet in [a, b] {
            try await Self.refusesForeignHosts(port: fleet.port)
            var seen = 0
            var cursor: String?
            repeat {
                let page = try await fleet.json(
                    "/api/visitors?from=2000-01-01T00:00:00Z&limit=1000" + (cursor.map { "&cursor=\($0)" } ?? ""))
                seen += (page["visitors"] as? [Any])?.count ?? 0
                cursor = page["nextCursor"] as? String
            } while cursor != nil
            #expect(seen == expected.count)
        }
        for client in clients { client.stop() }
    }

    @Test(
        "a box behind its own Mosquitto, bridged to the central one as its site's user (README, Fleets): every event reaches the fleet once, also those sent while the central broker was down"
    )
    func bridgedSite() async throws {
        let acl = Fixtures.root.appendingPathComponent("docs/mosquitto/sentinel.acl").path
        let central = try await MQTTBroker(
            users: [("sentinel-fleet", "fleet-secret"), ("lab", "lab-secret")], acl: acl)
        defer { central.stop() }
        // The site's broker as the README's bridge.conf has it (without TLS on loopback), retrying every second.
        let site = try await MQTTBroker(config: [
            "connection head-office", "address 127.0.0.1:\(central.port)", "remote_username lab",
            "remote_password lab-secret", "remote_clientid lab-bridge", "cleansession false",
            "bridge_protocol_version mqttv50", "restart_timeout 1", "topic sentinel/# out 1",
        ])
        defer { site.stop() }
        let folder = try Fixtures.temporaryFolder()
        let fleet = try await TestFleet(
            central, folder: folder, sites: "{ allow: [lab] }", brokerExtra: try Self.fleetLogin(in: folder))
        #expect(try await waitFor { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
        let box = try await TestServer(extra: "outputs:\n  mqtt: { url: \"\(site.url)\", site: lab }")
        func caughtUp() async throws -> Bool {
            let last = try await box.service.store.logBounds().last
            for _ in 0..<1_500 where try await fleet.service.store.received()["lab"] != last {
                try await Task.sleep(for: .milliseconds(20))
            }
            return try await fleet.service.store.received()["lab"] == last
        }
        try box.publish(20, startingAt: 3_560)
        #expect(try await box.wait { try await box.service.store.logBounds().last >= 20 })
        #expect(try await caughtUp(), "through the bridge")
        // The central broker goes away; the box goes on; the site's broker keeps what it was sent.
        central.stop()
        try box.publish(10, startingAt: 3_580)
        #expect(try await box.wait { try await box.service.store.logBounds().last >= 30 })
        #expect(try await box.wait { try await box.brokerHoldsAll() }, "the site's broker took the 30")
        try await central.start()
        #expect(try await caughtUp(), "after the central broker came back")
        let sent = try await box.service.store.events(after: 0, limit: 1_000).filter { $0.type != .gauge }
        let stored = try await fleet.events().filter { $0.streamId == "lab/showroom" }
        #expect(stored.count == sent.count && sent.count == 30, "each once: \(stored.count) of \(sent.count)")
        var health: [String: Any] = [:]
        #expect(
            try await waitFor {
                health = try await Self.siteHealth(fleet, "lab")
                return health["lastId"] as? Int == Int(try await box.service.store.logBounds().last)
            })
        #expect(health["missing"] as? Int == 0, "\(health)")
        try await box.stop()
        try await fleet.stop()
    }

    @Test(
        "a fleet file's privacy takes lists for its events and store, and refuses one for MQTT: a fleet has no MQTT output"
    )
    func fleetPrivacyOutputs() throws {
        let text = """
            version: 1
            broker: { url: "mqtt://127.0.0.1:1883", clientId: fleet, group: test }
            sites: { learn: 10 }
            privacy:
              outputs:
                events: { deny: [visitor.zones] }
                mqtt: { deny: [stay] }
            """
        let error = #expect(throws: ConfigError.self) { try FleetDefinition.parse(text, file: "fleet.yml") }
        #expect(
            error?.problems.map(\.description) == [
                "fleet.yml:7:5: privacy.outputs.mqtt: unknown key \"mqtt\"; expected one of events, store"
            ])
        let allowed = try FleetDefinition.parse(
            text.replacingOccurrences(of: "\n    mqtt: { deny: [stay] }", with: ""), file: "fleet.yml")
        #expect(allowed.privacy.outputs[.events]?.contains(.zones) == false)
    }

    static func streamId(_ data: String) -> String? {
        (try? JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])?["streamId"] as? String
    }
}
