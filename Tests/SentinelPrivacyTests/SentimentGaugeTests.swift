import Foundation
import SentinelCore
import SentinelPrivacy
import SentinelWire
import Testing

@Suite("Sentiment gauge")
struct SentimentGaugeTests {
    let start = Date(timeIntervalSince1970: 1_700_000_000)

    func gauge(k: Int = 3, window: Double = 300, every: Double = 30, stale: Double = 60) -> SentimentGauge {
        var settings = GaugeSettings()
        settings.windowSeconds = window
        settings.publishEverySeconds = every
        settings.staleAfterSeconds = stale
        return SentimentGauge(
            settings: settings, minGroupSize: k, sources: ["cam"],
            zones: [ZoneID(sourceId: "cam", name: "display"), ZoneID(sourceId: "cam", name: "counter")])
    }

    /// A masked `visitor.updated` as the gauge sees it.
    func vote(
        _ id: String, at second: Double, valence: Double, confidence: Double = 1, dwell: Double = 10,
        zone: String? = "display", source: String = "cam",
        emotion: EmotionLabel = .known(.happy)
    ) -> VisitorEvent {
        VisitorEvent(
            type: .updated, time: start.addingTimeInterval(second),
            visitor: VisitorRecord(
                faceId: id, sourceId: source, zone: zone, state: .active, dwellSeconds: dwell, emotion: emotion,
                emotionConfidence: confidence, valence: valence))
    }

    @Test("each vote weighs its emotion confidence times its dwell; the mean valence maps to 0-100")
    func weights() {
        var g = gauge()
        g.record(vote("a", at: 0, valence: 1, confidence: 1, dwell: 10))  // weight 10
        g.record(vote("b", at: 0, valence: -1, confidence: 0.5, dwell: 10))  // weight 5
        g.record(vote("c", at: 0, valence: 0, confidence: 1, dwell: 20))  // weight 20
        // (10 - 5 + 0) / 35 = 0.142857 -> (1.142857) * 50 = 57.1
        let reading = g.reading(now: start.addingTimeInterval(1))
        #expect(reading.overall == .value(.init(score: 57), visitors: 3))
        #expect(reading.overall.value?.label == "neutral")
    }

    @Test(
        "a zone weighs each vote by the time spent in that zone, overall by the visit: a long visit that passed briefly through a zone weighs little there"
    )
    func zonesWeighTimeInThem() {
        var g = gauge(k: 1)
        /// A visitor in `zone` now, after `stays` (seconds in each zone) of a visit `dwell` long.
        func at(_ id: String, _ zone: String, valence: Double, dwell: Double, stays: [String: Double]) -> VisitorEvent {
            var event = vote(id, at: 0, valence: valence, dwell: dwell, zone: zone)
            event.visitor.zones = stays.sorted { $0.key < $1.key }.map { .init(zone: $0.key, dwellSeconds: $0.value) }
            return event
        }
        // At the display: "a" frowned 9 s of a 10 s visit; "b" smiled there 1 s of a 30 s visit, spent at the counter.
        g.record(at("a", "display", valence: -1, dwell: 10, stays: ["display": 9]))
        g.record(at("b", "display", valence: 1, dwell: 30, stays: ["display": 1, "counter": 29]))
        g.record(at("b", "counter", valence: 1, dwell: 30, stays: ["display": 1, "counter": 29]))
        let reading = g.reading(now: start.addingTimeInterval(1))
        // Display: (9 x -1 + 1 x 1) / 10 = -0.8 -> 10; by the visits' dwell it would read (-10 + 30) / 40 = 0.5 -> 75.
        #expect(reading.zones["cam"]?["display"] == .value(.init(score: 10), visitors: 2))
        #expect(reading.zones["cam"]?["counter"] == .value(.init(score: 100), visitors: 1))
        // Overall: by the visits, (10 x -1 + 30 x 1) / 40 = 0.5 -> 75.
        #expect(reading.overall == .value(.init(score: 75), visitors: 2))
    }

    @Test("dwell counts from 1 s up to the window, so a long stay weighs no more than a full window")
    func dwellIsCapped() {
        var g = gauge(window: 60)
        g.record(vote("a", at: 0, valence: 1, dwell: 600))  // capped at 60
        g.record(vote("b", at: 0, valence: -1, dwell: 60))
        g.record(vote("c", at: 0, valence: 0, dwell: 0))  // counts as 1 s
        #expect(g.reading(now: start).overall == .value(.init(score: 50), visitors: 3))
    }

