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

/// `sentinel fleet` in-process on a folder of its own (the same folder again is a restart).
final class TestFleet {
    let service: FleetService
    let port: Int
    private let task: Task<Void, any Error>

    init(
        _ broker: MQTTBroker, folder: URL, minGroupSize: Int = 4, sites: String = "{ allow: [a, b] }",
        clientId: String = "test-fleet", brokerExtra: String = "", extra: String = ""
    ) async throws {
        let text = """
            version: 1
            broker: { url: "\(broker.url)", clientId: \(clientId), group: test\(brokerExtra) }
            sites: \(sites)
            privacy: { minGroupSize: \(minGroupSize) }
            \(extra)
            """
        let definition = try FleetDefinition.parse(text, file: folder.appendingPathComponent("fleet.yml").path)
        var options = HostingOptions()
        options.port = 0
        var logger = Logger(label: "test-fleet")
        logger.logLevel = .warning
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let service = try await FleetService(definition: definition, options: options, logger: logger) {
            listening.yield($0)
        }
        self.service = service
        task = Task {
            defer { listening.finish() }
            try await service.run()
        }
        var iterator = ports.makeAsyncIterator()
        guard let port = await iterator.next() else { throw CommandError("the fleet ended before it listened") }
        self.port = port
    }

    func stop() async throws {
        await service.group.triggerGracefulShutdown()
        try await task.value
    }

    /// The fleet's log, oldest first.
    func events() async throws -> [LoggedEvent] { try await service.store.events(after: 0, limit: 100_000) }
}

