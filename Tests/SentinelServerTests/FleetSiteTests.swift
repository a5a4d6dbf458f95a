import Foundation
import GRDB
import Logging
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelMQTT
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelTestSupport
import ServiceLifecycle
import Testing

extension FleetTests {
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
        #expect(try await waitFor { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
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
            try await waitFor {
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
        #expect(try await waitFor { anonymous.state.failures > 0 })
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
        #expect(try await waitFor { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
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
            try await waitFor {
                acks += lab.takeAcks()
                return acks.count == Int(total)
            }, "\(acks.count) acknowledged")
        #expect(acks.allSatisfy { $0.accepted })
        fleet = try await TestFleet(broker, folder: folder, sites: "{ allow: [lab] }", brokerExtra: login)
        let current = fleet
        var health: [String: Any] = [:]
        #expect(
            try await waitFor(seconds: 90) {
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
            #expect(try await waitFor { try await Self.fleetHealth(fleet)["connected"] as? Bool == true })
            try site.publish(
                topic: "sentinel/first/showroom/visitor.entered", payload: Self.goodEvent(site: "first", id: Int64(run))
            )
            try site.publish(
                topic: "sentinel/second/showroom/visitor.entered",
                payload: Self.goodEvent(site: "second", id: Int64(run)))
            var health: [String: Any] = [:]
            #expect(
                try await waitFor {
                    health = try await Self.fleetHealth(fleet)
                    return try await fleet.service.store.received() == ["first": Int64(run)]
                        && health["rejected"] as? [String: Int] == ["site": 1]
                }, "run \(run): \(health)")
            try await fleet.stop()
            if run == 1 { fleet = try await TestFleet(broker, folder: folder, sites: "{ learn: 1 }") }
        }
        site.stop()
    }
}
