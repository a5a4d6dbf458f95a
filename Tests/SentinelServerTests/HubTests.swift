import Foundation
import SentinelCore
import SentinelPrivacy
import Testing

@testable import SentinelServer

@Suite("Hub")
struct HubTests {
    func event(_ second: Double, mask: inout PrivacyMask) throws -> [PrivacyPolicy.Output: MaskedEvent] {
        let visitor = VisitorRecord(
            faceId: "track-1", sourceId: "cam", zone: nil, state: .active, firstSeen: Date(timeIntervalSince1970: 0))
        return try mask.mask(VisitorEvent(type: .updated, time: Date(timeIntervalSince1970: second), visitor: visitor))
    }

    func times(_ entries: [Hub.Entry]) -> [String] {
        entries.map { entry in
            switch entry {
            case .event(let masked, _, _): "event \(Int(masked.event.time.timeIntervalSince1970))"
            case .tick(let time): "tick \(Int(time.timeIntervalSince1970))"
            case .publication: "publication"
            }
        }
    }

    @Test("ticks with nothing between them are one (the latest); beyond the bound the oldest go, counted")
    func boundedQueue() throws {
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        let hub = Hub(bound: 4, telemetry: Telemetry())
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
        // A batch the store refused goes back ahead of what waits, within the bound.
        hub.putBack(taken)
        hub.tick(time: Date(timeIntervalSince1970: 8))
        #expect(times(hub.take(limit: 10)) == ["tick 5", "event 6", "event 7", "tick 8"])
        #expect(hub.counts == (waiting: 0, dropped: 2))
    }
}
