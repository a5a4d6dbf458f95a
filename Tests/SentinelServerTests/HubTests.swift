import Foundation
import NIOCore
import Prometheus
import SentinelCore
import SentinelPrivacy
import SentinelPublishing
import SentinelStore
import SentinelWire
import Testing

@testable import SentinelRuntime

@Suite("Hub")
struct HubTests {
    func event(_ second: Double, mask: inout PrivacyMask) throws -> Masked {
        let visitor = VisitorRecord(
            faceId: "track-1", sourceId: "cam", zone: nil, state: .active, firstSeen: Date(timeIntervalSince1970: 0))
        return try mask.mask(VisitorEvent(type: .updated, time: Date(timeIntervalSince1970: second), visitor: visitor))
    }

    func times(_ entries: [Hub.Entry]) -> [String] {
        entries.map { entry in
            switch entry {
            case .event(let masked, _, _): "event \(Int(masked.stored.event.time.timeIntervalSince1970))"
            case .tick(let time): "tick \(Int(time.timeIntervalSince1970))"
            case .publication: "publication"
            }
        }
    }

    @Test("ticks with nothing between them are one (the latest); beyond the bound the oldest go, counted")
    func boundedQueue() throws {
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        let telemetry = Telemetry()
        let hub = Hub(bound: 4, telemetry: telemetry)
        // `/metrics` reports what `/healthz` does.
        func depth() -> Double? {
            telemetry.registry.emitToString().split(separator: "\n").first {
                $0.hasPrefix("sentinel_queue_depth{queue=\"store\"}")
            }.flatMap { $0.split(separator: " ").last.flatMap { Double($0) } }
        }
        hub.tick(time: Date(timeIntervalSince1970: 1))
        hub.tick(time: Date(timeIntervalSince1970: 2))
        hub.submit(try event(3, mask: &mask))
        hub.tick(time: Date(timeIntervalSince1970: 4))
        hub.tick(time: Date(timeIntervalSince1970: 5))
        #expect(hub.counts == (waiting: 3, dropped: 0))
        hub.submit(try event(6, mask: &mask))
        hub.submit(try event(7, mask: &mask))
        #expect(hub.counts == (waiting: 4, dropped: 1))
        let taken = hub.take(limit: 2)
        #expect(times(taken) == ["event 3", "tick 5"])
        // Taken by the writer, still held in memory until the store has them.
        #expect(hub.counts == (waiting: 4, dropped: 1))
        #expect(depth() == 4)
        // A batch the store refused goes back ahead of what waits, within the bound.
        hub.putBack(taken)
        hub.tick(time: Date(timeIntervalSince1970: 8))
        #expect(times(hub.take(limit: 10)) == ["tick 5", "event 6", "event 7", "tick 8"])
        #expect(hub.counts == (waiting: 4, dropped: 2))
        #expect(depth() == 4)
        hub.written(4)
        #expect(hub.counts == (waiting: 0, dropped: 2))
        #expect(depth() == 0)
    }
}

@Suite("SSE fan-out: each client's queue")
struct FanOutTests {
    func events(_ ids: ClosedRange<Int64>) -> [LoggedEvent] {
        ids.map {
            LoggedEvent(
                id: $0, sequenceNumber: $0, streamId: "showroom", type: .visitor(.updated), time: Date(), zone: nil,
                payload: Data("{}".utf8))
        }
    }

    @Test(
        "what a client has queued is taken in one go (one write), in log order; beyond its bound it is cut off, gets what was queued, then the end"
    )
    func coalesced() async throws {
        let broadcaster = Broadcaster(telemetry: Telemetry())
        let subscription = try #require(broadcaster.subscribe(EventFilter(), capacity: 10))
        // Three commits while the client is busy writing: its next take holds all of them.
        let second = events(3...3)
        broadcaster.publish(events(1...2))
        broadcaster.publish(second)
        broadcaster.publish(events(4...6))
        let taken = try #require(await subscription.next())
        let ids = taken.flatMap { item -> [Int64] in
            if case .messages(let messages) = item { messages.events.map(\.id) } else { [] }
        }
        #expect(ids == Array(1...6))
        // Each commit's messages are one buffer, rendered as the stream's wire format.
        let text = taken.map { item in
            if case .messages(let messages) = item { String(buffer: messages.text) } else { "" }
        }
        #expect(text[1] == ServerSentEvents.message(for: second[0]))
        // A heartbeat while nothing is queued is taken alone; with something queued, the messages are enough.
        subscription.heartbeat()
        let beat = try #require(await subscription.next())
        #expect(beat.count == 1 && { if case .heartbeat = beat[0] { true } else { false } }())
        // Nine fit; two more do not: cut off, after what was queued.
        broadcaster.publish(events(7...15))
        broadcaster.publish(events(16...17))
        #expect(subscription.droppedMessages == 2)
        #expect(
            try #require(await subscription.next()).map { if case .messages(let m) = $0 { m.events.count } else { 0 } }
                == [9])
        #expect(await subscription.next() == nil)
        // A reader waiting when a commit lands is woken with it.
        let other = try #require(broadcaster.subscribe(EventFilter(), capacity: 10))
        async let woken = other.next()
        while !other.isWaiting { await Task.yield() }
        broadcaster.publish(events(18...19))
        #expect(await woken?.count == 1)
        broadcaster.close()
        #expect(await other.next() == nil)
        // A client with a filter gets only its share of a commit, rendered for it alone.
        let filtered = Broadcaster(telemetry: Telemetry())
        let zoned = try #require(filtered.subscribe(EventFilter(zones: [.named("door")]), capacity: 10))
        var mixed = events(20...22)
        mixed[1].zone = "door"
        filtered.publish(mixed)
        let share = try #require(await zoned.next())
        #expect(
            share.map { if case .messages(let m) = $0 { String(buffer: m.text) } else { "" } }
                == [ServerSentEvents.message(for: mixed[1])])
    }
}
