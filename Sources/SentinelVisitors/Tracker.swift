import Foundation
public import SentinelCore
public import SentinelWire

/// How faces are followed from frame to frame.
public struct TrackerSettings: Sendable, Equatable, Codable {
    /// Detections at or above this score start tracks and are matched first.
    public var highScore: Double = 0.6
    /// Detections from this score up to `highScore` only keep confirmed tracks alive (second stage).
    public var lowScore: Double = 0.3
    /// A detection and a predicted track box match when their IoU reaches this...
    public var minIoU: Double = 0.2
    /// ...or when their centres are closer than this many face sides (fast or small faces).
    public var centerGate: Double = 0.6
    /// How much the centre gate widens per second a track goes unseen: its predicted position grows less certain.
    public var gateGrowthPerSecond: Double = 0.75
    /// Matched frames before a track counts as a visitor (filters one-frame false positives).
    public var confirmFrames: Int = 3
    /// Seconds a track keeps predicting its motion without a detection and can still be matched.
    public var coastSeconds: Double = 1.0
    /// Seconds without a detection after which the visit ends.
    public var visitTimeoutSeconds: Double = 3.0
    /// A new face this close (in face sides) to where a track was lost, or to where its motion would have
    /// taken it, continues that visit.
    public var reentryDistance: Double = 1.0
    /// Weight of the newest motion in the velocity estimate (0-1).
    public var velocitySmoothing: Double = 0.5
    /// A face reappearing over the last box of a visitor hidden longer than `coastSeconds`, with at least this IoU,
    /// is that visitor again (matched before any coasting track can take it).
    public var hiddenIoU: Double = 0.5
    /// Gates are measured in the face's size: the longest side of its detections over this many seconds. A face
    /// sliding behind a pillar or another visitor shrinks in its box, not in the room, so the box of the moment
    /// would make the gate too narrow just when the face is about to reappear.
    public var sizeMemorySeconds: Double = 1.0

    public init() {}

    /// The `tracker:` section of a pipeline file (`hiddenIoU` and `sizeMemorySeconds` are not tunable there).
    public static let settings: [Setting<TrackerSettings>] = [
        .number("highScore", \.highScore, in: 0...1, "detections at or above this start tracks and are matched first"),
        .number("lowScore", \.lowScore, in: 0...1, "weaker detections down to this only keep confirmed tracks alive"),
        .number("minIoU", \.minIoU, in: 0...1, "a detection and a track match at this IoU..."),
        .number("centerGate", \.centerGate, in: 0...10, "...or with centres this many face sides apart"),
        .number(
            "gateGrowthPerSecond", \.gateGrowthPerSecond, in: 0...10,
            "face sides the centre gate widens per second a track goes unseen"),
        .integer(
            "confirmFrames", \.confirmFrames, in: 1...100,
            "analysed frames with a detection before a face counts as a visitor (the visit starts at the first)"),
        .number("coastSeconds", \.coastSeconds, in: 0...60, "a lost face is predicted along its motion this long"),
        .number("visitTimeoutSeconds", \.visitTimeoutSeconds, in: 0...3600, "unseen this long, the visit ends"),
        .number(
            "reentryDistance", \.reentryDistance, in: 0...10,
            "a face back within this many face sides of where it was lost continues its visit"),
        .number("velocitySmoothing", \.velocitySmoothing, in: 0...1, "weight of the newest motion in the velocity"),
    ]
}

/// One followed face. Internal: its `id` never leaves the process.
public struct Track: Sendable, Equatable {
    public let id: Int
    /// The last detected box.
    public var box: Box
    /// Centre motion, pixels per second.
    var velocity: (x: Double, y: Double) = (0, 0)
    public var firstSeen: MediaTime
    public var lastSeen: MediaTime
    /// The first frame without a detection since `lastSeen`, if any.
    public var firstMissed: MediaTime?
    public var hits = 1
    public var confirmed = false
    /// The score of the last detection.
    public var score: Double
    /// Where the face was seen while the track was tentative, so that a visit can start at its first frame.
    public var tentative: [(time: MediaTime, box: Box)] = []
    /// The longest side of each detection within `sizeMemorySeconds` of the last one: the face's size, whatever part
    /// of it is hidden now.
    var recentSides: [(time: MediaTime, side: Double)] = []

    /// The face's size in pixels: the longest detected side of the last `sizeMemorySeconds`.
    var side: Double { recentSides.map(\.side).max() ?? max(box.width, box.height) }

