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

/// A consumer at the broker: a persistent session (the broker queues for it while it is away), collecting every
/// message under `sentinel/#`.
final class Subscriber {
    let client: MQTTClient
    private(set) var messages: [MQTTClient.Message] = []

    init(
        _ broker: MQTTBroker, id: String = "test-consumer", topics: [String] = ["sentinel/#"],
        login: (user: String, password: String)? = nil
    ) throws {
        client = try MQTTClient(clientID: id, cleanStart: false, sessionExpiry: 600)
        if let login { try client.credentials(username: login.user, password: login.password) }
        for topic in topics { try client.subscribe(topic) }
        try client.start(MQTTEndpoint(url: broker.url)!)
    }

    /// The log events received (availability and retained gauge topics aside): (log id, site, topic), in arrival
    /// order, duplicates included.
    var events: [(id: Int64, site: String, topic: String)] {
        messages = messages + client.takeMessages()
        return messages.compactMap { message in
            guard message.topic.split(separator: "/").count == 4,
                let object = try? JSONSerialization.jsonObject(with: message.payload) as? [String: Any],
                let id = (object["id"] as? NSNumber)?.int64Value, let site = object["site"] as? String
            else { return nil }
            return (id, site, message.topic)
        }
    }

    var payloads: [String] {
        _ = events
        return messages.map { String(decoding: $0.payload, as: UTF8.self) }
    }
}

@Suite("MQTT output: the event log forwarded through a real broker", .serialized, .timeLimit(.minutes(2)))
struct MQTTOutputTests {
    func server(_ broker: MQTTBroker, _ extra: String = "") async throws -> TestServer {
        try await TestServer(extra: "outputs:\n  mqtt: { url: \"\(broker.url)\", site: lab\(extra) }")
    }

    /// Waits until the store holds `count` events and the subscriber has every one of them; returns what it received.
    func receiveAll(_ count: Int64, _ subscriber: Subscriber, of server: TestServer) async throws -> [(
        id: Int64, site: String, topic: String
    )] {
        #expect(try await server.wait { try await server.service.store.logBounds().last >= count })
        let last = try await server.service.store.logBounds().last
        _ = try await server.wait(seconds: 30) { Set(subscriber.events.map(\.id)) == Set(1...max(last, 1)) }
        return subscriber.events
    }

