import Foundation
import SentinelCore
import SentinelWire
import Testing

@testable import SentinelPrivacy

@Suite("Field policy")
struct FieldPolicyTests {
    func json(_ masked: MaskedEvent) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: masked.json) as? [String: Any])
    }

    @Test(
        "by default no box, detector score, media time or emotion distribution is published, and times are whole seconds"
    )
    func strictDefaults() throws {
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        let copies = try mask.mask(visitorEvent(.updated, id: "cam#1#3"))
        for masked in [copies.stored, copies.published] {
            let output = masked.output
            let text = String(decoding: masked.json, as: UTF8.self)
            for banned in ["box", "detectionScore", "mediaTime", "emotionDistribution", "cam#1#3", "101.5"] {
                #expect(!text.contains(banned), "\(output): \(banned) in \(text)")
            }
            let event = try json(masked)
            let visitor = try #require(event["visitor"] as? [String: Any])
            #expect(event["time"] as? String == "2023-11-14T22:13:20.000Z")
            #expect(visitor["firstSeen"] as? String == "2023-11-14T22:13:15.000Z")
            #expect(visitor["dwellSeconds"] as? Double == 4.25)
            #expect(visitor["emotion"] as? String == "happy" && visitor["emotionConfidence"] as? Double == 0.8)
            #expect((event["stay"] as? [String: Any])?["enteredAt"] as? String == "2023-11-14T22:13:17.000Z")
        }
    }

    @Test("durations are published to the millisecond: float noise beyond is not a measurement")
    func millisecondDurations() throws {
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        var event = visitorEvent(.zoneExited, id: "cam#1#3")
        event.visitor.dwellSeconds = 12.133334
        event.visitor.zones = [.init(zone: "display", dwellSeconds: 2.0000004)]
        event.stay?.dwellSeconds = 1.9999996
        let masked = try mask.mask(event).published
        let text = String(decoding: masked.json, as: UTF8.self)
        #expect(text.contains("\"dwellSeconds\":12.133") && !text.contains("12.133334"), "\(text)")
        #expect(!text.contains("2.0000004") && !text.contains("1.9999996"), "\(text)")
        #expect(masked.event.stay?.dwellSeconds == 2 && masked.event.visitor.zones?.first?.dwellSeconds == 2)
    }

    @Test(
        "a pipeline may allow a sensitive field for one output and deny a default one; the published copy never holds what the store does not keep (a stream read back from the store is the stream sent)"
    )
    func allowAndDeny() throws {
        var policy = PrivacyPolicy()
        policy.outputs[.store] = PublishedField.defaults.union([.box, .mediaTime]).subtracting([.valence])
        policy.timestampResolution = 0
        var mask = PrivacyMask(policy: policy, keys: try PseudonymKeyRing())
        let masked = try mask.mask(visitorEvent(.updated, id: "cam#1#3"))
        let store = try json(masked.stored)
        let events = try json(masked.published)
        #expect((store["visitor"] as? [String: Any])?["box"] != nil && store["mediaTime"] as? Double == 12.4)
        #expect((store["visitor"] as? [String: Any])?["valence"] == nil)
        #expect(
            (events["visitor"] as? [String: Any])?["box"] == nil
                && (events["visitor"] as? [String: Any])?["valence"] == nil
                && (events["visitor"] as? [String: Any])?["emotion"] != nil)
        #expect(events["time"] as? String == "2023-11-14T22:13:20.123Z")
    }

    @Test(
        "MQTT's allowlist narrows the event log: its own deny holds, so does the events output's, and an allow beyond the log adds nothing"
    )
    func mqttNarrowsTheLog() throws {
        var policy = PrivacyPolicy()
        policy.outputs[.events] = PublishedField.defaults.subtracting([.valence])
        policy.outputs[.mqtt] = PublishedField.defaults.union([.box]).subtracting([.zones])
        var mask = PrivacyMask(policy: policy, keys: try PseudonymKeyRing())
        let logged = try mask.mask(visitorEvent(.updated, id: "cam#1#3")).published
        let sent = try #require(
            JSONSerialization.jsonObject(with: try policy.narrowed(logged.json, for: .mqtt)) as? [String: Any])
        let visitor = try #require(sent["visitor"] as? [String: Any])
        #expect(visitor["zones"] == nil && visitor["valence"] == nil && visitor["box"] == nil)
        #expect(visitor["faceId"] as? String == logged.event.visitor.faceId && visitor["emotion"] as? String == "happy")
        #expect(try policy.narrowed(logged.json, for: .events) == logged.json)
        #expect(try PrivacyPolicy().narrowed(logged.json, for: .mqtt) == logged.json, "the defaults send the log as is")
        #expect(throws: (any Error).self, "what is not a visitor event is not forwarded unread") {
            try policy.narrowed(Data(#"{"overall":{"suppressed":true}}"#.utf8), for: .mqtt)
        }
    }

    @Test("log metadata carries the pseudonym, type and zone only")
    func logMetadata() throws {
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        let masked = try mask.mask(visitorEvent(.zoneEntered, id: "cam#1#3")).published
        #expect(Set(masked.logMetadata.keys) == ["face.id", "event.type", "source.id", "zone.id"])
        #expect(masked.logMetadata["face.id"] == masked.event.visitor.faceId)
    }
}

