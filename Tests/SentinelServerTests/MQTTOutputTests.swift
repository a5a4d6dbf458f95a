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