    @Test(
        "every stored event reaches a consumer once after de-duplication, in order, under its topic, with no PII; the availability topic says online"
    )
    func everyEventOnce() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let subscriber = try Subscriber(broker)
        let server = try await server(broker)
        try server.publish(120)
        let received = try await receiveAll(120, subscriber, of: server)
        let last = try await server.service.store.logBounds().last
        #expect(last >= 120)
        var seen = Set<Int64>()
        let unique = received.filter { seen.insert($0.id).inserted }
        #expect(unique.map(\.id) == Array(1...last), "in log order, nothing missing")
        #expect(received.allSatisfy { $0.site == "lab" })
        #expect(received.allSatisfy { $0.topic.hasPrefix("sentinel/lab/showroom/visitor.") })
        let scanner = LeakScanner(internalIDs: [])
        for payload in subscriber.payloads { #expect(scanner.leaks(in: payload).isEmpty, "\(payload)") }
        #expect(subscriber.messages.contains { $0.topic == "sentinel/lab/availability" })
        let health = String(decoding: try await server.get("/healthz").1, as: UTF8.self)
        #expect(
            try await server.wait {
                String(decoding: try await server.get("/healthz").1, as: UTF8.self).contains(
                    "\"acknowledged\":\(last)")
            }, "\(health)")
        try await server.stop()
    }

    @Test(
        "MQTT's own allowlist: the fields it denies never reach the broker, while the event log and the SSE stream keep them"
    )
    func ownAllowlist() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let subscriber = try Subscriber(broker)
        let denied = ["emotion", "emotionConfidence", "valence", "zones"]
        let server = try await TestServer(
            extra: """
                outputs:
                  mqtt: { url: "\(broker.url)", site: lab }
                privacy:
                  outputs:
                    mqtt: { deny: [\(denied.map { "visitor.\($0)" }.joined(separator: ", "))] }
                """)
        try server.publish(12)
        _ = try await receiveAll(12, subscriber, of: server)
        var visitors = 0
        for message in subscriber.messages where message.topic.contains("/visitor.") {
            let envelope = try #require(JSONSerialization.jsonObject(with: message.payload) as? [String: Any])
            let visitor = try #require((envelope["payload"] as? [String: Any])?["visitor"] as? [String: Any])
            for field in denied { #expect(visitor[field] == nil, "\(field) in \(envelope)") }
            #expect(visitor["faceId"] != nil && visitor["dwellSeconds"] != nil)
            visitors += 1
        }
        #expect(visitors >= 12)
        let logged = try await server.service.store.events(after: 0, limit: 100).filter { $0.type != .gauge }
        #expect(logged.count >= 12)
        for event in logged {
            let text = String(decoding: event.payload, as: UTF8.self)
            #expect(text.contains("\"emotion\":\"happy\"") && text.contains("\"valence\""), "\(text)")
        }
        let scanner = LeakScanner(internalIDs: [])
        for payload in subscriber.payloads { #expect(scanner.leaks(in: payload).isEmpty, "\(payload)") }
        try await server.stop()
    }

    @Test(
        "the broker stopped mid-stream until the box has failed to reconnect four times: the box keeps recording, /healthz shows the backlog and the failures, and after the restart it arrives, nothing lost"
    )
    func brokerOutage() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let subscriber = try Subscriber(broker)
        let server = try await server(broker)
        try server.publish(40)
        _ = try await receiveAll(40, subscriber, of: server)
        broker.stop()
        try server.publish(40, startingAt: 40)
        #expect(try await server.wait { try await server.service.store.logBounds().last >= 80 })
        let stored = try await server.service.store.logBounds().last
        var health: [String: Any] = [:]
        // Down until the client has tried four times (its backoff doubles from 0.25 s), not for a length of time.
        #expect(
            try await server.wait(seconds: 60) {
                let body = try await server.get("/healthz").1
                health =
                    (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["mqtt"] as? [String: Any] ?? [:]
                return health["connected"] as? Bool == false && (health["backlog"] as? Int ?? 0) > 0
                    && (health["failedAttempts"] as? Int ?? 0) >= 4
            }, "\(health)")
        try await broker.start()
        let received = try await receiveAll(stored, subscriber, of: server)
        #expect(Set(received.map(\.id)) == Set(1...stored))
        var seen = Set<Int64>()
        #expect(received.filter { seen.insert($0.id).inserted }.map(\.id) == Array(1...stored))
        try await server.stop()
    }

    @Test(
        "sentinel run killed -9 and restarted: forwarding resumes after the last acknowledged id; nothing lost, and only what was unacknowledged at the crash comes twice"
    )
    func killNine() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let subscriber = try Subscriber(broker)
        let pipeline =
            try await RunningSentinel.showroomOnClip() + "\noutputs:\n  mqtt: { url: \"\(broker.url)\", site: lab }\n"
        let first = try await RunningSentinel(pipeline: pipeline, arguments: ["--pace", "realtime", "--loop"])
        #expect(try await waitFor(seconds: 60) { subscriber.events.count >= 20 })
        kill(first.process.processIdentifier, SIGKILL)
        #expect(try await first.exitStatus(within: 10) != nil)
        // Read as the crash left it (an EventStore would close the open visits itself).
        let queue = try DatabaseQueue(path: first.database)
        func last() throws -> Int64 {
            try queue.read { try Int64.fetchOne($0, sql: "SELECT seq FROM sqlite_sequence WHERE name = 'events'") ?? 0 }
        }
        let acknowledged = try await queue.read {
            try Int64.fetchOne($0, sql: "SELECT acknowledged FROM outbox WHERE output = 'mqtt'") ?? 0
        }
        let logged = try last()
        #expect(acknowledged > 0 && acknowledged <= logged)
        let second = try await RunningSentinel(
            pipeline: pipeline, arguments: ["--pace", "realtime", "--loop"], database: first.database)
        // The restart publishes the visits the crash left open as exited: the log grows past what the first run wrote.
        #expect(
            try await waitFor(seconds: 60) {
                let now = try last()
                return now > logged && Set(subscriber.events.map(\.id)).isSuperset(of: 1...now)
            })
        kill(second.process.processIdentifier, SIGTERM)
        #expect(try await second.exitStatus(within: 10) == 0)
        var counts: [Int64: Int] = [:]
        for event in subscriber.events { counts[event.id, default: 0] += 1 }
        let repeated = counts.filter { $0.value > 1 }.keys
        #expect(repeated.allSatisfy { $0 > acknowledged && $0 <= logged }, "\(repeated.sorted()) after \(acknowledged)")
        #expect(Set(counts.keys).isSuperset(of: 1...logged))
    }

    @Test(
        "retained topics: availability, occupancy by zone (k-suppressed) and the gauge; Home Assistant discovery announces them in the shape it expects, through the shipped broker configuration and ACL, none refused"
    )
    func retainedAndDiscovery() async throws {
        let home = (user: "homeassistant", password: "home-secret")
        let broker = try await MQTTBroker(
            users: [("lab", "lab-secret"), home],
            acl: Fixtures.root.appendingPathComponent("docs/mosquitto/sentinel.acl").path, shipped: true)
        defer { broker.stop() }
        let early = try Subscriber(broker, id: "gauge-consumer", topics: ["sentinel/lab/gauge"], login: home)
        let credentials = try Fixtures.temporaryFolder().appendingPathComponent("lab-credentials")
        try "lab:lab-secret\n".write(to: credentials, atomically: true, encoding: .utf8)
        chmod(credentials.path, 0o600)
        let server = try await server(broker, ", homeAssistant: true, credentialsFile: \(credentials.path)")
        try server.publish(6, visitors: 3)
        server.service.hub.tick(time: server.origin.addingTimeInterval(6))
        #expect(try await server.wait { try await server.service.store.logBounds().last >= 7 })
        // The same figures again at the gauge's steady interval: logged, not retained again.
        server.service.hub.tick(time: server.origin.addingTimeInterval(40))
        #expect(try await server.wait { try await server.service.store.logBounds().last >= 8 })
        // A consumer that arrives afterwards gets the retained state at once.
        let late = try Subscriber(
            broker, id: "late-consumer", topics: ["sentinel/lab/+", "homeassistant/#"], login: home)
        func latest(_ topic: String) -> [String: Any]? {
            _ = late.events
            return late.messages.last { $0.topic == topic }.flatMap {
                try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any]
            }
        }
        #expect(
            try await server.wait {
                (latest("sentinel/lab/occupancy")?["visitors"] as? [String: Any])?["value"] as? Int == 3
            })
        let occupancy = try #require(latest("sentinel/lab/occupancy"))
        let zones = try #require(occupancy["zones"] as? [String: [String: Any]])
        #expect(zones["showroom/display"]?["value"] as? Int == 3)
        #expect(zones["showroom/counter"]?["suppressed"] as? Bool == true, "an empty zone is below k: \(zones)")
        #expect(late.messages.contains { $0.topic == "sentinel/lab/availability" && $0.payload == Data("online".utf8) })
        // Retained messages come in no set order: the gauge's may follow the occupancy's.
        #expect(
            try await server.wait { latest("sentinel/lab/gauge")?["overall"] != nil }, "the gauge reading is retained")
        let readings = try await server.service.store.events(after: 0, limit: 100).filter {
            $0.type == .gauge
        }.map { try JSONDecoder.sentinel().decode(GaugeReading.self, from: $0.payload) }
        let changes = readings.indices.filter { $0 == 0 || !readings[$0].sameFigures(as: readings[$0 - 1]) }.count
        #expect(readings.count > changes, "a reading was sent again with the same figures: \(readings.count)")
        // Discovery: one sensor per figure, each naming a state topic the box keeps retained. The retained configs
        // reach a late subscriber in their own time, not with the occupancy.
        let expected: Set<Substring> = [
            "mood", "mood_label", "visitors", "zone_showroom_display", "zone_showroom_counter",
        ]
        var configs: [MQTTClient.Message] = []
        var objects = Set<Substring>()
        _ = try await server.wait {
            _ = late.events
            configs = late.messages.filter { $0.topic.hasPrefix("homeassistant/sensor/") }
            objects = Set(configs.map { $0.topic.split(separator: "/")[3] })
            return objects == expected
        }
        #expect(objects == expected)
        for config in configs {
            #expect(config.topic.hasSuffix("/config") && config.topic.split(separator: "/").count == 5)
            let object = try #require(try JSONSerialization.jsonObject(with: config.payload) as? [String: Any])
            for key in ["name", "unique_id", "state_topic", "value_template", "availability_topic", "device"] {
                #expect(object[key] != nil, "\(key) missing in \(config.topic)")
            }
            #expect(
                ["sentinel/lab/gauge", "sentinel/lab/occupancy"].contains(object["state_topic"] as? String ?? ""))
            #expect((object["device"] as? [String: Any])?["identifiers"] as? [String] == ["sentinel_lab"])
            #expect((object["value_template"] as? String)?.hasPrefix("{{ value_json.") == true)
        }
        #expect(
            Set(
                configs.compactMap { try? JSONSerialization.jsonObject(with: $0.payload) as? [String: Any] }
                    .compactMap { $0["unique_id"] as? String }
            ).count == configs.count)
        // As Home Assistant takes them: each config against its documented schema (no object_id; a state class on
        // every number), and each template rendered with Jinja on its topic's retained message.
        var retained: [String: String] = [:]
        for message in late.messages { retained[message.topic] = String(decoding: message.payload, as: UTF8.self) }
        let file = try Fixtures.temporaryFolder().appendingPathComponent("retained.json")
        try JSONSerialization.data(withJSONObject: retained).write(to: file)
        let peer = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [Fixtures.root.appendingPathComponent("Tests/Peers/homeassistant_discovery.py").path, file.path],
            timeout: 60)
        #expect(peer.status == 0 && peer.output.contains("0 problems"), "\(peer.output)\n\(peer.errors)")
        #expect(peer.output.contains("sensor.sentinel_lab_visitors = 3 visitors (measurement)"), "\(peer.output)")
        #expect(peer.output.contains("sensor.sentinel_lab_mood = "), "\(peer.output)")
        // Nothing the box sent was refused.
        #expect(server.service.live.mqttHealth?.rejected == 0)
        // Retained only when the figures change, proved with a barrier, not a pause: a fourth visitor changes the
        // figures (published at the gauge's next interval), and the box publishes on one connection in order, so once
        // that reading arrives every reading sent before it has arrived too.
        try server.publish(4, visitors: 4, startingAt: 41)
        server.service.hub.tick(time: server.origin.addingTimeInterval(80))
        #expect(
            try await server.wait {
                _ = early.events
                return early.messages.contains { message in
                    let reading = try? JSONSerialization.jsonObject(with: message.payload) as? [String: Any]
                    return (reading?["overall"] as? [String: Any])?["visitors"] as? Int == 4
                }
            })
        #expect(early.messages.count == changes + 1, "retained only when the figures change")
        try await server.stop()
    }

    @Test(
        "a publish the broker refuses (MQTT 5 PUBACK 0x87, not authorised) is counted in /healthz with its topic: Home Assistant's discovery of a site whose ACL does not allow it"
    )
    func refusedPublish() async throws {
        // The shipped ACL, but the box logs in as another site's user: its discovery topics are not that user's.
        let broker = try await MQTTBroker(
            users: [("paris", "paris-secret")],
            acl: Fixtures.root.appendingPathComponent("docs/mosquitto/sentinel.acl").path, shipped: true)
        defer { broker.stop() }
        let credentials = try Fixtures.temporaryFolder().appendingPathComponent("paris-credentials")
        try "paris:paris-secret\n".write(to: credentials, atomically: true, encoding: .utf8)
        chmod(credentials.path, 0o600)
        let server = try await server(broker, ", homeAssistant: true, credentialsFile: \(credentials.path)")
        var health: [String: Any] = [:]
        #expect(
            try await server.wait {
                let body = try await server.get("/healthz").1
                health =
                    (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["mqtt"] as? [String: Any] ?? [:]
                return (health["rejected"] as? Int ?? 0) >= 5
                    && (health["rejectedTopics"] as? [String] ?? []).contains(
                        "homeassistant/sensor/sentinel_lab/mood/config")
            }, "\(health)")

        try await server.stop()
    }

    @Test(
        "a client whose socket is numbered past 1023 (a box holding many SSE clients) publishes and receives at once: the network loop polls, it does not select"
    )
    func socketsPastSelectsLimit() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        #expect(limit.rlim_cur > 1300, "the test needs more than 1300 descriptors (ulimit -n is \(limit.rlim_cur))")
        // Descriptors up to past 1024 taken, so that the clients' sockets come after them.
        var taken: [Int32] = []
        while taken.last.map({ $0 < 1100 }) ?? true {
            let fd = open("/dev/null", O_RDONLY)
            guard fd >= 0 else { break }
            taken.append(fd)
        }
        defer { for fd in taken { close(fd) } }
        #expect((taken.last ?? 0) >= 1100)
        let subscriber = try Subscriber(broker, id: "high-descriptor-consumer", topics: ["high/#"])
        let publisher = try MQTTClient(clientID: "high-descriptor-box")
        try publisher.start(MQTTEndpoint(url: broker.url)!)
        #expect(try await waitFor(seconds: 20) { publisher.state.connected && subscriber.client.state.connected })
        var received: [MQTTClient.Message] = []
        var acks: [MQTTClient.Ack] = []
        for n in 0..<20 { try publisher.publish(topic: "high/\(n)", payload: Data("\(n)".utf8), qos: 1) }
        #expect(
            try await waitFor(seconds: 20) {
                received += subscriber.client.takeMessages()
                acks += publisher.takeAcks()
                return received.count == 20 && acks.count == 20
            }, "received \(received.count), acknowledged \(acks.count): \(publisher.state.reason)")
        #expect(received.map(\.topic) == (0..<20).map { "high/\($0)" })
        publisher.stop()
    }

    @Test("a wrong password is a clear error in /healthz, and the box keeps trying")
    func wrongPassword() async throws {
        let broker = try await MQTTBroker(users: [("box", "right-password")])
        defer { broker.stop() }
        let credentials = try Fixtures.temporaryFolder().appendingPathComponent("mqtt-credentials")
        try "box:wrong-password\n".write(to: credentials, atomically: true, encoding: .utf8)
        chmod(credentials.path, 0o600)
        let server = try await server(broker, ", credentialsFile: \"\(credentials.path)\"")
        var health = ""
        #expect(
            try await server.wait(seconds: 20) {
                health = String(decoding: try await server.get("/healthz").1, as: UTF8.self)
                guard let range = health.range(of: "\"failedAttempts\":") else { return false }
                return health.contains("refused the connection")
                    && (Int(health[range.upperBound...].prefix(1)) ?? 0) >= 2
            }, "\(health)")
        try await server.stop()
    }
}

