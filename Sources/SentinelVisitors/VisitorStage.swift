public import Foundation
public import SentinelCore
public import SentinelWire

/// Everything that turns one source's detections into visitor events.
public struct VisitorSettings: Sendable, Equatable {
    public var tracker = TrackerSettings()
    public var emotion = EmotionSettings()
    /// Media seconds between two `visitor.updated` events of one visitor.
    public var updateIntervalSeconds: Double = 1.0
    /// Which point of the face box decides the zone.
    public var referencePoint: ReferencePoint = .center
    /// Whether each frame says why the tracker did what it did (`FrameOutput.notes`, for `sentinel explain`); not a
    /// pipeline file's setting.
    public var trace = false

    public enum ReferencePoint: String, Sendable, Codable, CaseIterable {
        case center
        /// The middle of the box's lower edge (the chin), nearer the floor.
        case bottom
    }

    public init() {}

    /// A pipeline file's `events:` section.
    public static let settings: [Setting<VisitorSettings>] = [
        .number(
            "updateIntervalSeconds", \.updateIntervalSeconds, in: 0.1...3600,
            "media seconds between visitor.updated events of a visitor"),
        .choice("referencePoint", \.referencePoint, "the point of a face box that decides which zone it is in"),
    ]

    /// The point of a face box that decides which zone it is in (`referencePoint`).
    public func point(of box: Box) -> Point {
        switch referencePoint {
        case .center: box.center
        case .bottom: Point(x: box.center.x, y: box.maxY)
        }
    }
}

/// Turns one source's detections, frame by frame, into visitor events.
///
/// Synchronous and pure: time comes only from the frames' media timestamps; `origin` places media time on
/// the wall clock once, for the published dates. The same detections at the same timestamps always give the
/// same events, whatever the replay speed.
public struct VisitorStage: Sendable {
    public let sourceID: String
    public let origin: Date
    public let zones: [ZoneDefinition]
    public let settings: VisitorSettings
    private var tracker: Tracker
    private var visits: [Int: Visit] = [:]
    private var visitCount = 0
    private var lastFrame: MediaTime?

    struct Visit: Sendable {
        var number: Int
        var firstSeen: MediaTime
        var lastSeen: MediaTime
        var presence: ZonePresence
        var emotion: EmotionSmoother
        /// When the face was last classified, for the per-visitor rate.
        var lastClassified: MediaTime?
        var lastUpdate: MediaTime
        /// The last detection, for outputs that a pipeline explicitly allows to carry it.
        var box: Box
        var score: Double
    }

    /// What one frame produced.
    public struct FrameOutput: Sendable {
        public var events: [VisitorEvent] = []
        /// Visits seen in this frame, by internal id, with their detected boxes (for evaluation and masking).
        public var observed: [(faceId: String, box: Box)] = []
        /// Visits not seen in this frame but still followed: where the face may be (from where it was last seen to
        /// where its motion predicts it: it may have stopped behind something or walked on), and for how many
        /// seconds it has gone unseen (the uncertainty grows with it).
        public var predicted: [(faceId: String, box: Box, unseenSeconds: Double)] = []
        /// On a frame between two detections (see `carry`): the visits seen at the last detection, each where its
        /// motion puts it now. This is the pipeline's answer for that frame, as `observed` is on a detected one.
        public var carried: [(faceId: String, box: Box)] = []
        /// With `VisitorSettings.trace`: the tracker's notes, each with its visit's internal id (nil for a track not
        /// yet a visit).
        public var notes: [(faceId: String?, note: TrackerNote)] = []
        /// The visits whose face was read for emotion in this frame (the reading taken), with the box read: what an
        /// operator collects to label (`replay --faces`).
        public var read: [(faceId: String, box: Box)] = []
        /// The visits confirmed in this frame, each with the earlier frames it was seen in while tentative (by media
        /// time): where its visit began, which a track exported for labelling must hold too.
        public var confirming: [(faceId: String, seen: [(time: MediaTime, box: Box)])] = []
    }

    public init(sourceID: String, origin: Date, zones: [ZoneDefinition], settings: VisitorSettings = VisitorSettings())
    {
        self.sourceID = sourceID
        self.origin = origin
        self.zones = zones
        self.settings = settings
        self.tracker = Tracker(settings: settings.tracker)
        tracker.tracing = settings.trace
    }

    /// The number of visits open now.
    public var openVisits: Int { visits.count }