@Suite("sentinel fleet: many boxes through a real broker into one store and API", .serialized, .timeLimit(.minutes(2)))
struct FleetTests {
    @Test(
        "two boxes, one fleet: every event of both sites stored once, its SSE carries both (site filter too), the gauge is fleet-wide and k-suppressed across sites; a fleet restart leaves no gap and no duplicate"
    )
    func twoBoxes() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let sites = [
            "a": try await TestServer(extra: "outputs:\n  mqtt: { url: \"\(broker.url)\", site: a }"),
            "b": try await TestServer(extra: "outputs:\n  mqtt: { url: \"\(broker.url)\", site: b }"),
        ]
        let folder = try Fixtures.temporaryFolder()
        var fleet = try await TestFleet(broker, folder: folder)
        /// Waits until each site has logged `count` events and the fleet holds each site's whole log, then checks it
        /// holds each event exactly once.
        func caughtUp(_ count: Int64) async throws {
            var lasts: [String: Int64] = [:]
            for (site, server) in sites {
                #expect(try await server.wait { try await server.service.store.logBounds().last >= count })
                lasts[site] = try await server.service.store.logBounds().last
            }
            let current = fleet
            let received = try await sites["a"]!.wait(seconds: 30) {
                try await current.service.store.received() == lasts
            }
            let has = try await current.service.store.received()
            #expect(received, "the fleet has \(has), the sites \(lasts)")
            let logged = try await fleet.events()
            for (site, last) in lasts {
                #expect(logged.filter { $0.streamId == "\(site)/showroom" }.count == Int(last), "site \(site)")
            }
        }
        // Times within the gauge's window, which the fleet reads on its own clock.
        for server in sites.values { try server.publish(30, startingAt: 3_560) }
        try await caughtUp(30)
        // Until all 60 visitor events are in: gauge readings are logged between them, so 60 ids may hold 59.
        let messages = try await TestServer.stream(port: fleet.port, "/events?lastEventId=0") {
            $0.filter { $0.event?.hasPrefix("visitor.") == true }.count >= 60
        }
        // The visitor events of both sites, and the fleet's own gauge readings beside them.
        let visitors = messages.filter { $0.event?.hasPrefix("visitor.") == true }
        #expect(Set(visitors.compactMap { Self.streamId($0.data) }) == ["a/showroom", "b/showroom"])
        #expect(visitors.count == 60)
        #expect(
            Set(messages.compactMap { Self.streamId($0.data) }).subtracting(["a/showroom", "b/showroom"]) == [
                "sentiment"
            ])
        let onlyB = try await TestServer.stream(
            port: fleet.port, "/events?site=b&type=visitor.entered,visitor.updated&lastEventId=0"
        ) {
            $0.ids.count >= 30
        }
        #expect(Set(onlyB.compactMap { Self.streamId($0.data) }) == ["b/showroom"])
        let scanner = LeakScanner(internalIDs: [])
        for message in messages {
            #expect(scanner.leaks(in: message.data).isEmpty, "\(message.data)")
        }
        for message in visitors {
            #expect(
                message.data.contains("\"faceId\":\"a:") || message.data.contains("\"faceId\":\"b:"), "\(message.data)")
        }
        // Three visitors a site: each site's figure is below k = 4, the fleet's six are not.
        var gauge: [String: Any] = [:]
        #expect(
            try await sites["a"]!.wait(seconds: 10) {
                let (_, body) = try await LoopbackClient.fetch(port: fleet.port, path: "/api/sentiment")
                gauge =
                    (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["current"] as? [String: Any]
                    ?? [:]
                return (gauge["overall"] as? [String: Any])?["visitors"] as? Int == 6
            }, "\(gauge)")
        let sources = try #require(gauge["sources"] as? [String: [String: Any]])
        #expect(
            sources["a/showroom"]?["suppressed"] as? Bool == true
                && sources["b/showroom"]?["suppressed"] as? Bool == true)
        try await Self.refusesForeignHosts(port: fleet.port)

        // The fleet stops; the sites go on; it comes back on the same store and session.
        try await fleet.stop()
        for server in sites.values { try server.publish(30, startingAt: 3_590) }
        // Back once the broker holds what the sites sent meanwhile (for the fleet's session), not after a pause.
        for server in sites.values { #expect(try await server.wait { try await server.brokerHoldsAll() }) }
        fleet = try await TestFleet(broker, folder: folder)
        try await caughtUp(60)
        // Each site's retained availability, and no gap in its ids.
        var sitesHealth: [[String: Any]] = []
        #expect(
            try await sites["a"]!.wait {
                let (_, body) = try await LoopbackClient.fetch(port: fleet.port, path: "/healthz")
                let health = try JSONSerialization.jsonObject(with: body) as? [String: Any]
                let fleetHealth = health?["fleet"] as? [String: Any]
                sitesHealth = fleetHealth?["sites"] as? [[String: Any]] ?? []
                return fleetHealth?["connected"] as? Bool == true && sitesHealth.count == 2
                    && sitesHealth.allSatisfy {
                        $0["availability"] as? String == "online" && $0["missing"] as? Int == 0
                    }
            }, "\(sitesHealth)")
        try await fleet.stop()
        for server in sites.values { try await server.stop() }
    }

    /// A page whose name was made to resolve to the fleet (DNS rebinding) gets nothing: a foreign `Host`, or a foreign
    /// authority in an absolute-form request line, is refused whatever else the request says.
    static func refusesForeignHosts(port: Int) async throws {
        for request in [
            "GET /api/visitors HTTP/1.1\r\nHost: rebind.example:\(port)\r\nSec-Fetch-Site: same-origin\r\n\r\n",
            "GET http://rebind.example:\(port)/api/reports?format=csv HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\n\r\n",
        ] {
            let (status, text) = try await RawConnection.exchange(port: port, request)
            #expect(status == 421 && text.contains("does not answer for"), "\(request): \(text)")
        }
        let (status, _) = try await RawConnection.exchange(
            port: port, "GET /healthz HTTP/1.1\r\nHost: localhost:\(port)\r\n\r\n")
        #expect(status == 200)
    }

    /// `Tests/Corpus/mqtt`: each envelope with its topic and the outcome it must have, in the order they are sent.
    static func mqttCorpus() throws -> [(file: String, topic: String, outcome: String)] {
        let folder = Fixtures.root.appendingPathComponent("Tests/Corpus/mqtt")
        let lines = try String(contentsOf: folder.appendingPathComponent("expected.tsv"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
        let cases = lines.map { line in
            let fields = line.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return (file: fields[0], topic: fields[1], outcome: fields[2])
        }
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".json") }
        #expect(Set(files) == Set(cases.map(\.file)), "every file has a line in expected.tsv and every line a file")
        return cases
    }

    @Test(
        "ids of messages refused for what they say are not counted missing (ids 2-6 refused, 7 on another source's topic, then 8: six refused, none missing); a 1 MB message never reaches the fleet, which tells the broker the largest it takes"
    )
    func refusedAreNotMissing() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let fleet = try await TestFleet(
            broker, folder: try Fixtures.temporaryFolder(), minGroupSize: 1, sites: "{ allow: [lab] }")
        let site = try MQTTClient(clientID: "refused-site", cleanStart: true, sessionExpiry: 0)
        try site.start(MQTTEndpoint(url: broker.url)!)
        #expect(try await waitFor { site.state.connected })
        let now = Date()
        func publish(_ file: String, _ type: String, id: Int) throws {
            let text = try String(
                contentsOf: Fixtures.root.appendingPathComponent("Tests/Corpus/mqtt/\(file)"), encoding: .utf8
            )
            .replacingOccurrences(of: "@ID@", with: "\(id)").replacingOccurrences(
                of: "@TIME@", with: ISO8601.string(from: now)
            )
            .replacingOccurrences(of: "@FIRST@", with: ISO8601.string(from: now.addingTimeInterval(-10)))
            try site.publish(topic: "sentinel/lab/showroom/\(type)", payload: Data(text.utf8))
        }
        try publish("good-entered.json", "visitor.entered", id: 1)
        // The site is known from its first stored event on: its refusals are counted as its own from then.
        #expect(try await waitFor { try await fleet.service.store.received()["lab"] == 1 })
        for id in 2...6 { try publish("valence-1e308.json", "visitor.updated", id: id) }
        // The site's own id on another source's topic: refused as topic, and not missing either.
        try publish("stream-mismatch.json", "visitor.updated", id: 7)
        try publish("good-updated-after.json", "visitor.updated", id: 8)
        // A message of 1 MB (id 9) is dropped by the broker for the fleet, which told it the largest packet it takes:
        // it never reaches the fleet (not even refused there), and its id is missing when 10 comes.
        let huge = try String(
            contentsOf: Fixtures.root.appendingPathComponent("Tests/Corpus/mqtt/good-updated-after.json"),
            encoding: .utf8
        ).replacingOccurrences(of: "@ID@", with: "9").replacingOccurrences(
            of: "\"faceId\": \"abcdefghijklmnop\"", with: "\"faceId\": \"\(String(repeating: "x", count: 1 << 20))\"")
        try site.publish(topic: "sentinel/lab/showroom/visitor.updated", payload: Data(huge.utf8))
        try publish("good-updated-after.json", "visitor.updated", id: 10)
        var lab: [String: Any] = [:]
        #expect(
            try await waitFor {
                let (_, body) = try await LoopbackClient.fetch(port: fleet.port, path: "/healthz")
                let health =
                    (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["fleet"] as? [String: Any]
                lab = (health?["sites"] as? [[String: Any]])?.first { $0["site"] as? String == "lab" } ?? [:]
                return lab["received"] as? Int == 3
            }, "\(lab)")
        #expect(lab["rejected"] as? [String: Int] == ["number": 5, "topic": 1], "\(lab)")
        #expect(lab["missing"] as? Int == 1, "\(lab)")
        try await fleet.stop()
    }

    @Test(
        "a site's hostile messages (the MQTT corpus) are refused and counted by site and reason; the fleet survives them, opens a store poisoned before events were checked, and a restart on its own store; the real site is still heard"
    )
    func hostileSites() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let folder = try Fixtures.temporaryFolder()
        let now = Date()
        // A store written before events were checked: votes and a stay that crashed the gauge and the reports.
        do {
            let store = try EventStore(path: folder.appendingPathComponent("fleet.sqlite").path, ownsVisits: false)
            let policy = PrivacyPolicy()
            let poisoned = (0..<3).map { i in
                VisitorEvent(
                    type: i == 2 ? .zoneExited : .updated, time: now,
                    visitor: VisitorRecord(
                        faceId: "old:abcdefghijklmno\(i)", sourceId: "old/showroom", zone: "display", state: .active,
                        dwellSeconds: 10, firstSeen: now.addingTimeInterval(-10), lastSeen: now,
                        emotion: .known(.happy), emotionConfidence: 1e308, valence: 1e308),
                    stay: i == 2
                        ? .init(
                            zone: "display", enteredAt: now.addingTimeInterval(-5), exitedAt: now, dwellSeconds: 1e308)
                        : nil)
            }
            _ = try await store.append(
                poisoned.enumerated().map { i, event in
                    let masked = policy.forwarded(event)
                    return .visitor(
                        stored: masked.stored, published: masked.published,
                        origin: .init(site: "old", id: Int64(i + 1)))
                })
        }
        var fleet = try await TestFleet(
            broker, folder: folder, minGroupSize: 1, sites: "{ allow: [lab], cameras: 2, zones: 4 }")
        func health() async throws -> [String: Any] {
            let (_, body) = try await LoopbackClient.fetch(port: fleet.port, path: "/healthz")
            return (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["fleet"] as? [String: Any] ?? [:]
        }
        let site = try MQTTClient(clientID: "hostile-site", cleanStart: true, sessionExpiry: 0)
        try site.start(MQTTEndpoint(url: broker.url)!)
        #expect(try await waitFor { site.state.connected })
        let cases = try Self.mqttCorpus()
        let folderURL = Fixtures.root.appendingPathComponent("Tests/Corpus/mqtt")
        for (index, entry) in cases.enumerated() {
            let text = try String(contentsOf: folderURL.appendingPathComponent(entry.file), encoding: .utf8)
                .replacingOccurrences(of: "@ID@", with: "\(index + 1)")
                .replacingOccurrences(of: "@TIME@", with: ISO8601.string(from: now))
                .replacingOccurrences(of: "@FIRST@", with: ISO8601.string(from: now.addingTimeInterval(-10)))
                .replacingOccurrences(of: "@PAD@", with: String(repeating: "x", count: 100_000))
            try site.publish(topic: "sentinel/" + entry.topic, payload: Data(text.utf8))
            // One at a time, so the outcomes are the corpus's order's.
            if index == 0 { #expect(try await waitFor { try await fleet.service.store.received()["lab"] == 1 }) }
        }
        let stored = cases.filter { $0.topic.hasPrefix("lab/") && $0.outcome == "stored" }.count
        let expected = Dictionary(
            cases.filter { $0.topic.hasPrefix("lab/") && !["stored", "duplicate"].contains($0.outcome) }
                .map { ($0.outcome, 1) }, uniquingKeysWith: +)
        var lab: [String: Any] = [:]
        #expect(
            try await waitFor {
                lab = (try await health()["sites"] as? [[String: Any]])?.first { $0["site"] as? String == "lab" } ?? [:]
                return lab["received"] as? Int == stored
                    && (lab["rejected"] as? [String: Int]).map { $0.values.reduce(0, +) }
                        == expected.values.reduce(0, +)
            }, "\(lab)")
        #expect(lab["rejected"] as? [String: Int] == expected)
        #expect(lab["duplicates"] as? Int == cases.filter { $0.outcome == "duplicate" }.count)
        // Sites not allowed: refused fleet-wide, and their availability makes no site, however many there are.
        for index in 0..<3_000 {
            try site.publish(topic: "sentinel/ghost-\(index)/availability", payload: Data("online".utf8), retain: true)
        }
        // A barrier, not a pause: one refused message more after the ghosts, from the same client, so once it is
        // counted the fleet has taken every ghost before it.
        let barrier = try #require(cases.first { !$0.topic.hasPrefix("lab/") && $0.outcome != "ignored" })
        try site.publish(
            topic: "sentinel/" + barrier.topic,
            payload: try Data(contentsOf: folderURL.appendingPathComponent(barrier.file)))
        var unknown = Dictionary(
            cases.filter { !$0.topic.hasPrefix("lab/") && $0.outcome != "ignored" }.map { ($0.outcome, 1) },
            uniquingKeysWith: +)
        unknown[barrier.outcome, default: 0] += 1
        var fleetHealth: [String: Any] = [:]
        #expect(
            try await waitFor {
                fleetHealth = try await health()
                return fleetHealth["rejected"] as? [String: Int] == unknown
            }, "\(fleetHealth)")
        let (_, healthBody) = try await LoopbackClient.fetch(port: fleet.port, path: "/healthz")
        fleetHealth = try await health()
        #expect(
            (fleetHealth["sites"] as? [[String: Any]])?.compactMap { $0["site"] as? String }.sorted() == [
                "lab", "old",
            ],
            "the allowed site, and the one the store holds")
        #expect(healthBody.count < 4_096, "\(healthBody.count) bytes")
        let logged = try await fleet.events().filter { $0.streamId.hasPrefix("lab/") }
        #expect(logged.count == stored)
        let (_, metrics) = try await LoopbackClient.fetch(port: fleet.port, path: "/metrics")
        #expect(
            String(decoding: metrics, as: UTF8.self).contains(
                #"sentinel_fleet_rejected_total{site="lab",reason="number"} \#(expected["number"] ?? 0)"#))
        for path in ["/api/sentiment", "/api/reports?bucket=day", "/api/visitors", "/api/zones"] {
            let (head, body) = try await LoopbackClient.fetch(port: fleet.port, path: path)
            #expect(head.status == 200, "\(path): \(String(decoding: body, as: UTF8.self))")
            for hostile in ["Jane", "<img", "INJECTED", "HYPERLINK", "<script>"] {
                #expect(!String(decoding: body, as: UTF8.self).contains(hostile), "\(path)")
            }
        }
        // A restart on the store it wrote, and on the poisoned records before them.
        try await fleet.stop()
        fleet = try await TestFleet(
            broker, folder: folder, minGroupSize: 1, sites: "{ allow: [lab], cameras: 2, zones: 4 }")
        for path in ["/api/sentiment", "/api/reports?bucket=day"] {
            let (head, _) = try await LoopbackClient.fetch(port: fleet.port, path: path)
            #expect(head.status == 200, "\(path) after the restart")
        }
        site.stop()
        try await fleet.stop()
    }

    /// A well-formed `visitor.entered` of `site` with log id `id` (the MQTT corpus's good event), its visitor's
    /// pseudonym `pseudonym(id)`.
    static func goodEvent(site: String, id: Int64, at now: Date = Date()) throws -> Data {
        let text = try String(
            contentsOf: Fixtures.root.appendingPathComponent("Tests/Corpus/mqtt/good-entered.json"), encoding: .utf8)
        return Data(
            text.replacingOccurrences(of: "\"site\": \"lab\"", with: "\"site\": \"\(site)\"")
                .replacingOccurrences(of: "abcdefghijklmnop", with: pseudonym(id))
                .replacingOccurrences(of: "@ID@", with: "\(id)")
                .replacingOccurrences(of: "@TIME@", with: ISO8601.string(from: now))
                .replacingOccurrences(of: "@FIRST@", with: ISO8601.string(from: now.addingTimeInterval(-10))).utf8)
    }

    static func pseudonym(_ id: Int64) -> String {
        let letters = Array("abcdefghijklmnopqrstuvwxyz")
        return "abcdefghijklmn" + String(letters[Int(id / 26 % 26)]) + String(letters[Int(id % 26)])
    }

    /// The fleet's login at a broker with users (`sentinel-fleet`, as docs/mosquitto/sentinel.acl names it): a
    /// credentials file in `folder`, as the `broker:` keys that point at it.
    static func fleetLogin(in folder: URL) throws -> String {
        let credentials = folder.appendingPathComponent("fleet-credentials")
        try "sentinel-fleet:fleet-secret\n".write(to: credentials, atomically: true, encoding: .utf8)
        chmod(credentials.path, 0o600)
        return ", credentialsFile: \(credentials.path)"
    }

    /// A site's box as the broker sees it: a client, logged in as `name` if a password is given.
    static func site(_ broker: MQTTBroker, _ name: String, password: String? = nil) async throws -> MQTTClient {
        let client = try MQTTClient(clientID: "site-\(name)", cleanStart: true, sessionExpiry: 0)
        if let password { try client.credentials(username: name, password: password) }
        try client.start(MQTTEndpoint(url: broker.url)!)
        _ = try await waitFor { client.state.connected }
        return client
    }

    static func fleetHealth(_ fleet: TestFleet) async throws -> [String: Any] {
        let (_, body) = try await LoopbackClient.fetch(port: fleet.port, path: "/healthz")
        return (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["fleet"] as? [String: Any] ?? [:]
    }

    static func siteHealth(_ fleet: TestFleet, _ site: String) async throws -> [String: Any] {
        (try await fleetHealth(fleet)["sites"] as? [[String: Any]])?.first { $0["site"] as? String == site } ?? [:]
    }
}
