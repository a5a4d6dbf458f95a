import Foundation
import SentinelCore
import SentinelPrivacy
import SentinelWire
import Testing

@Suite("Events from outside: one check where they enter, and arithmetic after it that cannot trap")
struct EventCheckTests {
    static let now = Date(timeIntervalSince1970: 1_790_000_000)
    var now: Date { Self.now }
    let check = EventCheck(timeResolution: 1)

    func event(_ change: (inout VisitorEvent) -> Void = { _ in }) -> VisitorEvent {
        var event = VisitorEvent(
            type: .updated, time: now,
            visitor: VisitorRecord(
                faceId: "abcdefghijklmnop", sourceId: "showroom", zone: "display", state: .active,
                zones: [.init(zone: "display", dwellSeconds: 8)], dwellSeconds: 10,
                firstSeen: now.addingTimeInterval(-10), lastSeen: now, emotion: .known(.happy),
                emotionConfidence: 0.9, emotionDistribution: ["happy": 0.9, "neutral": 0.1], valence: 1))
        change(&event)
        return event
    }

    @Test("an event as a box publishes it passes, also as a fleet stores it (site:pseudonym, site/source)")
    func passes() throws {
        try check.validate(event())
        try check.validate(
            event {
                $0.visitor.faceId = "lab:abcdefghijklmnop"
                $0.visitor.sourceId = "lab/showroom"
            })
        // Published times are rounded down to the resolution, the dwell is not: it may exceed their span by that.
        try check.validate(event { $0.visitor.dwellSeconds = 10.9 })
    }

    static let refusals: [(String, InvalidEvent.Reason, @Sendable (inout VisitorEvent) -> Void)] = [
        ("valence 1e308", .number, { $0.visitor.valence = 1e308 }),
        ("valence below -1", .number, { $0.visitor.valence = -1.5 }),
        ("confidence 1e308", .number, { $0.visitor.emotionConfidence = 1e308 }),
        ("confidence NaN", .number, { $0.visitor.emotionConfidence = .nan }),
        ("confidence infinite", .number, { $0.visitor.emotionConfidence = .infinity }),
        ("a probability above 1", .number, { $0.visitor.emotionDistribution = ["happy": 2] }),
        ("an expression nobody knows", .name, { $0.visitor.emotionDistribution = ["joy": 1] }),
        ("detection score 7", .number, { $0.visitor.detectionScore = 7 }),
        ("media time negative", .number, { $0.mediaTime = -1 }),
        ("a box at 1e300", .number, { $0.visitor.box = Box(x: 1e300, y: 0, width: 1, height: 1) }),
        ("dwell 1e308", .number, { $0.visitor.dwellSeconds = 1e308 }),
        ("dwell negative", .number, { $0.visitor.dwellSeconds = -1 }),
        ("dwell longer than the visit", .time, { $0.visitor.dwellSeconds = 60 }),
        (
            "a month's dwell without times", .number,
            {
                $0.visitor.firstSeen = nil
                $0.visitor.dwellSeconds = 32 * 86_400
            }
        ),
        ("last seen before first seen", .time, { $0.visitor.lastSeen = $0.visitor.firstSeen?.addingTimeInterval(-1) }),
        (
            "a zone's dwell longer than the visit's", .time,
            { $0.visitor.zones = [.init(zone: "display", dwellSeconds: 30)] }
        ),
        (
            "a stay's dwell longer than the stay", .time,
            {
                $0.stay = .init(
                    zone: "display", enteredAt: Self.now, exitedAt: Self.now.addingTimeInterval(5), dwellSeconds: 1e6)
            }
        ),
        (
            "a stay that ends before it begins", .time,
            {
                $0.stay = .init(
                    zone: "display", enteredAt: Self.now, exitedAt: Self.now.addingTimeInterval(-5), dwellSeconds: 0)
            }
        ),
        (
            "a faceId with a name and an address", .faceId,
            {
                $0.visitor.faceId = "Jane Doe <jane@example.com> +33 6 12 34 56 78"
            }
        ),
        ("a faceId of 17 characters", .faceId, { $0.visitor.faceId = "abcdefghijklmnopq" }),
        ("a faceId in upper case", .faceId, { $0.visitor.faceId = "ABCDEFGHIJKLMNOP" }),
        ("a faceId with a site that is not a name", .faceId, { $0.visitor.faceId = "<b>:abcdefghijklmnop" }),
        ("a zone of HTML", .name, { $0.visitor.zone = "<img src=x onerror=alert(1)>" }),
        ("a zone that breaks a CSV row", .name, { $0.visitor.zone = "a,b\r\nINJECTED,row" }),
        ("a zone that is a spreadsheet formula", .name, { $0.visitor.zone = "=HYPERLINK(\"http://x\",\"y\")" }),
        ("a zone of 65 characters", .name, { $0.visitor.zone = String(repeating: "z", count: 65) }),
        ("a stay's zone of HTML", .name, { $0.stay = .init(zone: "<b>", enteredAt: Self.now) }),
        ("a source of three parts", .name, { $0.visitor.sourceId = "a/b/c" }),
    ]

    @Test("each hostile value is refused with its reason and field, and the message never repeats the value")
    func refusals() {
        for (what, reason, change) in Self.refusals {
            let error = #expect(throws: InvalidEvent.self, "\(what)") { try check.validate(event(change)) }
            #expect(error?.reason == reason, "\(what): \(String(describing: error))")
            for hostile in ["1e+308", "Jane", "<img", "INJECTED", "HYPERLINK"] {
                #expect(error?.description.contains(hostile) == false, "\(what): \(String(describing: error))")
            }
        }
    }