    /// The box moved along the velocity to `time`, keeping its last size: a face shrinking as it goes behind
    /// something would otherwise be predicted to vanish.
    public func predicted(at time: MediaTime) -> Box {
        let dt = (time - lastSeen).seconds
        let centre = Point(x: box.center.x + velocity.x * dt, y: box.center.y + velocity.y * dt)
        return Box(x: centre.x - box.width / 2, y: centre.y - box.height / 2, width: box.width, height: box.height)
    }

    public static func == (a: Track, b: Track) -> Bool {
        a.id == b.id && a.box == b.box && a.lastSeen == b.lastSeen && a.hits == b.hits && a.confirmed == b.confirmed
    }
}

/// Why the tracker did what it did with one track in one frame, for `sentinel explain`: which gate matched its detection
/// and by how much, or how far the nearest detection was from passing one.
public struct TrackerNote: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// A new tentative track, from a detection of this score.
        case started(score: Double)
        /// Matched: `how`, with the detection's overlap with the predicted box, its centre's distance (face sides),
        /// the centre gate at that moment and the detection's score.
        case matched(how: Match, iou: Double, distance: Double, gate: Double, score: Double)
        /// A confirmed track with no detection in this frame; the nearest detection, if any, and why it failed.
        case missed(nearest: Candidate?)
        /// A tentative track that missed a frame: dropped as a false detection.
        case dropped
        /// Unseen longer than `visitTimeoutSeconds`: the visit ends.
        case ended(unseenSeconds: Double)
    }

    public enum Match: String, Sendable, Equatable {
        /// IoU with the predicted box at least `minIoU`.
        case overlap
        /// Centre within the gate.
        case centre
        /// A weak detection (between `lowScore` and `highScore`) keeping a confirmed track alive.
        case weak
        /// Back near where it was lost, after coasting ended (`reentryDistance`).
        case reentry
        /// Reappearing over its last box after being hidden (`hiddenIoU`).
        case hidden
    }

    /// The detection nearest a missed track: overlap and centre distance against the gates, and its score.
    public struct Candidate: Sendable, Equatable {
        public var iou: Double
        public var distance: Double
        public var gate: Double
        public var score: Double
        /// Whether another track took it.
        public var taken: Bool
    }

    public var track: Int
    public var kind: Kind
}

/// What one frame did to the tracks.
public struct TrackerUpdate: Sendable {
    /// Why, track by track, when the tracker traces (`Tracker.tracing`).
    public var notes: [TrackerNote] = []
    /// Confirmed tracks matched in this frame, with the detection that matched.
    public var observed: [(track: Track, detection: Detection)] = []
    /// Tracks confirmed in this frame (also in `observed`).
    public var confirmed: [Track] = []
    /// Confirmed tracks not seen in this frame but not ended.
    public var missing: [Track] = []
    /// Confirmed tracks whose visit ended (unseen for longer than the visit timeout).
    public var ended: [Track] = []
}

/// Two-stage association in the style of ByteTrack: high-score detections are matched to every live track
/// first, then low-score detections to the confirmed tracks still unmatched, so a face that fades (turning,
/// partly hidden) keeps its track instead of starting a new one. Boxes are predicted with a constant-velocity
/// model; matching is greedy on cost (1 - IoU, or centre distance where IoU is too small), which equals
/// the optimal assignment whenever gates do not overlap, as with a handful of visitors.
///
/// No appearance features, embeddings or other biometric templates are computed.
public struct Tracker: Sendable {
    public let settings: TrackerSettings
    public private(set) var tracks: [Track] = []
    private var nextID = 1
    /// Whether each update says why (`TrackerUpdate.notes`): off but for `sentinel explain`.
    public var tracing = false

    public init(settings: TrackerSettings = TrackerSettings()) { self.settings = settings }

    public mutating func update(detections: [Detection], at time: MediaTime) -> TrackerUpdate {
        let (matches, unmatched) = match(detections, at: time)
        var update = TrackerUpdate()
        if tracing { update.notes = notes(matches, detections, at: time) }
        for (t, d, _) in matches {
            let detection = detections[d]
            let wasConfirmed = tracks[t].confirmed
            correct(&tracks[t], with: detection, at: time)
            if tracks[t].confirmed {
                update.observed.append((tracks[t], detection))
                if !wasConfirmed { update.confirmed.append(tracks[t]) }
            }
        }
        age(except: Set(matches.map(\.track)), at: time, into: &update)
        for d in unmatched.sorted() { start(detections[d], at: time, into: &update) }
        update.observed.sort { $0.track.id < $1.track.id }
        return update
    }