    /// The faces the tracker is unsure of, each where it may be at `time` (its last box and its predicted one): one
    /// not yet confirmed as a visitor, or a visitor missing from the last analysed frame. Under a detection cadence
    /// such frames are detected all the same (where the picture changed around them, when motion-gated): carrying an
    /// unsure face would delay a visit's start or lose a visitor who is behind something.
    public func unsure(time: MediaTime) -> [Box] {
        tracker.tracks.filter { !$0.confirmed || $0.firstMissed != nil }.map { $0.box.union($0.predicted(at: time)) }
    }

    /// Processes one frame. `classify` returns the calibrated emotion reading of a face (or nil when it cannot); it is
    /// called only for faces that may be classified (size, score, zone policy).
    public mutating func process(
        time: MediaTime, detections: [Detection], classify: (Detection) throws -> EmotionReading?
    ) rethrows -> FrameOutput {
        lastFrame = time
        // A box or score that is not a finite number (a model gone wrong) is no face: it would reach the tracker's
        // arithmetic and every event of its visit.
        let update = tracker.update(
            detections: detections.filter {
                [$0.score, $0.box.x, $0.box.y, $0.box.width, $0.box.height].allSatisfy(\.isFinite)
            },
            at: time)
        var events: [VisitorEvent] = []
        var confirming: [(faceId: String, seen: [(time: MediaTime, box: Box)])] = []
        for track in update.confirmed {
            visitCount += 1
            var visit = Visit(
                number: visitCount, firstSeen: track.firstSeen, lastSeen: track.firstSeen,
                presence: ZonePresence(zones: zones), emotion: EmotionSmoother(settings: settings.emotion),
                lastUpdate: time,
                box: track.box, score: track.score)
            // Feed the frames seen while the track was tentative, all but the current one (fed below).
            for seen in track.tentative.dropLast() {
                _ = visit.presence.observe(settings.point(of: seen.box), at: seen.time)
            }
            visits[track.id] = visit
            events.append(event(.entered, visit, at: time, state: .active))
            confirming.append((internalID(visit.number), Array(track.tentative.dropLast())))
        }
        var output = FrameOutput()
        output.confirming = confirming
        output.notes = update.notes.map { note in (visits[note.track].map { internalID($0.number) }, note) }
        for (track, detection) in update.observed {
            guard var visit = visits[track.id] else { continue }
            visit.lastSeen = time
            visit.box = detection.box
            visit.score = detection.score
            for change in visit.presence.observe(settings.point(of: detection.box), at: time) {
                events.append(zoneEvent(change, visit, at: time, state: .active))
            }
            let rate = settings.emotion.maxPerSecond
            let due = rate <= 0 || visit.lastClassified.map { (time - $0).seconds >= 1 / rate - 1e-6 } ?? true
            // A reading is due at most `maxPerSecond`, read or not: `classify` reads the face only if it can be read
            // (`EmotionSettings.unreadable`, which needs the picture), so each due reading is one face read or not.
            if due, visit.presence.allowsEmotion(at: settings.point(of: detection.box)) {
                visit.lastClassified = time
                if let reading = try classify(detection) {
                    visit.emotion.add(reading, at: time)
                    output.read.append((internalID(visit.number), detection.box))
                }
            }
            if (time - visit.lastUpdate).seconds >= settings.updateIntervalSeconds - 1e-9 {
                visit.lastUpdate = time
                events.append(event(.updated, visit, at: time, state: .active))
            }
            visits[track.id] = visit
            output.observed.append((internalID(visit.number), detection.box))
        }
        for track in update.missing where (time - track.lastSeen).seconds <= settings.tracker.coastSeconds {
            guard let visit = visits[track.id] else { continue }
            output.predicted.append(
                (internalID(visit.number), track.box.union(track.predicted(at: time)), (time - track.lastSeen).seconds))
        }
        for track in update.ended {
            events += end(track, at: time, reason: .lost)
        }
        output.events = events
        return output
    }

    /// Where the followed visitors are at `time`, for a frame that was not analysed (the detection cadence): for masks,
    /// every confirmed track still coasting, from where it was last seen to where its motion leads; as positions, the
    /// visits seen at the last detection, where their motion leads. Changes nothing, so
    /// skipping detection on a frame and carrying the tracks gives the same events as not having the frame.
    public func carry(time: MediaTime) -> FrameOutput {
        var output = FrameOutput()
        for track in tracker.tracks
        where track.confirmed && (time - track.lastSeen).seconds <= settings.tracker.coastSeconds {
            guard let visit = visits[track.id] else { continue }
            let unseen = max((time - track.lastSeen).seconds, 1e-6)
            let position = track.predicted(at: time)
            output.predicted.append((internalID(visit.number), track.box.union(position), unseen))
            if track.firstMissed == nil { output.carried.append((internalID(visit.number), position)) }
        }
        return output
    }