    @Test("a gauge reading from a site: scores in 0...100, counts not negative, names by the rule")
    func readings() throws {
        let good = GaugeReading(
            time: now, overall: .value(.init(score: 70), visitors: 5), sources: ["showroom": .suppressed],
            zones: ["showroom": ["display": .suppressed]], stale: false, windowSeconds: 300)
        try check.validate(good)
        var bad = good
        bad.overall = .value(.init(score: Int.max), visitors: 5)
        #expect(throws: InvalidEvent.self) { try check.validate(bad) }
        bad = good
        bad.zones = ["showroom": ["=1+1": .suppressed]]
        #expect(throws: InvalidEvent.self) { try check.validate(bad) }
        bad = good
        bad.windowSeconds = .infinity
        #expect(throws: InvalidEvent.self) { try check.validate(bad) }
    }

    /// Values that broke arithmetic before: extremes, infinities, NaN, and the largest integers.
    static let extremes: [Double] = [
        1e308, -1e308, .infinity, -.infinity, .nan, .greatestFiniteMagnitude, -.greatestFiniteMagnitude, 1e-308, 0, 1,
        -1, 0.5, 9.2e18, -9.2e18,
    ]

    @Test("the gauge, occupancy and reports take any value unchecked without trapping, and their answers encode")
    func noTrap() throws {
        var random = SystemRandomNumberGenerator()
        var gauge = SentimentGauge(
            settings: GaugeSettings(), minGroupSize: 1, sources: ["showroom"],
            zones: [ZoneID(sourceId: "showroom", name: "display")])
        var stays: [ReportBuilder.Stay] = []
        var moods: [(time: Date, overall: Aggregate<GaugeReading.Level>)] = []
        for i in 0..<2_000 {
            let event = event {
                $0.visitor.faceId = "v\(i % 50)"
                $0.visitor.valence = Self.extremes.randomElement(using: &random)
                $0.visitor.emotionConfidence = Self.extremes.randomElement(using: &random)
                $0.visitor.dwellSeconds = Self.extremes.randomElement(using: &random)
                $0.time = now.addingTimeInterval(Double(i) * 0.1)
            }
            gauge.record(event)
            if let reading = gauge.tick(now: event.time) {
                _ = try JSONEncoder.sentinel().encode(reading)
                moods.append((reading.time, reading.overall))
            }
            let dwell = Self.extremes.randomElement(using: &random)
            stays.append(
                .init(
                    faceId: "v\(i % 50)", sourceId: "showroom", zone: "display", enteredAt: event.time,
                    exitedAt: event.time.addingTimeInterval(1), dwellSeconds: dwell))
            let score = [Int.max, Int.min, 0, 100, -1, 101].randomElement(using: &random)!
            moods.append((event.time, .value(GaugeReading.Level(score: score), visitors: Int.max)))
        }
        for valence in Self.extremes {
            let level = GaugeReading.Level(valence: valence)
            #expect((0...100).contains(level.score))
        }
        var occupancy = Occupancy(minGroupSize: 1)
        // No masked event carries a number JSON cannot (the mask stops rather than make one): the largest finite.
        occupancy.process(PrivacyPolicy().forwarded(event { $0.visitor.valence = -1e308 }).published)
        _ = occupancy.snapshot(zones: [ZoneID(sourceId: "showroom", name: "display")])
        let visits = (0..<50).map {
            ReportBuilder.Visit(
                faceId: "v\($0)", sourceId: "showroom", firstSeen: now, lastSeen: now.addingTimeInterval(300))
        }
        let report = ReportBuilder(minGroupSize: 1, timeZone: TimeZone(identifier: "UTC")!).report(
            from: now.addingTimeInterval(-3_600), to: now.addingTimeInterval(3_600), bucket: .hour,
            zones: [ZoneID(sourceId: "showroom", name: "display")], visits: visits, stays: stays, moods: moods)
        _ = try JSONEncoder.sentinel().encode(report)
    }

    @Test(
        "present visitors page in order of arrival: 30,000 present (22.6 MB in one answer before), paged by 1,000 while some leave and others arrive: each visitor present throughout is on exactly one page, newcomers on later ones"
    )
    func presentPages() throws {
        var occupancy = Occupancy(minGroupSize: 1)
        func visit(_ n: Int, _ type: VisitorEvent.Kind = .updated) {
            occupancy.process(
                PrivacyPolicy().forwarded(
                    event {
                        $0.type = type
                        $0.visitor.faceId = "v\(n)"
                    }
                ).published)
        }
        for n in 0..<30_000 { visit(n) }
        var seen: [String] = []
        var after = 0
        var pages = 0
        while true {
            let page = occupancy.visitors(after: after, limit: 1_000)
            #expect(page.records.count <= 1_000)
            seen += page.records.map(\.faceId)
            pages += 1
            // Between pages: one leaves from further on, one arrives.
            visit(29_999 - pages, .exited)
            visit(30_000 + pages)
            guard let next = page.next else { break }
            after = next
        }
        #expect(Set(seen).count == seen.count, "a visitor on two pages")
        let leftEarly = Set((1...pages).map { "v\(29_999 - $0)" })
        let stayed = (0..<30_000).map { "v\($0)" }.filter { !leftEarly.contains($0) }
        #expect(Set(stayed).isSubset(of: Set(seen)), "a visitor present throughout missed")
        #expect(seen.contains("v30001"), "a newcomer is on a later page")
        #expect(occupancy.visitors().records.count == 30_000)
    }
}