    @Test(
        "one vote per visitor, weighing its readings across the window: ten seconds of frowning and a smile vote frowning"
    )
    func oneVotePerVisitor() {
        var g = gauge(window: 60)
        for second in 0..<10 { g.record(vote("a", at: Double(second), valence: -1)) }
        g.record(vote("a", at: 10, valence: 1))
        g.record(vote("b", at: 10, valence: 1))
        g.record(vote("c", at: 10, valence: 1))
        // a: (10 x -1 + 1) / 11 = -0.818; with b and c at 1: 0.394 -> 70. Three voters, not thirteen.
        #expect(g.reading(now: start.addingTimeInterval(11)).overall == .value(.init(score: 70), visitors: 3))
        // Two readings in one second: the later stands for that second (a: -1 throughout; 0.333 -> 67).
        g.record(vote("a", at: 10.5, valence: -1))
        #expect(g.reading(now: start.addingTimeInterval(11)).overall == .value(.init(score: 67), visitors: 3))
        // Once the frowning seconds leave the window only the later readings vote.
        g.record(vote("a", at: 65, valence: 1))
        g.record(vote("b", at: 65, valence: 1))
        g.record(vote("c", at: 65, valence: 1))
        #expect(g.reading(now: start.addingTimeInterval(71)).overall == .value(.init(score: 100), visitors: 3))
    }

    @Test("fewer voters than k are suppressed, with no value and no count; at k the figure is published")
    func kSuppression() {
        var g = gauge(k: 3)
        g.record(vote("a", at: 0, valence: 1))
        g.record(vote("b", at: 0, valence: 1))
        #expect(g.reading(now: start).overall == .suppressed)
        g.record(vote("c", at: 0, valence: -1))
        #expect(g.reading(now: start).overall.value?.score == 67)
        // Per zone too: two of the three have been at the counter.
        g.record(vote("b", at: 1, valence: 1, zone: "counter"))
        g.record(vote("c", at: 1, valence: -1, zone: "counter"))
        let reading = g.reading(now: start.addingTimeInterval(1))
        #expect(reading.zones["cam"]?["counter"] == .suppressed)
        #expect(reading.overall.value != nil)
    }

    @Test(
        "a zone counts every visitor who was in it during the window, once, with its readings there, not only those still in it"
    )
    func zoneCountsTheWindow() {
        var g = gauge(k: 3, window: 60)
        // Three pass the display one after another and move on to the counter: nobody is ever at the display with
        // two others, yet three were there within the window.
        for (i, id) in ["a", "b", "c"].enumerated() {
            g.record(vote(id, at: Double(i * 10), valence: 0.5, zone: "display"))
            g.record(vote(id, at: Double(i * 10 + 5), valence: -1, zone: "counter"))
        }
        g.record(vote("a", at: 25, valence: 0.2, zone: "display"))
        let reading = g.reading(now: start.addingTimeInterval(30))
        // a's readings there (0.5 and 0.2: 0.35), b's and c's (0.5): weights equal, mean 0.45 -> 72.5 -> 73.
        #expect(reading.zones["cam"]?["display"] == .value(.init(score: 73), visitors: 3))
        #expect(reading.zones["cam"]?["counter"] == .value(.init(score: 0), visitors: 3))
        // Beyond the window, a zone's votes go as the visitors' do.
        #expect(g.reading(now: start.addingTimeInterval(90)).zones["cam"]?["display"] == .suppressed)
    }

    @Test("a label holds within 3 points past its band: a score hovering at 79-80 does not flap between warm and hot")
    func labelHysteresis() {
        // A window of 10 s: each reading is alone in it when the next is ticked.
        var g = gauge(k: 1, window: 10, every: 1)
        func score(_ valence: Double, at second: Double) -> GaugeReading.Level? {
            g.record(vote("a", at: second, valence: valence))
            return g.tick(now: start.addingTimeInterval(second + 1))?.overall.value
        }
        #expect(score(0.6, at: 0) == GaugeReading.Level(score: 80))  // hot
        #expect(score(0.58, at: 10)?.label == "hot", "79 keeps hot")
        #expect(score(0.6, at: 20)?.label == "hot")
        #expect(score(0.54, at: 30)?.label == "hot", "77 keeps hot")
        #expect(score(0.52, at: 40)?.label == "warm", "76 is warm")
        #expect(score(0.6, at: 50)?.label == "warm", "80 keeps warm")
        #expect(score(0.66, at: 60)?.label == "hot", "83 is hot")
    }

