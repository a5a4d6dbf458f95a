import Foundation
import SentinelCore
import SentinelVisitors
import SentinelWire
import Testing

@Suite("Visitor stage: events, dwell and emotion")
struct VisitorStageTests {
    let origin = Date(timeIntervalSince1970: 1_800_000_000)
    let display = ZoneDefinition(
        name: "display",
        polygon: Polygon([Point(x: 200, y: 0), Point(x: 400, y: 0), Point(x: 400, y: 480), Point(x: 200, y: 480)]))
    // Readings as an uncalibrated model gives them: each expression's valence its own.
    let happy = EmotionCalibration.identity.reading([0.02, 0.01, 0.02, 0.85, 0.03, 0.03, 0.04])
    let angry = EmotionCalibration.identity.reading([0.8, 0.05, 0.05, 0.02, 0.03, 0.02, 0.03])

    /// A visitor walking in from x 100, standing in the display zone from 2 s to 6 s, walking out, gone at 8 s.
    func walk(_ i: Int, fps: Double) -> [Detection] {
        let t = Double(i) / fps
        guard t < 8 else { return [] }
        let x = t < 2 ? 100 + t * 100 : (t < 6 ? 300 : 300 + (t - 6) * 200)
        return [face(x, 240, side: 80)]
    }

    func events(fps: Double, seconds: Double = 12, classify: (Detection) -> EmotionReading? = { _ in nil })
        -> [VisitorEvent]
    {
        var stage = VisitorStage(sourceID: "floor", origin: origin, zones: [display])
        var all: [VisitorEvent] = []
        for i in 0..<Int(seconds * fps) {
            all +=
                stage.process(
                    time: MediaTime(seconds: Double(i) / fps), detections: walk(i, fps: fps), classify: classify
                ).events
        }
        return all + stage.finish(reason: .endOfStream)
    }

    @Test("a visit yields entered, zone entered, updates, zone exited with its dwell, exited with totals")
    func eventSequence() throws {
        let all = events(fps: 15)
        let kinds = all.map(\.type).filter { $0 != .updated }
        #expect(kinds == [.entered, .zoneEntered, .zoneExited, .exited])
        #expect(all.filter { $0.type == .updated }.count >= 6)
        let exit = try #require(all.first { $0.type == .zoneExited })
        // Centre enters x 200 at t = 1 s; leaves x 400 at t = 6.5 s.
        #expect(abs((exit.stay?.dwellSeconds ?? 0) - 5.5) <= 1 / 15.0 + 1e-9)
        let final = try #require(all.last)
        #expect(final.reason == .lost && final.visitor.state == .exited)
        #expect(abs((final.visitor.dwellSeconds ?? -1) - (7 + 14 / 15.0)) < 1e-6)
        #expect(final.visitor.firstSeen == origin)
    }

    @Test(
        "a detection or an emotion reading that is not a finite number is passed over: the visit is the same, and every event encodes"
    )
    func nonFiniteNumbers() throws {
        let clean = events(fps: 15, classify: { _ in self.happy })
        var stage = VisitorStage(sourceID: "floor", origin: origin, zones: [display])
        var all: [VisitorEvent] = []
        let broken = EmotionReading(probabilities: [.nan, 0, 0, 1, 0, 0, 0], valence: .infinity)
        var readings = 0
        for i in 0..<(12 * 15) {
            // A NaN face beside the visitor in every frame, and every other reading broken.
            let detections = walk(i, fps: 15) + [Detection(box: Box(x: .nan, y: 10, width: 50, height: 50), score: 0.9)]
            all +=
                stage.process(
                    time: MediaTime(seconds: Double(i) / 15), detections: detections,
                    classify: { _ in
                        readings += 1
                        return readings.isMultiple(of: 2) ? broken : self.happy
                    }
                ).events
        }
        all += stage.finish(reason: .endOfStream)
        #expect(all.map(\.type) == clean.map(\.type))
        #expect(all.last?.visitor.dwellSeconds == clean.last?.visitor.dwellSeconds)
        #expect(all.contains { $0.visitor.emotion == .known(.happy) })
        for event in all { _ = try JSONEncoder.sentinel().encode(event) }
    }