@Suite("Aggregates")
struct AggregateTests {
    /// A zone of the camera `visitorEvent` puts every visitor at.
    func cam(_ name: String) -> ZoneID { ZoneID(sourceId: "cam", name: name) }

    /// `count` visitors, the i-th in `zones[i % zones.count]` and happy.
    func occupancy(_ count: Int, zones: [String?], k: Int = 3) throws -> Occupancy {
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        var occupancy = Occupancy(minGroupSize: k)
        for i in 0..<count {
            var event = visitorEvent(.updated, id: "cam#1#\(i)")
            event.visitor.zone = zones[i % zones.count]
            occupancy.process(try mask.mask(event).published)
        }
        return occupancy
    }

    @Test(
        "a zone count, the total and the emotion mix are suppressed at k-1 visitors and published at k",
        arguments: [2, 3, 5])
    func suppression(k: Int) throws {
        let below = try occupancy(k - 1, zones: ["display"], k: k).snapshot(zones: [cam("display"), cam("counter")])
        #expect(
            below.visitors == .suppressed && below.zones[cam("display")] == .suppressed && below.emotions == .suppressed
        )
        #expect(below.zones[cam("counter")] == .suppressed)
        let at = try occupancy(k, zones: ["display"], k: k).snapshot(zones: [cam("display"), cam("counter")])
        #expect(at.visitors == .value(k, visitors: k) && at.zones[cam("display")] == .value(k, visitors: k))
        #expect(at.emotions == .value(["happy": 1], visitors: k))
        let text = String(decoding: try JSONEncoder.sentinel().encode(below.zones[cam("display")]), as: UTF8.self)
        #expect(text == "{\"suppressed\":true}")
    }

    @Test("a small zone cannot be recovered by subtracting the published zones from the total")
    func complementarySuppression() throws {
        // 4 visitors: 3 at the display, 1 at the counter. Publishing total 4 and display 3 would reveal the 1.
        let snapshot = try occupancy(4, zones: ["display", "display", "display", "counter"]).snapshot(zones: [
            cam("display"), cam("counter"),
        ])
        #expect(snapshot.visitors == .value(4, visitors: 4))
        #expect(snapshot.zones[cam("counter")] == .suppressed && snapshot.zones[cam("display")] == .suppressed)
        // 6 visitors: 3 and 3 are both publishable; nothing is left to infer.
        let even = try occupancy(6, zones: ["display", "counter"]).snapshot(zones: [cam("display"), cam("counter")])
        #expect(
            even.zones[cam("display")] == .value(3, visitors: 3) && even.zones[cam("counter")] == .value(3, visitors: 3)
        )
        // 7 visitors, 3 + 3 in zones and 1 in none: the 1 unexplained visitor could be pointed at, so hide one zone.
        let stray = try occupancy(7, zones: ["display", "counter", "display", "counter", "display", "counter", nil])
            .snapshot(zones: [cam("display"), cam("counter")])
        #expect([stray.zones[cam("display")], stray.zones[cam("counter")]].filter { $0 == .suppressed }.count >= 1)
    }
}