    @Test("a hidden camera or zone cannot be had by subtracting published figures from the total around them")
    func complementarySuppression() {
        var g = SentimentGauge(
            settings: GaugeSettings(), minGroupSize: 3, sources: ["cam", "door"],
            zones: [
                ZoneID(sourceId: "cam", name: "display"), ZoneID(sourceId: "cam", name: "counter"),
                ZoneID(sourceId: "door", name: "entrance"),
            ])
        // cam: 4 at the display, 1 at the counter; door: 1 at the entrance. Overall 6.
        for id in ["a", "b", "c", "d"] { g.record(vote(id, at: 0, valence: 1)) }
        g.record(vote("e", at: 0, valence: -1, zone: "counter"))
        g.record(vote("f", at: 0, valence: -1, zone: "entrance", source: "door"))
        let reading = g.reading(now: start)
        #expect(reading.overall == .value(.init(score: 67), visitors: 6))
        // door (1) is below k; publishing cam (5) would give door as 6 - 5, so cam is withheld too.
        #expect(reading.sources["door"] == .suppressed && reading.sources["cam"] == .suppressed)
        // The counter (1) is below k; cam's 5 minus the display's 4 would give it, so the display is withheld too.
        #expect(reading.zones["cam"]?["counter"] == .suppressed && reading.zones["cam"]?["display"] == .suppressed)
        // With a third visitor at the door, every camera figure is k or more and nothing is left to subtract.
        g.record(vote("g", at: 0, valence: 1, zone: "entrance", source: "door"))
        g.record(vote("h", at: 0, valence: 1, zone: "entrance", source: "door"))
        let more = g.reading(now: start)
        #expect(more.sources["door"]?.value != nil && more.sources["cam"]?.value != nil)
        // Inside cam (5): the display (4) would give the counter (1) as 5 - 4: withheld.
        #expect(more.zones["cam"]?["display"] == .suppressed && more.zones["door"]?["entrance"]?.value != nil)
    }

    @Test("votes older than the window no longer count")
    func window() {
        var g = gauge(window: 60)
        g.record(vote("a", at: 0, valence: -1))
        g.record(vote("b", at: 30, valence: 1))
        g.record(vote("c", at: 30, valence: 1))
        g.record(vote("d", at: 30, valence: 1))
        #expect(g.reading(now: start.addingTimeInterval(60)).overall == .value(.init(score: 75), visitors: 4))
        #expect(g.reading(now: start.addingTimeInterval(61)).overall == .value(.init(score: 100), visitors: 3))
        #expect(g.reading(now: start.addingTimeInterval(91)).overall == .suppressed)
    }

    @Test("visitors whose emotion is unknown or not measured do not vote, but keep the reading fresh")
    func unknownDoesNotVote() {
        var g = gauge(stale: 60)
        for id in ["a", "b", "c"] { g.record(vote(id, at: 0, valence: 0, confidence: 0, emotion: .unknown)) }
        let reading = g.reading(now: start.addingTimeInterval(10))
        #expect(reading.overall == .suppressed && !reading.stale)
        #expect(g.reading(now: start.addingTimeInterval(61)).stale)
    }

    @Test("a reading is flagged stale when nobody was seen for staleAfterSeconds, and before anyone is")
    func stale() {
        var g = gauge(stale: 60)
        #expect(g.reading(now: start).stale)
        for id in ["a", "b", "c"] { g.record(vote(id, at: 0, valence: 1)) }
        #expect(!g.reading(now: start.addingTimeInterval(60)).stale)
        let later = g.reading(now: start.addingTimeInterval(61))
        #expect(later.stale && later.overall.value?.score == 100)
    }

    @Test(
        "a reading is published when it changes meaningfully (a figure shown, a label, a score moved 5 points) and every publishEverySeconds, not on every small move"
    )
    func aggregation() {
        var g = gauge(every: 30)
        #expect(g.tick(now: start) != nil)
        #expect(g.tick(now: start.addingTimeInterval(1)) == nil)
        for id in ["a", "b", "c"] { g.record(vote(id, at: 2, valence: 1)) }
        #expect(g.tick(now: start.addingTimeInterval(2))?.overall.value?.score == 100, "shown: at once")
        #expect(g.tick(now: start.addingTimeInterval(31)) == nil)
        #expect(g.tick(now: start.addingTimeInterval(32)) != nil, "30 s on")
        g.record(vote("d", at: 33, valence: 0.9))  // 100 -> 99: a visitor more, a point less
        #expect(g.tick(now: start.addingTimeInterval(33)) == nil, "a small move waits")
        g.record(vote("e", at: 34, valence: 0))  // mean 3.9 / 5 -> 89
        #expect(g.tick(now: start.addingTimeInterval(34))?.overall.value?.score == 89, "5 points or more: at once")
    }

    @Test(
        "scores have words: cold, cool, neutral, warm, hot",
        arguments: [
            (0, "cold"), (19, "cold"), (20, "cool"), (39, "cool"), (40, "neutral"), (59, "neutral"), (60, "warm"),
            (79, "warm"), (80, "hot"), (100, "hot"),
        ])
    func labels(score: Int, label: String) {
        #expect(GaugeReading.Level(score: score).label == label)
    }
}