    @Test(
        "a source without frames for longer than the visit timeout ends the visit when it was last seen; the face after the gap is a new visit, and a shorter gap continues the visit as an occlusion does",
        arguments: [(gap: 4.0, visits: 2), (gap: 1.0, visits: 1)])
    func blindGap(gap: Double, visits: Int) throws {
        var stage = VisitorStage(sourceID: "floor", origin: origin, zones: [display])
        var all: [VisitorEvent] = []
        let frames = (0..<75).map { Double($0) / 15 } + (0..<15).map { 5 + gap + Double($0) / 15 }
        for t in frames {
            all +=
                stage.process(time: MediaTime(seconds: t), detections: [face(300, 240, side: 80)]) { _ in nil }
                .events
        }
        all += stage.finish(reason: .endOfStream)
        let exits = all.filter { $0.type == .exited }
        #expect(exits.count == visits, "\(exits.map(\.visitor.faceId))")
        let first = try #require(exits.first)
        let lastBeforeGap = origin.addingTimeInterval(74 / 15)
        if visits == 2 {
            let lastSeen = try #require(first.visitor.lastSeen)
            #expect(abs(lastSeen.timeIntervalSince(lastBeforeGap)) < 1e-6 && first.reason == .lost)
            #expect(abs((first.visitor.dwellSeconds ?? 0) - 74 / 15) < 1e-6)
            // Its zone stay closes with it, not after the gap, and is no longer than the visit.
            let stay = try #require(all.first { $0.type == .zoneExited && $0.visitor.faceId == first.visitor.faceId })
            #expect(abs((stay.stay?.exitedAt ?? .distantFuture).timeIntervalSince(lastBeforeGap)) < 1e-6)
            #expect((stay.stay?.dwellSeconds ?? .infinity) <= (first.visitor.dwellSeconds ?? 0) + 1e-9)
        } else {
            let lastSeen = try #require(first.visitor.lastSeen)
            #expect(abs(lastSeen.timeIntervalSince(origin.addingTimeInterval(5 + gap + 14 / 15))) < 1e-6)
        }
    }

    @Test("dwell does not depend on the frame rate beyond one frame interval")
    func frameRateInvariance() throws {
        func dwell(_ fps: Double) throws -> Double {
            try #require(events(fps: fps).first { $0.type == .zoneExited }?.stay?.dwellSeconds)
        }
        let difference = abs(try dwell(10) - dwell(30))
        #expect(difference <= 0.1 + 1e-9)
    }

    @Test("analysis at a third of the frame rate (two frames in three carried) gives the same visit and dwell")
    func carriedFrames() throws {
        func run(every: Int) -> [VisitorEvent] {
            var stage = VisitorStage(sourceID: "floor", origin: origin, zones: [display])
            var all: [VisitorEvent] = []
            for i in 0..<(12 * 15) {
                let time = MediaTime(seconds: Double(i) / 15)
                if i % every == 0 {
                    all += stage.process(time: time, detections: walk(i, fps: 15), classify: { _ in nil }).events
                } else {
                    // Carrying changes nothing: it only says where the visitors are.
                    let carried = stage.carry(time: time)
                    #expect(carried.events.isEmpty && carried.observed.isEmpty)
                }
            }
            return all + stage.finish(reason: .endOfStream)
        }
        let full = run(every: 1)
        let third = run(every: 3)
        let visits = [full, third].map { events in events.filter { $0.type == .entered }.count }
        #expect(visits == [1, 1])
        let dwell: [Double] = [full, third].map { events in
            events.last { $0.type == .exited }?.visitor.dwellSeconds ?? -1
        }
        let tolerance: Double = 3 / 15.0 + 1e-9
        #expect(abs(dwell[0] - dwell[1]) <= tolerance)
        let stays: [Double] = [full, third].map { events in
            events.first { $0.type == .zoneExited }?.stay?.dwellSeconds ?? -1
        }
        #expect(abs(stays[0] - stays[1]) <= tolerance)
    }

    /// A stage that has followed the walk for its first second, every frame detected.
    func walkedForOneSecond() -> VisitorStage {
        var stage = VisitorStage(sourceID: "floor", origin: origin, zones: [display])
        for i in 0..<15 {
            _ = stage.process(
                time: MediaTime(seconds: Double(i) / 15), detections: walk(i, fps: 15), classify: { _ in nil })
        }
        return stage
    }

