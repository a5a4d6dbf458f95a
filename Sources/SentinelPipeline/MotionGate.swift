import SentinelCore
import SentinelVision
import SentinelWire

/// Which frames are detected, and where, under `detector.maxFps`, as Frigate does it: a cheap motion pass on a small
/// grey thumbnail of every frame decides. A frame that changed where no followed face explains it (someone coming in)
/// is detected whole, at once. Otherwise, on the cadence's schedule: nobody followed and nothing moved, nothing at all
/// (an idle camera costs its decoding and the motion pass), but for a whole frame every `idleSeconds`; faces followed,
/// only the squares around them (`FaceDetector.detect(_:in:)`: a fraction of a whole frame's cost), but for a whole
/// frame every `wholeSeconds`. A face the tracker is unsure of (not yet confirmed, or missed) has its square detected
/// on every frame where the picture changed around it since the last detection, while it may still be where it was
/// last seen (coasting); where nothing changed a detection would say what the last one said, so it waits for the
/// schedule (a face the detector misses while it holds still costs no detection a frame); one gone longer is left to
/// the motion pass, which sees it come back. Decided by the frames alone, so a replay at any pace and a live
/// camera detect alike. Without gating (`detector.onChange: false`), whole frames on the schedule, and on every frame
/// while the tracker is unsure.
struct MotionGate {
    /// What one frame gets.
    enum Plan: Equatable {
        case none
        case whole
        /// These squares only, in the frame's pixels.
        case regions([Box])
    }

    private var cadence: DetectionCadence
    private let gated: Bool
    private var watch = ChangeWatch()
    private var lastWhole: MediaTime?

    /// Media seconds between whole-frame detections while faces are followed: a face that came in where a followed
    /// one explains the change (beside it) is found within this.
    static let wholeSeconds = 1.0
    /// ... and while nobody is: what the motion pass could miss (a far face moving slowly) is found within this.
    static let idleSeconds = 2.0
    /// Regions are worth it while they cover at most this share of the frame.
    static let regionShare = 0.6

    init(maxFPS: Double, gated: Bool) {
        cadence = DetectionCadence(maxFPS: maxFPS)
        self.gated = gated && cadence.interval != nil
    }

    /// The plan for `frame`: `unsure`, where the faces the tracker is unsure of may be (see
    /// `VisitorStage.unsure(time:)`); `followed`, where the followed faces may be; `regionSide`, the detector's
    /// square for regions in this frame (nil: whole frames only).
    mutating func plan(_ frame: Frame, unsure: [Box], followed: [Box], regionSide: Double?) throws(VisionError) -> Plan
    {
        let time = frame.time
        guard gated else { return cadence.admits(time, unsure: !unsure.isEmpty) ? .whole : .none }
        let thumbnail: Image
        if let made = frame.thumbnail {
            thumbnail = made
        } else {
            thumbnail = try ChangeWatch.thumbnail(of: frame.image)
        }
        let changes = try watch.changes(thumbnail, width: frame.image.width, height: frame.image.height)
        let plan: Plan
        if changes?.unexplained(by: followed) ?? true {
            _ = cadence.admits(time, unsure: true)
            plan = .whole
        } else if let changes, changes.touches(unsure), !followed.isEmpty {
            // An unsure face whose picture did not change since the last detection would be detected as it was
            // (missed again, or seen where it was): it waits for the schedule.
            _ = cadence.admits(time, unsure: true)
            plan = Self.regions(followed, side: regionSide, frame: frame) ?? .whole
        } else if !cadence.admits(time) {
            plan = .none
        } else if let lastWhole,
            (time - lastWhole).seconds < (followed.isEmpty ? Self.idleSeconds : Self.wholeSeconds)
                - 1e-6
        {
            plan = followed.isEmpty ? .none : Self.regions(followed, side: regionSide, frame: frame) ?? .whole
        } else {
            plan = .whole
        }
        if plan != .none { watch.detected(thumbnail) }
        if plan == .whole { lastWhole = time }
        return plan
    }

    /// Squares covering `boxes`, a box with room around it in each (boxes close together share one): of `side`, or
    /// bigger for a face too big for it (brought to the regions' network size all the same, it is seen smaller than a
    /// whole frame's detection sees it, still well within what the detector finds); nil when regions cannot do (no
    /// side) or would cost about as much as the whole frame.
    static func regions(_ boxes: [Box], side: Double?, frame: Frame) -> Plan? {
        guard let side, !boxes.isEmpty else { return nil }
        let largest = Double(min(frame.image.width, frame.image.height))
        // A box's union with the others in its square stays within half of it, so that a face is a quarter of the
        // square from its edge even when it moved more than predicted.
        var groups: [Box] = []
        for box in boxes.sorted(by: { $0.x < $1.x }) {
            if let i = groups.firstIndex(where: {
                let union = $0.union(box)
                return max(union.width, union.height) <= side / 2
            }) {
                groups[i] = groups[i].union(box)
            } else {
                groups.append(box)
            }
        }
        let squares = groups.map { group -> Box in
            let edge = min(largest, max(side, 2 * max(group.width, group.height)))
            return Box(x: group.center.x - edge / 2, y: group.center.y - edge / 2, width: edge, height: edge)
        }
        let area = squares.reduce(0) { $0 + $1.area }
        guard area <= regionShare * Double(frame.image.width * frame.image.height) else { return nil }
        return .regions(squares)
    }
}

/// Which frames get a detection under `detector.maxFps`: at most `maxFPS` per second of media time, evenly spread,
/// decided by media time alone so that a replay at any pace and a live run pick alike.
struct DetectionCadence {
    let interval: MediaTime?
    private var due: MediaTime?

    init(maxFPS: Double) { interval = maxFPS > 0 ? MediaTime(seconds: 1 / maxFPS) : nil }

    /// `unsure`: the tracker needs this frame detected (`VisitorStage.unsure(time:)` not empty); it is, and the schedule
    /// goes on from it.
    mutating func admits(_ time: MediaTime, unsure: Bool = false) -> Bool {
        guard let interval else { return true }
        if unsure {
            due = time + interval
            return true
        }
        // Half a millisecond of slack: container timestamps are rounded.
        if let due, time + MediaTime(microseconds: 500) < due { return false }
        // On schedule, or restarted after a gap (a reconnect) so that a burst cannot follow.
        due = due.map { $0 + interval > time ? $0 + interval : time + interval } ?? time + interval
        return true
    }
}