    /// Which detection each track takes, and by which stage; and the strong detections no track took (new faces).
    private func match(_ detections: [Detection], at time: MediaTime) -> (
        matches: [(track: Int, detection: Int, stage: TrackerNote.Match)], unmatched: Set<Int>
    ) {
        let coasting = tracks.indices.filter {
            (time - tracks[$0].lastSeen).seconds <= min(settings.coastSeconds, settings.visitTimeoutSeconds)
        }
        // Parked: past coasting, within the visit's timeout. A track unseen for longer has ended, also when this is
        // the first frame after a gap (a camera that reconnected): it is never matched again, and its visit ends
        // when it was last seen, not at the first frame after the gap.
        let parked = tracks.indices.filter {
            let unseen = (time - tracks[$0].lastSeen).seconds
            return unseen > settings.coastSeconds && unseen <= settings.visitTimeoutSeconds
        }
        let high = detections.indices.filter { detections[$0].score >= settings.highScore }
        let low = detections.indices.filter {
            detections[$0].score >= settings.lowScore && detections[$0].score < settings.highScore
        }

        var matches: [(track: Int, detection: Int, stage: TrackerNote.Match)] = []
        var freeTracks = Set(coasting)
        var freeHigh = Set(high)
        // A face that reappears where a confirmed track was hidden (behind another visitor, for longer than coasting
        // lasts) competes here on equal terms, by IoU with that track's last box: otherwise the visitor who hid it,
        // still coasting nearby, would take its detection and the two visits would swap.
        let hidden = Set(parked.filter { tracks[$0].confirmed })
        for (t, d) in associate(
            Array(freeTracks) + hidden, high, detections, at: time, distanceGate: settings.centerGate, hidden: hidden)
        {
            matches.append((t, d, hidden.contains(t) ? .hidden : .overlap))
            freeTracks.remove(t)
            freeHigh.remove(d)
        }
        let confirmedFree = freeTracks.filter { tracks[$0].confirmed }
        for (t, d) in associate(Array(confirmedFree), low, detections, at: time, distanceGate: 0) {
            matches.append((t, d, .weak))
            freeTracks.remove(t)
        }
        // A face reappearing near where a confirmed track was lost continues that visit.
        let matchedHidden = Set(matches.map(\.track))
        let parkedConfirmed = parked.filter { tracks[$0].confirmed && !matchedHidden.contains($0) }
        for (t, d) in associate(
            parkedConfirmed, Array(freeHigh), detections, at: time, distanceGate: settings.reentryDistance,
            reentry: true)
        {
            matches.append((t, d, .reentry))
            freeHigh.remove(d)
        }
        return (matches, freeHigh)
    }

    /// The tracks not in `matched`: a tentative one is dropped, a confirmed one missing, or ended once unseen for
    /// longer than the visit's timeout.
    private mutating func age(except matched: Set<Int>, at time: MediaTime, into update: inout TrackerUpdate) {
        var keep: [Track] = []
        for index in tracks.indices {
            var track = tracks[index]
            if !matched.contains(index) {
                // A tentative track that misses a frame was most likely a false detection.
                guard track.confirmed else {
                    if tracing { update.notes.append(TrackerNote(track: track.id, kind: .dropped)) }
                    continue
                }
                if track.firstMissed == nil { track.firstMissed = time }
                if (time - track.lastSeen).seconds > settings.visitTimeoutSeconds {
                    if tracing {
                        update.notes.append(
                            TrackerNote(track: track.id, kind: .ended(unseenSeconds: (time - track.lastSeen).seconds)))
                    }
                    update.ended.append(track)
                    continue
                }
                update.missing.append(track)
            }
            keep.append(track)
        }
        tracks = keep
    }

    /// A new tentative track from `detection` (confirmed at once when `confirmFrames` is 1).
    private mutating func start(_ detection: Detection, at time: MediaTime, into update: inout TrackerUpdate) {
        var track = Track(id: nextID, box: detection.box, firstSeen: time, lastSeen: time, score: detection.score)
        track.tentative = [(time, detection.box)]
        track.recentSides = [(time, max(detection.box.width, detection.box.height))]
        nextID += 1
        if tracing { update.notes.append(TrackerNote(track: track.id, kind: .started(score: detection.score))) }
        if settings.confirmFrames <= 1 {
            track.confirmed = true
            update.observed.append((track, detection))
            update.confirmed.append(track)
        }
        tracks.append(track)
    }