    @Test("a tracked visitor between two detections is carried where its motion leads, for the review video's masks")
    func carryPredictsPosition() throws {
        let stage = walkedForOneSecond()
        let carried = stage.carry(time: MediaTime(seconds: 15.5 / 15))
        let face = try #require(carried.predicted.first)
        #expect(carried.predicted.count == 1 && face.unseenSeconds > 0)
        // Walking right at 100 px/s: the carried box reaches past the last detection.
        let lastDetectedRightEdge: Double = 100 + 14 / 15.0 * 100 + 40
        #expect(face.box.maxX > lastDetectedRightEdge)
    }

    @Test("between two detections a visitor seen at the last one is carried as a position, scored like a detection")
    func carriedPosition() throws {
        var stage = walkedForOneSecond()
        let carried = stage.carry(time: MediaTime(seconds: 16 / 15.0))
        let position = try #require(carried.carried.first)
        // Where the walk (100 px/s from x 100) really is two frames later, to the pixel the velocity allows.
        #expect(carried.carried.count == 1 && abs(position.box.center.x - (100 + 16 / 15.0 * 100)) < 2)
        #expect(position.box.width == 80)
        // A visitor missing from the last detection is not placed: where it is, the tracker does not know.
        _ = stage.process(time: MediaTime(seconds: 1), detections: [], classify: { _ in nil })
        #expect(stage.carry(time: MediaTime(seconds: 16 / 15.0)).carried.isEmpty)
    }

    @Test("the tracker is unsure of a face while it is unconfirmed or missing, and of none while every face is seen")
    func unsure() {
        var stage = VisitorStage(sourceID: "floor", origin: origin, zones: [display])
        var asked: [Bool] = []
        for i in 0..<20 {
            let detections = (10..<13).contains(i) ? [] : walk(i, fps: 15)
            _ = stage.process(time: MediaTime(seconds: Double(i) / 15), detections: detections, classify: { _ in nil })
            let unsure = stage.unsure(time: MediaTime(seconds: Double(i + 1) / 15))
            asked.append(!unsure.isEmpty)
            if i == 11 {
                // Where the missing face may be: from where it was last seen (frame 9) to where it would be now.
                let seen = walk(9, fps: 15)[0].box
                let now = walk(12, fps: 15)[0].box
                #expect(unsure.count == 1 && unsure[0].union(seen) == unsure[0])
                #expect(unsure.count == 1 && abs(unsure[0].maxX - now.maxX) < 2, "\(unsure) \(now)")
            }
        }
        // Tentative for frames 0-1, confirmed at frame 2, missing for frames 10-12, seen again at 13.
        #expect(asked[0..<2].allSatisfy { $0 })
        #expect(asked[2..<10].allSatisfy { !$0 })
        #expect(asked[10..<13].allSatisfy { $0 })
        #expect(asked[13...].allSatisfy { !$0 })
    }

    @Test("emotion is classified at most maxPerSecond times per visitor per media second")
    func emotionRate() {
        var calls = 0
        _ = events(fps: 30, seconds: 4) { _ in
            calls += 1
            return self.happy
        }
        // 4 s of detections at 30 fps would be 120 calls; at 1.5 per second, 6 or 7.
        #expect((6...7).contains(calls), "\(calls) classifications")
    }

    @Test(
        "the same detections run twice give byte-identical events: the stage keeps nothing outside itself (replay-speed invariance is ReplayTests' real-time against fastest)"
    )
    func deterministic() throws {
        let encoder = JSONEncoder.sentinel()
        #expect(try encoder.encode(events(fps: 15)) == encoder.encode(events(fps: 15)))
    }

    @Test("one angry reading among happy ones does not change the smoothed emotion")
    func smoothing() throws {
        var reading = 0
        let all = events(fps: 15) { _ in
            reading += 1
            return reading == 5 ? angry : happy
        }
        // Known once three readings are in (at 1.5 a second); from then on happy throughout.
        let known = all.filter { $0.type == .updated && $0.visitor.emotion != nil }
        #expect(known.count >= 5 && reading >= 10)
        #expect(known.allSatisfy { $0.visitor.emotion == .known(.happy) })
        // Happy alone reads 0.80. The angry reading (valence -0.90), 2/3 s after the last, weighs
        // 1 - e^(-(2/3) / 2) = 0.28: 0.80 - 0.28 x 1.70 = 0.32 at the lowest, happy still the likeliest.
        let lowest = known.compactMap(\.visitor.valence).min() ?? 0
        #expect(lowest > 0.3 && lowest < 0.4, "\(lowest)")
    }