extension MQTTOutputTests {
    @Test(
        "a port that takes the TCP connection and never answers CONNECT: /healthz says so with the attempts counted, and the box keeps trying",
        .timeLimit(.minutes(1)))
    func silentBroker() async throws {
        // Listening, never accepting: the kernel completes the handshake and the CONNECT waits unread.
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try withUnsafeMutablePointer(to: &address) { pointer in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { raw in
                try #require(bind(fd, raw, length) == 0 && listen(fd, 8) == 0 && getsockname(fd, raw, &length) == 0)
            }
        }
        let port = Int(UInt16(bigEndian: address.sin_port))
        let server = try await TestServer(extra: "outputs:\n  mqtt: { url: \"mqtt://127.0.0.1:\(port)\", site: lab }")
        var health = ""
        #expect(
            try await server.wait(seconds: 40) {
                health = String(decoding: try await server.get("/healthz").1, as: UTF8.self)
                guard let range = health.range(of: "\"failedAttempts\":") else { return false }
                return health.contains("sent no CONNACK within 10 s")
                    && (Int(health[range.upperBound...].prefix(1)) ?? 0) >= 1
            }, "\(health)")
        try await server.stop()
    }
}

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
        guard let port = await iterator.next() else { throw ServiceError("the fleet ended before it listened") }
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
        #expect(try await Self.poll { site.state.connected })
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
        #expect(try await Self.poll { try await fleet.service.store.received()["lab"] == 1 })
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
            try await Self.poll {
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
        #expect(try await Self.poll { site.state.connected })
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
            if index == 0 { #expect(try await Self.poll { try await fleet.service.store.received()["lab"] == 1 }) }
        }
        let stored = cases.filter { $0.topic.hasPrefix("lab/") && $0.outcome == "stored" }.count
        let expected = Dictionary(
            cases.filter { $0.topic.hasPrefix("lab/") && !["stored", "duplicate"].contains($0.outcome) }
                .map { ($0.outcome, 1) }, uniquingKeysWith: +)
        var lab: [String: Any] = [:]
        #expect(
            try await Self.poll {
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
            try await Self.poll {
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
        _ = try await poll { client.state.connected }
        return client
    }

    /// Whether `condition` holds within `seconds`, asking every 20 ms.
    static func poll(seconds: Double = 10, _ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(seconds)
        while ContinuousClock.now < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    static func fleetHealth(_ fleet: TestFleet) async throws -> [String: Any] {
        let (_, body) = try await LoopbackClient.fetch(port: fleet.port, path: "/healthz")
        return (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["fleet"] as? [String: Any] ?? [:]
    }

    static func siteHealth(_ fleet: TestFleet, _ site: String) async throws -> [String: Any] {
        (try await fleetHealth(fleet)["sites"] as? [[String: Any]])?.first { $0["site"] as? String == site } ?? [:]
    }

    @Test(
        "sites are held to their own topic by the broker's ACL (docs/mosquitto/sentinel.acl, Debian's mosquitto) and to the fleet's allow list: a site posing as another is dropped by the broker, a site not allowed is refused by the fleet, an anonymous client is not let in"
    )
    func authenticatedSites() async throws {
        let acl = Fixtures.root.appendingPathComponent("docs/mosquitto/sentinel.acl").path
        let broker = try await MQTTBroker(
            users: [("sentinel-fleet", "fleet-secret"), ("lab", "lab-secret"), ("ghost", "ghost-secret")], acl: acl)
        defer { broker.stop() }
        let folder = try Fixtures.temporaryFolder()
        let fleet = try await TestFleet(
            broker, folder: folder, sites: "{ allow: [lab, paris] }", brokerExtra: try Self.fleetLogin(in: folder))
        #expect(try await Self.poll { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
        let lab = try await Self.site(broker, "lab", password: "lab-secret")
        let ghost = try await Self.site(broker, "ghost", password: "ghost-secret")
        #expect(lab.state.connected && ghost.state.connected)
        try lab.publish(topic: "sentinel/lab/showroom/visitor.entered", payload: Self.goodEvent(site: "lab", id: 1))
        // lab posing as paris, an allowed site: the broker drops it, the fleet never sees it.
        try lab.publish(topic: "sentinel/paris/showroom/visitor.entered", payload: Self.goodEvent(site: "paris", id: 1))
        // A user of the broker, under its own name, that the fleet was not told of.
        try ghost.publish(
            topic: "sentinel/ghost/showroom/visitor.entered", payload: Self.goodEvent(site: "ghost", id: 1))
        try lab.publish(topic: "sentinel/lab/showroom/visitor.entered", payload: Self.goodEvent(site: "lab", id: 2))
        var health: [String: Any] = [:]
        #expect(
            try await Self.poll {
                health = try await Self.fleetHealth(fleet)
                return try await fleet.service.store.received()["lab"] == 2
                    && health["rejected"] as? [String: Int] == ["site": 1]
            }, "\(health)")
        #expect(try await fleet.service.store.received()["paris"] == nil)
        let paris = try await Self.siteHealth(fleet, "paris")
        #expect(paris["received"] as? Int == 0 && (paris["rejected"] as? [String: Int] ?? [:]).isEmpty, "\(paris)")
        #expect(
            try await fleet.events().filter { $0.type != .gauge }.allSatisfy {
                $0.streamId == "lab/showroom"
            })
        let anonymous = try MQTTClient(clientID: "anonymous", cleanStart: true, sessionExpiry: 0)
        try anonymous.start(MQTTEndpoint(url: broker.url)!)
        #expect(try await Self.poll { anonymous.state.failures > 0 })
        #expect(!anonymous.state.connected)
        for client in [lab, ghost, anonymous] { client.stop() }
        try await fleet.stop()
    }

    /// The shipped broker configuration and ACL (docs/mosquitto), with the fleet's login and a site's.
    static func shippedBroker() async throws -> MQTTBroker {
        try await MQTTBroker(
            users: [("sentinel-fleet", "fleet-secret"), ("lab", "lab-secret")],
            acl: Fixtures.root.appendingPathComponent("docs/mosquitto/sentinel.acl").path, shipped: true)
    }

    @Test(
        "a site's backlog of 5,000 events, published at QoS 1 at once while the fleet is away, reaches the fleet whole through the shipped broker configuration: every event stored, none missing, nothing dropped by the broker"
    )
    func backlogThroughShippedConf() async throws {
        let broker = try await Self.shippedBroker()
        defer { broker.stop() }
        let folder = try Fixtures.temporaryFolder()
        let login = try Self.fleetLogin(in: folder)
        // The fleet's session, then the fleet away: the broker holds the whole backlog for it.
        var fleet = try await TestFleet(broker, folder: folder, sites: "{ allow: [lab] }", brokerExtra: login)
        #expect(try await Self.poll { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
        try await fleet.stop()
        let total: Int64 = 5_000
        let lab = try await Self.site(broker, "lab", password: "lab-secret")
        let now = Date()
        for id in 1...total {
            try lab.publish(
                topic: "sentinel/lab/showroom/visitor.entered", payload: Self.goodEvent(site: "lab", id: id, at: now))
        }
        // Every publish acknowledged by the broker, and accepted, before the fleet comes back.
        var acks: [MQTTClient.Ack] = []
        #expect(
            try await Self.poll {
                acks += lab.takeAcks()
                return acks.count == Int(total)
            }, "\(acks.count) acknowledged")
        #expect(acks.allSatisfy { $0.accepted })
        fleet = try await TestFleet(broker, folder: folder, sites: "{ allow: [lab] }", brokerExtra: login)
        let current = fleet
        var health: [String: Any] = [:]
        #expect(
            try await Self.poll(seconds: 90) {
                health = try await Self.siteHealth(current, "lab")
                return try await current.service.store.received()["lab"] == total
            }, "\(health)")
        #expect(try await fleet.events().filter { $0.type != .gauge }.count == Int(total))
        health = try await Self.siteHealth(fleet, "lab")
        #expect(health["missing"] as? Int == 0, "\(health)")
        #expect(
            !broker.log.contains("dropped"),
            "\(broker.log.split(separator: "\n").filter { $0.contains("dropped") }.prefix(3))")
        lab.stop()
        try await fleet.stop()
    }

    @Test(
        "a fleet that may learn one site takes the first it hears of, refuses the next (reason site), and after a restart still takes the first"
    )
    func learnedSites() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let folder = try Fixtures.temporaryFolder()
        var fleet = try await TestFleet(broker, folder: folder, sites: "{ learn: 1 }")
        let site = try await Self.site(broker, "any")
        for run in 1...2 {
            #expect(try await Self.poll { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
            try site.publish(
                topic: "sentinel/first/showroom/visitor.entered", payload: Self.goodEvent(site: "first", id: Int64(run))
            )
            try site.publish(
                topic: "sentinel/second/showroom/visitor.entered",
                payload: Self.goodEvent(site: "second", id: Int64(run)))
            var health: [String: Any] = [:]
            #expect(
                try await Self.poll {
                    health = try await Self.fleetHealth(fleet)
                    return try await fleet.service.store.received() == ["first": Int64(run)]
                        && health["rejected"] as? [String: Int] == ["site": 1]
                }, "run \(run): \(health)")
            try await fleet.stop()
            if run == 1 { fleet = try await TestFleet(broker, folder: folder, sites: "{ learn: 1 }") }
        }
        site.stop()
    }

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
        #expect(try await Self.poll { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
        // The other replica: the same group, a session of its own that expires as the fleet's does.
        let replica = try MQTTClient(clientID: "replica-b", cleanStart: false, sessionExpiry: 4)
        try replica.subscribe("$share/test/sentinel/+/+/+")
        try replica.start(MQTTEndpoint(url: broker.url)!)
        #expect(try await Self.poll { replica.state.connected })
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
            try await Self.poll {
                taken += replica.takeMessages().count
                return try await fleet.events().filter { $0.type != .gauge }.count + taken == 6
            })
        #expect(taken > 0 && taken < 6, "the replica took \(taken) of 6")
        // The replica dies: once the broker keeps its session, its share is queued for it until the session expires.
        replica.stop()
        #expect(try await Self.poll { sessionsAway() == 1 })
        try publish(7...12)
        #expect(try await Self.poll { sessionsAway() == 0 }, "the replica's session did not expire")
        try publish(13...18)
        #expect(try await Self.poll { try await fleet.service.store.received()["lab"] == 18 })
        let payloads = try await fleet.events().map { String(decoding: $0.payload, as: UTF8.self) }
        let ids = Set((1...18).filter { id in payloads.contains { $0.contains(Self.pseudonym(Int64(id))) } })
        #expect(
            Set(13...18).isSubset(of: ids), "after the expiry every message reaches the live replica: \(ids.sorted())")
        let held = 6 - Set(7...12).intersection(ids).count
        var health: [String: Any] = [:]
        #expect(
            try await Self.poll {
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
            _ = try await Self.poll {
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
        _ = try await Self.poll {
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
        #expect(try await Self.poll { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
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
            try await Self.poll {
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
