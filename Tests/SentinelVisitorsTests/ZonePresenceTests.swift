import SentinelCore
import SentinelVisitors
import SentinelWire
import Testing

@Suite("Zones with hysteresis")
struct ZonePresenceTests {
    let square = Polygon([Point(x: 100, y: 100), Point(x: 300, y: 100), Point(x: 300, y: 300), Point(x: 100, y: 300)])

    @Test("jitter across a zone edge neither enters a visitor outside nor exits one inside")
    func flicker() {
        var presence = ZonePresence(zones: [
            ZoneDefinition(name: "display", polygon: square, inertia: .seconds(0.3), grace: .seconds(0.5))
        ])
        var changes: [ZonePresence.Change] = []
        // Outside near the edge, one frame in four detected just inside: never enters.
        for i in 0..<30 { changes += presence.observe(Point(x: i % 4 == 3 ? 102 : 98, y: 200), at: at(i)) }
        #expect(changes.isEmpty)
        // Then inside for good: enters once, at its first frame inside.
        for i in 30..<45 { changes += presence.observe(Point(x: 150, y: 200), at: at(i)) }
        // Inside near the edge, one frame in four detected just outside: never exits.
        for i in 45..<90 { changes += presence.observe(Point(x: i % 4 == 3 ? 302 : 298, y: 200), at: at(i)) }
        #expect(changes == [.entered(.init(zone: "display", entered: at(30), exited: nil))])
    }

    @Test("inertia delays the event, not the stay: it starts at the first frame inside")
    func entryTimeIsExact() {
        var presence = ZonePresence(zones: [
            ZoneDefinition(name: "z", polygon: square, inertia: .frames(5), grace: .frames(5))
        ])
        var changes: [(Int, ZonePresence.Change)] = []
        for i in 0..<30 {
            let x = i < 10 ? 50.0 : (i < 20 ? 200 : 50)
            changes += presence.observe(Point(x: x, y: 200), at: at(i)).map { (i, $0) }
        }
        #expect(changes.map(\.0) == [14, 24])
        #expect(changes[1].1 == .exited(.init(zone: "z", entered: at(10), exited: at(20))))
    }

    @Test("stays in one zone during a visit add up; overlapping zones count separately")
    func reentryAddsUp() {
        let right = Polygon([
            Point(x: 200, y: 100), Point(x: 400, y: 100), Point(x: 400, y: 300), Point(x: 200, y: 300),
        ])
        var presence = ZonePresence(zones: [
            ZoneDefinition(name: "a", polygon: square, inertia: .frames(1), grace: .frames(1)),
            ZoneDefinition(name: "b", polygon: right, inertia: .frames(1), grace: .frames(1)),
        ])
        // 0-1 s in a only, 1-2 s in both (x 250), 2-3 s outside, 3-4 s in a only.
        for i in 0..<60 {
            let x: Double = i < 15 ? 150 : (i < 30 ? 250 : (i < 45 ? 50 : 150))
            _ = presence.observe(Point(x: x, y: 200), at: at(i))
        }
        #expect(presence.currentZone == "a")
        let dwell = Dictionary(uniqueKeysWithValues: presence.dwell(now: at(60)).map { ($0.zone, $0.seconds) })
        #expect(dwell["a"] == 3.0)
        #expect(dwell["b"] == 1.0)
    }

    @Test("dwell comes from timestamps, not frame counts: dropped frames do not shorten it")
    func dwellFromTimestamps() {
        var presence = ZonePresence(zones: [
            ZoneDefinition(name: "z", polygon: square, inertia: .seconds(0), grace: .seconds(0))
        ])
        // Frames at irregular times (a camera dropping frames) inside from 1.0 s to 4.0 s.
        let times: [Double] = [0, 1.0, 1.1, 2.7, 2.75, 3.9, 4.0, 4.5]
        for t in times { _ = presence.observe(Point(x: t >= 1 && t < 4 ? 200 : 50, y: 200), at: MediaTime(seconds: t)) }
        #expect(presence.dwell(now: MediaTime(seconds: 5)).first?.seconds == 3.0)
    }

    @Test("the current zone is the most recently entered one; a staff zone turns emotion off")
    func currentZoneAndEmotionPolicy() {
        let staff = Polygon([
            Point(x: 250, y: 150), Point(x: 280, y: 150), Point(x: 280, y: 250), Point(x: 250, y: 250),
        ])
        var presence = ZonePresence(zones: [
            ZoneDefinition(name: "floor", polygon: square, inertia: .frames(1), grace: .frames(1)),
            ZoneDefinition(name: "staff", polygon: staff, inertia: .frames(1), grace: .frames(1), emotion: false),
        ])
        _ = presence.observe(Point(x: 150, y: 200), at: at(0))
        #expect(presence.currentZone == "floor" && presence.allowsEmotion(at: Point(x: 150, y: 200)))
        // Inside the staff polygon, emotion is off even before the entry is confirmed...
        #expect(!presence.allowsEmotion(at: Point(x: 260, y: 200)))
        _ = presence.observe(Point(x: 260, y: 200), at: at(1))
        #expect(presence.currentZone == "staff" && !presence.allowsEmotion(at: Point(x: 260, y: 200)))
        // ...and stays off while the exit awaits its grace.
        #expect(!presence.allowsEmotion(at: Point(x: 150, y: 200)))
    }
}
