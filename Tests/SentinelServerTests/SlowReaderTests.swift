import Foundation
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelHTTP
import SentinelMQTT
import SentinelRuntime
import SentinelStore
import SentinelTestSupport
import Synchronization
import Testing

/// Clients that resume from a log of large events and never read, on `run` and on a fleet behind the shipped broker
/// configuration. Each fills its sockets and holds the server's streams at their limit for a while: run alone, after
/// the rest (the Makefile), so that the other tests' waits do not run out behind them.
@Suite("SSE: clients that never read", .serialized, .timeLimit(.minutes(5)))
struct SlowReaderTests {
    /// What took a fleet to 6 GB: clients that resume from the start of a log of large events and never read. Every
    /// page of the log a stream reads, what it queues and what it writes is counted: the streams together stay within
    /// `streamMemoryMegabytes`, the slowest are cut off and, since they do not read, closed; a client that reads
    /// meanwhile gets every event.
    @Test(
        "clients that resume and never read: the streams hold at most streamMemoryMegabytes together, the slowest are cut off and their connections closed, and a client that reads gets every event"
    )
    func idleResumers() async throws {
        let server = try await TestServer(extra: "server: { streamMemoryMegabytes: 16, clientBufferBytes: 1048576 }")
        let limit = 16 << 20
        let total = 400
        // About 50 KB each: 20 MB, more than the limit and than the sockets take of a client that does not read.
        try server.publish(total, padding: 50_000)
        #expect(try await server.wait(seconds: 60) { try await server.service.store.logBounds().last == Int64(total) })
        let idle = try await IdleClients(
            80, port: server.port, path: "/events?lastEventId=0", of: server.service.broadcaster)
        let messages = try await server.stream("/events?lastEventId=0", timeout: .seconds(150)) {
            $0.last?.id == "\(total)" || $0.last?.event == "stream.cutoff"
        }
        #expect(messages.ids == Array(1...Int64(total)), "\(messages.ids.count) events, then \(messages.suffix(1))")
        try await idle.end(limit: limit)
        try await server.stop()
    }

    @Test(
        "dashboards that resume from a log of large events and never read: the fleet's streams hold at most streamMemoryMegabytes, the slowest are cut off and closed, and a reading client gets every event (shipped broker configuration)"
    )
    func idleDashboards() async throws {
        let broker = try await FleetTests.shippedBroker()
        defer { broker.stop() }
        let folder = try Fixtures.temporaryFolder()
        let fleet = try await TestFleet(
            broker, folder: folder, sites: "{ allow: [lab] }", brokerExtra: try FleetTests.fleetLogin(in: folder),
            extra: "server: { streamMemoryMegabytes: 16, clientBufferBytes: 1048576 }")
        let lab = try await FleetTests.site(broker, "lab", password: "lab-secret")
        // 300 events of about 56 KB (under the fleet's 64 KiB): a stay in the same zone, 1,400 times.
        let total: Int64 = 300
        let stays = Array(repeating: "{\"dwellSeconds\": 0, \"zone\": \"display\"}", count: 1_400).joined(
            separator: ", ")
        let now = Date()
        for id in 1...total {
            let event = String(decoding: try FleetTests.goodEvent(site: "lab", id: id, at: now), as: UTF8.self)
                .replacingOccurrences(of: "\"zones\": [", with: "\"zones\": [\(stays), ")
            try lab.publish(topic: "sentinel/lab/showroom/visitor.entered", payload: Data(event.utf8))
        }
        var health: [String: Any] = [:]
        #expect(
            try await waitFor(seconds: 60) {
                health = try await FleetTests.siteHealth(fleet, "lab")
                return try await fleet.service.store.received()["lab"] == total
            }, "\(health)")
        let idle = try await IdleClients(
            80, port: fleet.port, path: "/events?lastEventId=1", of: fleet.service.broadcaster)
        // Read by a debug build's client parsing 17 MB: 35 s for both tests alone, but once 60 s were not enough.
        let messages = try await TestServer.stream(port: fleet.port, "/events?lastEventId=0", timeout: .seconds(150)) {
            $0.filter { $0.event == "visitor.entered" }.count == Int(total) || $0.last?.event == "stream.cutoff"
        }
        #expect(messages.filter { $0.event == "visitor.entered" }.count == Int(total), "\(messages.suffix(1))")
        try await idle.end(limit: 16 << 20)
        lab.stop()
        try await fleet.stop()
    }
}

/// Clients that ask for the event stream and never read a byte, and the most the server's streams held meanwhile.
final class IdleClients: Sendable {
    private let connections: Mutex<[RawConnection]>
    private let broadcaster: Broadcaster
    /// The most the streams held, sampled every 10 ms.
    private let peak = SharedCount()
    private let sampler: Task<Void, any Error>

    /// Opens `count` of them on `path`, and waits until the server has subscribed every one, then until the slowest
    /// have been cut off and, as they do not read, closed (10 s later): fewer remain.
    init(_ count: Int, port: Int, path: String, of broadcaster: Broadcaster) async throws {
        self.broadcaster = broadcaster
        sampler = Task { [peak] in
            while !Task.isCancelled {
                let holding = broadcaster.holding
                peak.count.withLock { $0 = max($0, holding) }
                try await Task.sleep(for: .milliseconds(10))
            }
        }
        let opened = try (0..<count).map { _ in try RawConnection(port: port) }
        for connection in opened { connection.send("GET \(path) HTTP/1.1\r\nHost: localhost\r\n\r\n") }
        connections = Mutex(opened)
        #expect(try await waitFor(seconds: 30) { broadcaster.subscriberCount == count })
        #expect(
            try await waitFor(seconds: 60) { broadcaster.subscriberCount < count }, "none cut off and closed")
    }

    /// Checks the most the streams held against `limit`, closes the clients, and waits until nothing is held.
    func end(limit: Int) async throws {
        sampler.cancel()
        // The count passes the limit only by what streams charge at the same moment, before the slowest are cut off:
        // a page's messages each (a page reads one event beyond 64 KiB at most, in a buffer of up to 256 KiB).
        let most = peak.count.withLock { $0 }
        #expect(most <= limit + 4 * (4 * HTTPAPI.replayPageBytes), "the streams held \(most) bytes")
        connections.withLock { $0.removeAll() }
        let broadcaster = broadcaster
        #expect(
            try await waitFor(seconds: 30) { broadcaster.subscriberCount == 0 && broadcaster.holding == 0 })
    }
}
