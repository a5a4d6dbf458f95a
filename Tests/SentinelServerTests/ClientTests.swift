import Foundation
import GRDB
import SentinelClient
import SentinelTestSupport
import Synchronization
import Testing

/// SentinelClient against the real thing: `sentinel run` in its own process for the stream across a restart, the
/// in-process server for the REST calls and tokens.
@Suite("SentinelClient", .timeLimit(.minutes(3)))
struct ClientTests {
    /// What a client's stream handed over, gathered by the task reading it.
    final class Received: Sendable {
        let items = Mutex<[SentinelClient.StreamItem]>([])
        var events: [EventEnvelope] {
            items.withLock { $0.compactMap { if case .event(let envelope) = $0 { envelope } else { nil } } }
        }
        var ids: [Int64] { events.map(\.id) }

        func read(_ stream: AsyncThrowingStream<SentinelClient.StreamItem, any Error>) -> Task<Void, any Error> {
            Task { for try await item in stream { items.withLock { $0.append(item) } } }
        }
    }

    @Test(
        "the event stream across a restart of sentinel run: the client reconnects with backoff and resumes after its last id, every logged event once and in order, and the visits the stop closed arrive"
    )
    func resumesAcrossARestart() async throws {
        let pipeline = try await RunningSentinel.showroomOnClip()
        let first = try await RunningSentinel(pipeline: pipeline, arguments: ["--pace", "realtime", "--loop"])
        defer { kill(first.process.processIdentifier, SIGKILL) }
        let client = SentinelClient(
            url: URL(string: "http://127.0.0.1:\(first.port)")!,
            reconnect: .init(initialDelay: .milliseconds(200), maxDelay: .seconds(1)))
        let received = Received()
        let reading = received.read(client.events(after: 0))
        defer { reading.cancel() }
        let started = try await waitFor(seconds: 60) { received.ids.count >= 15 }
        #expect(started, "the service's log ends: \(first.log.suffix(3000))")
        // A visitor present when the stop comes, so that the stop has a visit to close.
        try await first.waitForVisitorsMidClip()
        kill(first.process.processIdentifier, SIGTERM)
        #expect(try await first.exitStatus(within: 10) == 0)
        // What the first run logged, its stop's `visitor.exited` (reason shutdown) among them.
        let logged = try await DatabaseQueue(path: first.database).read {
            try Int64.fetchOne($0, sql: "SELECT max(id) FROM events") ?? 0
        }
        let second = try await RunningSentinel(
            pipeline: pipeline, arguments: ["--pace", "realtime", "--loop", "--port", "\(first.port)"],
            database: first.database)
        defer { kill(second.process.processIdentifier, SIGKILL) }
        #expect(second.port == first.port)
        let resumed = try await waitFor(seconds: 60) { (received.ids.last ?? 0) > logged + 10 }
        #expect(resumed, "the service's log ends: \(second.log.suffix(3000))")
        reading.cancel()
        kill(second.process.processIdentifier, SIGTERM)
        #expect(try await second.exitStatus(within: 10) == 0)

        let ids = received.ids
        let all = try await DatabaseQueue(path: first.database).read {
            try Int64.fetchAll($0, sql: "SELECT id FROM events WHERE id <= ? ORDER BY id", arguments: [ids.last ?? 0])
        }
        #expect(ids == all, "received \(ids.count) events, the log has \(all.count) up to \(ids.last ?? 0)")
        #expect(Set(ids).count == ids.count)
        let exits = received.events.compactMap { envelope -> ExitReason? in
            if case .visitor(let event) = envelope.payload, envelope.id <= logged { event.reason } else { nil }
        }
        #expect(exits.contains(.shutdown))
        let items = received.items.withLock { $0 }
        let connections = items.compactMap { if case .connected(let after) = $0 { after } else { nil } }
        #expect(connections.first == 0)
        #expect(connections.count >= 2)
        // Every reconnect resumed after the last event received before it.
        var last: Int64 = 0
        for item in items {
            switch item {
            case .event(let envelope): last = envelope.id
            case .connected(let after): #expect(after == last)
            case .disconnected(_, let wait): #expect(wait >= .milliseconds(200) && wait <= .milliseconds(3_600))
            case .reset, .cutoff: Issue.record("unexpected \(item)")
            }
        }
        #expect(items.contains { if case .disconnected = $0 { true } else { false } })
    }

    @Test(
        "REST calls decode what the server answers; a missing token is a 401 with the server's message, for REST and the stream; an unknown resume id is a typed stream.reset"
    )
    func restTokensAndReset() async throws {
        let server = try await TestServer(extra: "server: { \(try TestServer.tokenSettings()) }")
        try server.publish(12, visitors: 6)
        let url = URL(string: "http://127.0.0.1:\(server.port)")!
        let client = SentinelClient(url: url, token: TestServer.tokens.visitors)
        #expect(try await server.wait { try await client.presentVisitors().visitors.count == 6 })
        let present = try await client.presentVisitors()
        #expect(Set(present.visitors.map(\.zone)) == ["display"])
        let detail = try await client.visitor(present.visitors[0].faceId)
        #expect(detail.visitor.faceId == present.visitors[0].faceId)
        let zones = try await client.zones()
        #expect(zones.zones.map(\.name) == ["display", "counter"])
        #expect(zones.zones[0].polygon == [[0, 0], [0.5, 0], [0.5, 1], [0, 1]])
        #expect(zones.visitors == .value(6, visitors: 6))
        _ = try await client.sentiment(minutes: 120)
        let health = try await client.health()
        #expect(health.database?.writable == true && health.sources != nil, "the visitor token has the details")

        let anonymous = SentinelClient(url: url)
        await #expect(throws: SentinelClient.Failure.self) { try await anonymous.presentVisitors() }
        do {
            for try await _ in anonymous.events() {}
            Issue.record("the stream ended without an error")
        } catch let failure as SentinelClient.Failure {
            guard case .http(401, let message) = failure else { throw failure }
            #expect(message.contains("token"))
        }

        // Both streams are read with a deadline: a client that does not resume would wait for new events for ever.
        let items = try await first(8, of: client.events(after: 5))
        #expect(items.first == .connected(resumingAfter: 5))
        let ids = items.compactMap { if case .event(let envelope) = $0 { envelope.id } else { nil } }
        #expect(ids == Array(6...12))

        let reset = try await first(2, of: client.events(after: 999_999))
        #expect(reset.first == .connected(resumingAfter: 999_999))
        guard case .reset(let notice) = reset.last else {
            Issue.record("expected stream.reset, got \(reset)")
            return
        }
        #expect(notice.reason == "unknown" && notice.requestedId == "999999")
        try await server.stop()
    }

    /// The first `count` items of `stream`, or those that came within 10 s.
    func first(_ count: Int, of stream: AsyncThrowingStream<SentinelClient.StreamItem, any Error>) async throws
        -> [SentinelClient.StreamItem]
    {
        let received = Received()
        let reading = received.read(stream)
        _ = try await waitFor(seconds: 10) { received.items.withLock { $0.count >= count } }
        reading.cancel()
        return received.items.withLock { Array($0.prefix(count)) }
    }
}