    @Test("emotion stays unknown with too few samples or too little confidence")
    func unknownRule() {
        var smoother = EmotionSmoother(settings: EmotionSettings())
        smoother.add(happy, at: at(0))
        smoother.add(happy, at: at(1))
        #expect(smoother.dominant.emotion == nil)
        smoother.add(happy, at: at(2))
        #expect(smoother.dominant.emotion == .happy)
        var unsure = EmotionSmoother(settings: EmotionSettings())
        for i in 0..<10 {
            unsure.add(EmotionCalibration.identity.reading([0.2, 0.1, 0.1, 0.2, 0.1, 0.1, 0.2]), at: at(i))
        }
        #expect(unsure.dominant.emotion == nil && unsure.valence == 0)
    }

    @Test(
        "a reading dt seconds after the last weighs 1 - exp(-dt / timeConstantSeconds): half after 0.69 time constants")
    func smoothingTimeConstant() throws {
        var settings = EmotionSettings()
        settings.timeConstantSeconds = 2
        var smoother = EmotionSmoother(settings: settings)
        smoother.add(angry, at: .zero)
        smoother.add(happy, at: MediaTime(seconds: 0.5))
        // 1 - e^(-0.25) = 0.2212: the happy reading a quarter of the way in.
        let weight = 1 - exp(-0.25)
        for (index, value) in smoother.distribution.enumerated() {
            let expected =
                angry.probabilities[index] + weight * (happy.probabilities[index] - angry.probabilities[index])
            #expect(abs(value - expected) < 1e-12, "expression \(index): \(value), expected \(expected)")
        }
        // After ln 2 time constants a new reading weighs exactly half.
        var half = EmotionSmoother(settings: settings)
        half.add(angry, at: .zero)
        half.add(happy, at: MediaTime(seconds: 2 * log(2)))
        #expect(abs(half.distribution[3] - (angry.probabilities[3] + happy.probabilities[3]) / 2) < 1e-6)
        // Readings at one instant do not move it (dt 0 weighs nothing).
        var same = EmotionSmoother(settings: settings)
        same.add(angry, at: .zero)
        same.add(happy, at: .zero)
        #expect(same.distribution == angry.probabilities)
    }

    /// A stage whose only zone is the display with emotion off, as a staff area.
    func staffStage() -> VisitorStage {
        var staff = display
        staff.emotion = false
        return VisitorStage(sourceID: "floor", origin: origin, zones: [staff])
    }

    @Test("a zone with emotion off is never classified")
    func staffZone() {
        var stage = staffStage()
        var calls: [Double] = []
        for i in 0..<120 {
            _ = stage.process(time: at(i), detections: walk(i, fps: 15)) { face in
                calls.append(face.box.center.x)
                return nil
            }
        }
        #expect(!calls.isEmpty)
        // Calls happen only outside the zone, and not during the exit's grace (0.5 s = 100 px).
        #expect(calls.allSatisfy { $0 < 200 || $0 > 500 })
    }

    @Test("in a zone with emotion off a visitor carries no emotion, not the one measured before it; after, it does")
    func staffZonePublishesNoEmotion() {
        var stage = staffStage()
        var events: [VisitorEvent] = []
        for i in 0..<(12 * 15) {
            events += stage.process(time: at(i), detections: walk(i, fps: 15)) { _ in self.happy }.events
        }
        events += stage.finish(reason: .endOfStream)
        let inside = events.filter { $0.visitor.zone == "display" }
        #expect(inside.count >= 3)
        #expect(
            inside.allSatisfy { $0.visitor.emotion == nil && $0.visitor.emotionDistribution == nil })
        // Not measured is absent, never a zero that reads as a measurement.
        #expect(inside.allSatisfy { $0.visitor.valence == nil && $0.visitor.emotionConfidence == nil })
        // Measured on the way in, and published again once the visitor has left the zone.
        #expect(
            events.contains { $0.visitor.zone == nil && $0.visitor.emotion == .known(.happy) && $0.type == .updated })
        #expect(events.last { $0.type == .exited }?.visitor.emotion == .known(.happy))
    }
}