    /// Why each track was matched, or the detection nearest each confirmed track that was not (before the tracks are
    /// corrected: the predictions are the ones matching used).
    private func notes(
        _ matches: [(track: Int, detection: Int, stage: TrackerNote.Match)], _ detections: [Detection],
        at time: MediaTime
    ) -> [TrackerNote] {
        func measure(_ t: Int, _ d: Int) -> (iou: Double, distance: Double, gate: Double) {
            let expected = tracks[t].predicted(at: time)
            let box = detections[d].box
            let distance = hypot(expected.center.x - box.center.x, expected.center.y - box.center.y) / tracks[t].side
            let gate = settings.centerGate + settings.gateGrowthPerSecond * (time - tracks[t].lastSeen).seconds
            return (expected.iou(box), distance, gate)
        }
        var notes: [TrackerNote] = []
        for (t, d, stage) in matches {
            let m = measure(t, d)
            let how: TrackerNote.Match = stage == .overlap && m.iou < settings.minIoU ? .centre : stage
            notes.append(
                TrackerNote(
                    track: tracks[t].id,
                    kind: .matched(how: how, iou: m.iou, distance: m.distance, gate: m.gate, score: detections[d].score)
                ))
        }
        let matchedTracks = Set(matches.map(\.track))
        let taken = Set(matches.map(\.detection))
        for t in tracks.indices where tracks[t].confirmed && !matchedTracks.contains(t) {
            let nearest = detections.indices.min { measure(t, $0).distance < measure(t, $1).distance }
            notes.append(
                TrackerNote(
                    track: tracks[t].id,
                    kind: .missed(
                        nearest: nearest.map { d in
                            let m = measure(t, d)
                            return TrackerNote.Candidate(
                                iou: m.iou, distance: m.distance, gate: m.gate, score: detections[d].score,
                                taken: taken.contains(d))
                        })))
        }
        return notes
    }

    /// Ends every remaining confirmed track (end of stream or shutdown).
    public mutating func finish() -> [Track] {
        defer { tracks = [] }
        return tracks.filter(\.confirmed)
    }

    /// `hidden` tracks are matched only where a detection overlaps their last box by `hiddenIoU` or more.
    private func associate(
        _ candidates: [Int], _ pool: [Int], _ detections: [Detection], at time: MediaTime, distanceGate: Double,
        reentry: Bool = false,
        hidden: Set<Int> = []
    ) -> [(Int, Int)] {
        var pairs: [(cost: Double, track: Int, detection: Int)] = []
        for t in candidates {
            if hidden.contains(t) {
                for d in pool {
                    let overlap = tracks[t].box.iou(detections[d].box)
                    if overlap >= settings.hiddenIoU { pairs.append((1 - overlap, t, d)) }
                }
                continue
            }
            let expected = tracks[t].predicted(at: time)
            let side = tracks[t].side
            let unseen = (time - tracks[t].lastSeen).seconds
            let gate = reentry ? distanceGate : distanceGate + settings.gateGrowthPerSecond * unseen
            for d in pool {
                let box = detections[d].box
                let overlap = expected.iou(box)
                func distance(_ a: Box) -> Double { hypot(a.center.x - box.center.x, a.center.y - box.center.y) / side }
                // A lost face may have stopped (hidden where it was lost) or walked on (hidden along its path).
                let distance = reentry ? min(distance(tracks[t].box), distance(expected)) : distance(expected)
                if !reentry, overlap >= settings.minIoU {
                    pairs.append((1 - overlap, t, d))
                } else if distance <= gate {
                    pairs.append((1 + distance, t, d))
                }
            }
        }
        pairs.sort { ($0.cost, $0.track, $0.detection) < ($1.cost, $1.track, $1.detection) }
        var usedTracks = Set<Int>()
        var usedDetections = Set<Int>()
        var result: [(Int, Int)] = []
        for pair in pairs where !usedTracks.contains(pair.track) && !usedDetections.contains(pair.detection) {
            usedTracks.insert(pair.track)
            usedDetections.insert(pair.detection)
            result.append((pair.track, pair.detection))
        }
        return result
    }

    private func correct(_ track: inout Track, with detection: Detection, at time: MediaTime) {
        let dt = (time - track.lastSeen).seconds
        if dt > 0 {
            let a = settings.velocitySmoothing
            let old = track.box
            let new = detection.box
            let measured = (x: (new.center.x - old.center.x) / dt, y: (new.center.y - old.center.y) / dt)
            track.velocity =
                track.hits == 1
                ? measured : (a * measured.x + (1 - a) * track.velocity.x, a * measured.y + (1 - a) * track.velocity.y)
        }
        track.box = detection.box
        track.recentSides.removeAll { (time - $0.time).seconds > settings.sizeMemorySeconds }
        track.recentSides.append((time, max(detection.box.width, detection.box.height)))
        track.score = detection.score
        track.lastSeen = time
        track.firstMissed = nil
        track.hits += 1
        if !track.confirmed { track.tentative.append((time, detection.box)) }
        if track.hits >= settings.confirmFrames { track.confirmed = true }
    }
}