@Suite("Retention")
struct RetentionTests {
    struct Records: RetentionTarget {
        var times: [Date]
        mutating func deleteRecords(olderThan cutoff: Date) throws -> Int {
            let before = times.count
            times.removeAll { $0 < cutoff }
            return before - times.count
        }
        /// 100 bytes a record.
        func storedSize() -> (bytes: Int64, events: Int) { (Int64(times.count) * 100, times.count) }
        /// Logged in the order of `times`.
        mutating func deleteOldest(keeping fraction: Double) -> Int {
            let deleted = times.count - Int((Double(times.count) * fraction).rounded(.down))
            times.removeFirst(deleted)
            return deleted
        }
        /// Runs that gave back what they deleted.
        var reclaimed = 0
        mutating func reclaim() { reclaimed += 1 }
    }

    @Test("deletes exactly the records older than the limit, at most once per interval")
    func deletesOlderThanLimit() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let limit = 30 * 86_400.0
        var records = Records(times: [
            now.addingTimeInterval(-limit - 86_400), now.addingTimeInterval(-limit - 0.001),
            now.addingTimeInterval(-limit),
            now.addingTimeInterval(-limit + 0.001), now.addingTimeInterval(-60), now,
        ])
        var job = RetentionJob(policy: RetentionPolicy())
        #expect(try await job.runIfDue(now: now, on: &records) == .init(byAge: 2))
        #expect(records.times.count == 4 && records.times.min() == now.addingTimeInterval(-limit))
        #expect(records.reclaimed == 1)
        #expect(try await job.runIfDue(now: now.addingTimeInterval(3_599), on: &records) == nil)
        #expect(try await job.runIfDue(now: now.addingTimeInterval(3_600), on: &records) == .init(byAge: 2))
        #expect(records.times.count == 2)
    }

    @Test(
        "beyond the size bound the oldest records go first, whatever their age, down to 90 % of the bound; counted apart"
    )
    func sizeBound() async throws {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        var records = Records(times: (0..<10).reversed().map { now.addingTimeInterval(Double(-$0) * 60) })
        var policy = RetentionPolicy()
        policy.maxBytes = 500
        var job = RetentionJob(policy: policy)
        // 1,000 bytes against 500: 450 kept, the newest 4 (no record is past the age).
        #expect(try await job.runIfDue(now: now, on: &records) == .init(byAge: 0, bySize: 6))
        #expect(records.times.sorted(by: >) == (0..<4).map { now.addingTimeInterval(Double(-$0) * 60) })
        policy.maxBytes = 0
        var unbounded = RetentionJob(policy: policy)
        #expect(try await unbounded.runIfDue(now: now, on: &records) == .init())
        #expect(records.times.count == 4)
    }
}

@Suite("Published dates")
struct PublishedDateTests {
    @Test("written as UTC with milliseconds and read back exactly, across years, leap days and before 1970")
    func roundTrip() throws {
        let samples: [(Double, String)] = [
            (0, "1970-01-01T00:00:00.000Z"), (1_795_255_201.25, "2026-11-21T10:00:01.250Z"),
            (951_782_400.999, "2000-02-29T00:00:00.999Z"), (-1.5, "1969-12-31T23:59:58.500Z"),
            (4_102_444_799.001, "2099-12-31T23:59:59.001Z"),
        ]
        for (seconds, text) in samples {
            #expect(ISO8601.string(from: Date(timeIntervalSince1970: seconds)) == text)
            let read = try #require(ISO8601.date(from: text))
            #expect(abs(read.timeIntervalSince1970 - seconds) < 1e-6, "\(text)")
        }
        // Other forms a client may send: no fraction, more digits, an offset.
        #expect(ISO8601.date(from: "2026-11-21T10:00:01Z")?.timeIntervalSince1970 == 1_795_255_201)
        #expect(
            ISO8601.date(from: "2026-11-21T10:00:01.123456Z").map {
                abs($0.timeIntervalSince1970 - 1_795_255_201.123456) < 1e-6
            } == true)
        #expect(ISO8601.date(from: "2026-11-21T12:00:01+02:00")?.timeIntervalSince1970 == 1_795_255_201)
        // Not dates: out-of-range fields, February 30th, words.
        for text in ["2026-13-45T25:61:00Z", "2026-02-30T00:00:00Z", "yesterday", "2026-11-21T10:00:01.Z", ""] {
            #expect(ISO8601.date(from: text) == nil, "\(text)")
        }
    }
}