    /// Where every face the tracker follows may be at `time`, confirmed or not yet: from where it was last seen to
    /// where its motion leads. What a detection of regions must cover, and what explains a change in the picture.
    public func followed(time: MediaTime) -> [Box] {
        tracker.tracks.filter { (time - $0.lastSeen).seconds <= settings.tracker.coastSeconds }.map {
            $0.box.union($0.predicted(at: time))
        }
    }

    /// Ends every open visit: at the end of a recording (`endOfStream`) or on shutdown (`shutdown`).
    public mutating func finish(reason: ExitReason) -> [VisitorEvent] {
        let time = lastFrame ?? .zero
        return tracker.finish().sorted { $0.id < $1.id }.flatMap { track in
            end(track, at: time, reason: reason)
        }
    }

    /// Ends a visit at `time`: its stays still open close when it was last seen (after a gap in the video, a camera
    /// that reconnected, the first frame without the face may come long after), so that no stay is longer than its
    /// visit.
    private mutating func end(_ track: Track, at time: MediaTime, reason: ExitReason) -> [VisitorEvent] {
        guard var visit = visits.removeValue(forKey: track.id) else { return [] }
        var events = visit.presence.leaveAll(at: visit.lastSeen).map { zoneEvent($0, visit, at: time, state: .lost) }
        visit.lastUpdate = time
        var exited = event(.exited, visit, at: time, state: .exited)
        exited.reason = reason
        events.append(exited)
        return events
    }

    /// The visit's internal id: unique per source and origin, so that two runs never share one. The privacy
    /// mask turns it into the published pseudonym; it never leaves the process.
    func internalID(_ number: Int) -> String {
        "\(sourceID)#\(Int64((origin.timeIntervalSince1970 * 1000).rounded()))#\(number)"
    }

    private func wall(_ time: MediaTime) -> Date { origin.addingTimeInterval(time.seconds) }

    private func record(_ visit: Visit, state: VisitState, now: MediaTime) -> VisitorRecord {
        // In a zone with `emotion: false` (staff) a visitor carries no emotion at all, not even the one measured
        // before entering it; the smoother keeps it for when the visitor leaves.
        let measured =
            visit.presence.allowsEmotion(at: settings.point(of: visit.box))
            ? visit.emotion : EmotionSmoother(settings: settings.emotion)
        let (emotion, confidence) = measured.dominant
        let distribution =
            measured.distribution.isEmpty
            ? [:]
            : Dictionary(
                uniqueKeysWithValues: zip(
                    Emotion.allCases.map(\.rawValue), measured.distribution.map { ($0 * 1000).rounded() / 1000 }))
        return VisitorRecord(
            faceId: internalID(visit.number), sourceId: sourceID,
            zone: state == .exited ? nil : visit.presence.currentZone, state: state,
            zones: visit.presence.dwell(now: now).map { .init(zone: $0.zone, dwellSeconds: $0.seconds) },
            dwellSeconds: (visit.lastSeen - visit.firstSeen).seconds, firstSeen: wall(visit.firstSeen),
            lastSeen: wall(visit.lastSeen),
            // Not measured (not yet, or not in this zone) is absent: a confidence and valence of 0 would read as
            // a measurement.
            emotion: emotion.map(EmotionLabel.known),
            emotionConfidence: emotion == nil ? nil : (confidence * 1000).rounded() / 1000,
            emotionDistribution: emotion == nil ? nil : distribution,
            valence: emotion == nil ? nil : (measured.valence * 1000).rounded() / 1000, box: visit.box,
            detectionScore: (visit.score * 1000).rounded() / 1000)
    }

    private func event(_ kind: VisitorEvent.Kind, _ visit: Visit, at time: MediaTime, state: VisitState) -> VisitorEvent
    {
        VisitorEvent(
            type: kind, time: wall(time), visitor: record(visit, state: state, now: visit.lastSeen),
            mediaTime: time.seconds)
    }

    private func zoneEvent(_ change: ZonePresence.Change, _ visit: Visit, at time: MediaTime, state: VisitState)
        -> VisitorEvent
    {
        switch change {
        case .entered(let stay):
            var e = event(.zoneEntered, visit, at: time, state: state)
            e.stay = .init(zone: stay.zone, enteredAt: wall(stay.entered))
            return e
        case .exited(let stay):
            var e = event(.zoneExited, visit, at: time, state: state)
            let exited = stay.exited ?? time
            e.stay = .init(
                zone: stay.zone, enteredAt: wall(stay.entered), exitedAt: wall(exited),
                dwellSeconds: (exited - stay.entered).seconds)
            return e
        }
    }
}
