public import SentinelCore
public import SentinelWire

/// A named area of one source's frame.
public struct ZoneDefinition: Sendable, Equatable {
    public var name: String
    /// In pixels of the source's frames.
    public var polygon: Polygon
    /// How long a visitor must be seen inside before it counts as entered.
    public var inertia: Hysteresis
    /// How long a visitor must be seen outside before it counts as exited.
    public var grace: Hysteresis
    /// Whether emotion is measured in this zone (off for staff areas).
    public var emotion: Bool

    public init(
        name: String, polygon: Polygon, inertia: Hysteresis = .seconds(0.3), grace: Hysteresis = .seconds(0.5),
        emotion: Bool = true
    ) {
        self.name = name
        self.polygon = polygon
        self.inertia = inertia
        self.grace = grace
        self.emotion = emotion
    }
}

/// A confirmation rule: a change counts once it has held for some frames or some media seconds.
public enum Hysteresis: Sendable, Equatable {
    case frames(Int)
    case seconds(Double)

    func isMet(frames count: Int, since start: MediaTime, now: MediaTime) -> Bool {
        switch self {
        case .frames(let n): count >= n
        case .seconds(let s): (now - start).seconds >= s - 1e-9
        }
    }
}

/// One visitor's presence in every zone of its source, with hysteresis on both edges.
///
/// A stay starts at the first frame of the streak inside that confirmed it, and ends at the first frame of
/// the streak outside that confirmed the exit, so inertia and grace delay the events but never change the
/// dwell. Only frames where the visitor was detected count; a detection gap changes nothing.
public struct ZonePresence: Sendable {
    public struct Stay: Sendable, Equatable {
        public var zone: String
        public var entered: MediaTime
        public var exited: MediaTime?
        public init(zone: String, entered: MediaTime, exited: MediaTime?) {
            self.zone = zone
            self.entered = entered
            self.exited = exited
        }
    }

    public enum Change: Sendable, Equatable {
        case entered(Stay)
        case exited(Stay)
    }

    private struct State: Sendable {
        var inside = false
        /// The streak of frames on the other side of the current state.
        var streakStart: MediaTime?
        var streakFrames = 0
        var enteredAt: MediaTime?
        var lastEntered = -1
    }

    public let zones: [ZoneDefinition]
    private var states: [State]
    /// Every stay so far, closed ones with their exit.
    public private(set) var stays: [Stay] = []
    private var entries = 0

    public init(zones: [ZoneDefinition]) {
        self.zones = zones
        self.states = Array(repeating: State(), count: zones.count)
    }

    /// Feeds one detected position; returns the entries and exits it confirmed.
    public mutating func observe(_ point: Point, at time: MediaTime) -> [Change] {
        var changes: [Change] = []
        for (i, zone) in zones.enumerated() {
            let isIn = zone.polygon.contains(point)
            if isIn == states[i].inside {
                states[i].streakStart = nil
                states[i].streakFrames = 0
                continue
            }
            if states[i].streakStart == nil { states[i].streakStart = time }
            states[i].streakFrames += 1
            let start = states[i].streakStart!
            let rule = isIn ? zone.inertia : zone.grace
            guard rule.isMet(frames: states[i].streakFrames, since: start, now: time) else { continue }
            states[i].inside = isIn
            states[i].streakStart = nil
            states[i].streakFrames = 0
            if isIn {
                states[i].enteredAt = start
                entries += 1
                states[i].lastEntered = entries
                let stay = Stay(zone: zone.name, entered: start, exited: nil)
                stays.append(stay)
                changes.append(.entered(stay))
            } else {
                changes.append(.exited(closeStay(i, at: start)))
            }
        }
        return changes
    }

    /// Closes every open stay at `time` (the visit ended).
    public mutating func leaveAll(at time: MediaTime) -> [Change] {
        zones.indices.filter { states[$0].inside }.map { i in
            states[i].inside = false
            return .exited(closeStay(i, at: time))
        }
    }

    /// The zone entered most recently among those the visitor is in.
    public var currentZone: String? {
        zones.indices.filter { states[$0].inside }.max { states[$0].lastEntered < states[$1].lastEntered }.map {
            zones[$0].name
        }
    }

    /// Whether emotion may be measured for a visitor at `point`. Strict on purpose: not inside any zone that turns
    /// emotion off, whether or not the entry has been confirmed yet, nor while its exit awaits its grace.
    public func allowsEmotion(at point: Point) -> Bool {
        zones.indices.allSatisfy { i in zones[i].emotion || (!states[i].inside && !zones[i].polygon.contains(point)) }
    }

    /// Seconds in each zone entered so far, open stays counted up to `now`, in order of first entry.
    public func dwell(now: MediaTime) -> [(zone: String, seconds: Double)] {
        var order: [String] = []
        var totals: [String: Int64] = [:]
        for stay in stays {
            if totals[stay.zone] == nil { order.append(stay.zone) }
            totals[stay.zone, default: 0] += ((stay.exited ?? max(now, stay.entered)) - stay.entered).microseconds
        }
        return order.map { ($0, Double(totals[$0]!) / 1_000_000) }
    }

    private mutating func closeStay(_ zoneIndex: Int, at time: MediaTime) -> Stay {
        let name = zones[zoneIndex].name
        let index = stays.lastIndex { $0.zone == name && $0.exited == nil }!
        stays[index].exited = max(time, stays[index].entered)
        states[zoneIndex].enteredAt = nil
        return stays[index]
    }
}
