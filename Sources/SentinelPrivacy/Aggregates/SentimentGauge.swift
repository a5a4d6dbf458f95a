public import Foundation
public import SentinelCore
public import SentinelWire

/// How the showroom's mood is summed up, from the pipeline file's `gauge:` section.
public struct GaugeSettings: Sendable, Equatable {
    /// Seconds of media time a visitor's vote counts for (default 5 minutes).
    public var windowSeconds: Double = 300
    /// A reading is published at least this often, and at once when it changes meaningfully (`changeScore`).
    public var publishEverySeconds: Double = 30
    /// Points a score must move (from the last published reading) to be published before `publishEverySeconds`; a
    /// label, a figure shown or withheld, or staleness changing is published at once.
    public var changeScore: Double = 5
    /// With nobody seen for this long, the reading is flagged stale.
    public var staleAfterSeconds: Double = 60

    public init() {}

    /// A pipeline file's `gauge:` section.
    public static let settings: [Setting<GaugeSettings>] = [
        .number("windowSeconds", \.windowSeconds, in: 10...86_400, "media seconds a visitor's vote counts for"),
        .number(
            "publishEverySeconds", \.publishEverySeconds, in: 1...3_600,
            "a reading is published at least this often, and at once when it changes meaningfully"),
        .number(
            "changeScore", \.changeScore, in: 1...100,
            "points a score must move to be published at once (a label, a figure withheld, staleness: always)"),
        .number("staleAfterSeconds", \.staleAfterSeconds, in: 1...86_400, "with nobody seen this long, it is stale"),
    ]
}

extension GaugeReading {
    /// Every figure of the reading, by what it covers (the whole showroom, a camera, a zone).
    func figures() -> [SentimentGauge.Figure: Aggregate<Level>] {
        var figures: [SentimentGauge.Figure: Aggregate<Level>] = [.overall: overall]
        for (source, level) in sources { figures[.source(source)] = level }
        for (source, zones) in zones {
            for (zone, level) in zones { figures[.zone(ZoneID(sourceId: source, name: zone))] = level }
        }
        return figures
    }

    /// Whether a dashboard should be told at once: a figure shown or withheld, a label, or staleness changed, or a
    /// score moved `changeScore` points or more.
    func differsMeaningfully(from other: GaugeReading, changeScore: Double) -> Bool {
        guard stale == other.stale else { return true }
        let mine = figures()
        let theirs = other.figures()
        guard Set(mine.keys) == Set(theirs.keys) else { return true }
        return mine.contains { figure, level in
            switch (level, theirs[figure]) {
            case (.suppressed, .suppressed?): false
            case (.value(let a, _), .value(let b, _)?):
                a.label != b.label || Double(abs(a.score - b.score)) >= changeScore
            default: true
            }
        }
    }
}

extension GaugeReading.Level {
    /// Points past a boundary a score must go before the label leaves `held`: a score hovering at 79-80 keeps
    /// the label it had rather than flapping between warm and hot.
    static let hysteresis = 3

    /// This level, its label kept at `held` while the score is within `hysteresis` of that label's range.
    func holding(_ held: String?) -> Self {
        guard let held, held != label,
            let range = Self.bands.first(where: { $0.label == held })?.scores,
            score >= range.lowerBound - Self.hysteresis, score <= range.upperBound + Self.hysteresis
        else { return self }
        var level = self
        level.label = held
        return level
    }

}

/// The aggregate sentiment gauge: a rolling window of media time with one vote per visitor, weighted by emotion
/// confidence and by dwell, mapped to 0-100: overall and per camera by the visit's dwell, per zone by the time spent in
/// that zone (`visitor.zones`; the visit's where a pipeline withholds it). A visitor's vote weighs their readings
/// across the window (one a second, each by its confidence), not only the latest: a visit that ends smiling after a
/// minute of frowning votes for the whole minute.
///
/// It reads masked events only (pseudonymous ids), and needs `visitor.valence` and `visitor.emotionConfidence`
/// in them: a pipeline that denies those gets a gauge that is always suppressed. Time is passed in (media time on
/// the wall clock), so readings are the same at any replay speed.
public struct SentimentGauge: Sendable {
    public let settings: GaugeSettings
    public let minGroupSize: Int
    public private(set) var sourceIDs: [String]
    public private(set) var zoneIDs: [ZoneID]
    /// Published reading times are rounded down to this many seconds, as the privacy policy's (0 keeps them).
    public let timestampResolution: Double
    /// Each visitor's readings (overall and at its camera), and those taken in each zone it was in.
    private var votes: [String: Voter] = [:]
    private var zoneVotes: [ZoneVoter: Voter] = [:]
    private var lastSeen: Date?
    private var lastPublished: GaugeReading?

    struct ZoneVoter: Hashable, Sendable {
        var faceId: String
        var zone: ZoneID
    }

    /// One visitor's readings in the window, the latest of each second (media time on the wall clock), and what its
    /// latest event said of it.
    struct Voter: Sendable {
        var readings: [Int64: (valence: Double, confidence: Double)] = [:]
        var dwell: Double
        var source: String

        /// The readings since `start` only; nil when none is left.
        func since(_ start: Date) -> Voter? {
            let first = Int64(start.timeIntervalSince1970.rounded(.up))
            var kept = self
            kept.readings = readings.filter { $0.key >= first }
            return kept.readings.isEmpty ? nil : kept
        }

        /// The vote: the confidence-weighted mean valence of the readings, weighing their mean confidence times the
        /// dwell.
        var vote: (valence: Double, weight: Double) {
            let confidence = readings.values.reduce(0) { $0 + $1.confidence }
            let valence = readings.values.reduce(0) { $0 + $1.confidence * $1.valence }
            return (valence / confidence, confidence / Double(readings.count) * dwell)
        }
    }

    /// Readings cover `sources` (each camera) and `zones` (each zone of each camera), every one of them in every
    /// reading, and any other camera or zone a visitor event comes from, from then on (a fleet learns its sites'
    /// cameras from their events).
    public init(
        settings: GaugeSettings, minGroupSize: Int, sources: [String], zones: [ZoneID], timestampResolution: Double = 0
    ) {
        self.settings = settings
        self.timestampResolution = timestampResolution
        self.minGroupSize = minGroupSize
        sourceIDs = sources
        zoneIDs = zones
    }

    /// Takes a visitor's reading into its vote. Visitors whose expression is unknown (or not measured, as in a zone with
    /// emotion off) do not vote, but still count as seen.
    public mutating func record(_ event: VisitorEvent) {
        lastSeen = max(lastSeen ?? event.time, event.time)
        let visitor = event.visitor
        if !sourceIDs.contains(visitor.sourceId) { sourceIDs.append(visitor.sourceId) }
        if let zone = visitor.zone.map({ ZoneID(sourceId: visitor.sourceId, name: $0) }), !zoneIDs.contains(zone) {
            zoneIDs.append(zone)
        }
        // Events are checked where they enter (`EventCheck`); the gauge still takes no vote it cannot sum.
        guard visitor.emotion?.emotion != nil, let valence = visitor.valence, (-1...1).contains(valence),
            let confidence = visitor.emotionConfidence, confidence > 0, confidence <= 1
        else { return }
        // Dwell counts from 1 s up to the window: a visitor who stayed the whole window weighs as much as one can.
        func weight(_ seconds: Double?) -> Double {
            min(max(seconds.flatMap { $0.isNaN ? nil : $0 } ?? 0, 1), settings.windowSeconds)
        }
        let second = Int64(event.time.timeIntervalSince1970.rounded(.down))
        func take(_ voter: inout Voter?, dwell: Double) {
            var taken = voter ?? Voter(dwell: dwell, source: visitor.sourceId)
            taken.readings[second] = (valence, confidence)
            taken.dwell = dwell
            voter = taken
        }
        take(&votes[visitor.faceId], dwell: weight(visitor.dwellSeconds))
        if let zone = visitor.zone {
            // The time in this zone: a visitor who passed through it briefly weighs little there, however long the visit.
            let inZone = visitor.zones.map { zones in zones.first { $0.zone == zone }?.dwellSeconds ?? 0 }
            take(
                &zoneVotes[ZoneVoter(faceId: visitor.faceId, zone: ZoneID(sourceId: visitor.sourceId, name: zone))],
                dwell: weight(inZone ?? visitor.dwellSeconds))
        }
    }

    /// Takes a published visitor event's vote: the gauge only ever sees what the events output may show.
    public mutating func record(_ published: MaskedEvent) {
        precondition(published.output == .events, "the gauge reads published events")
        record(published.event)
    }

    /// The reading at `now`, if one is due: when it differs meaningfully from the last published one (a label, a
    /// figure shown or withheld, staleness, a score moved `changeScore`), or `publishEverySeconds` after it. Its time
    /// is rounded down to `timestampResolution`.
    public mutating func tick(now: Date) -> GaugeReading? {
        var reading = self.reading(now: now)
        if let last = lastPublished, !reading.differsMeaningfully(from: last, changeScore: settings.changeScore),
            now.timeIntervalSince(last.time) < settings.publishEverySeconds
        {
            return nil
        }
        lastPublished = reading
        reading.time = now.roundedDown(toMultipleOf: timestampResolution)
        return reading
    }

    /// The reading at `now`, votes older than the window dropped.
    public mutating func reading(now: Date) -> GaugeReading {
        let start = now.addingTimeInterval(-settings.windowSeconds)
        votes = votes.compactMapValues { $0.since(start) }
        zoneVotes = zoneVotes.compactMapValues { $0.since(start) }
        var groups: [Figure: [Voter]] = [.overall: Array(votes.values)]
        for source in sourceIDs { groups[.source(source)] = votes.values.filter { $0.source == source } }
        // A zone counts every visitor who was in it during the window, once, with its latest vote there.
        for zone in zoneIDs { groups[.zone(zone)] = [] }
        for (voter, vote) in zoneVotes { groups[.zone(voter.zone), default: []].append(vote) }
        let counts = groups.mapValues(\.count)
        // Overall and each camera are totals: a hidden camera or zone must not be their difference.
        let published = Complement.publishable(counts, minGroupSize: minGroupSize) { published in
            func zones(of source: String) -> [Figure] {
                zoneIDs.filter { $0.sourceId == source }.map { .zone($0) }.filter(published.contains)
            }
            var totals: [(Int, [Figure])] = sourceIDs.filter { published.contains(.source($0)) }.map {
                (counts[.source($0)]!, zones(of: $0))
            }
            if published.contains(.overall) {
                let parts = sourceIDs.flatMap { published.contains(.source($0)) ? [.source($0)] : zones(of: $0) }
                totals.append((counts[.overall]!, parts))
            }
            return totals
        }
        // Labels hold against the last published reading's (the one a dashboard shows).
        let held = (lastPublished?.figures() ?? [:]).compactMapValues(\.value?.label)
        func level(_ figure: Figure) -> Aggregate<GaugeReading.Level> {
            let votes = groups[figure]!.map(\.vote)
            let total = votes.reduce(0) { $0 + $1.weight }
            guard published.contains(figure), total > 0 else { return .suppressed }
            let mean = votes.reduce(0) { $0 + $1.weight * $1.valence } / total
            return .value(GaugeReading.Level(valence: mean).holding(held[figure]), visitors: votes.count)
        }

        var sources: [String: Aggregate<GaugeReading.Level>] = [:]
        for source in sourceIDs { sources[source] = level(.source(source)) }
        var zones: [String: [String: Aggregate<GaugeReading.Level>]] = [:]
        for zone in zoneIDs { zones[zone.sourceId, default: [:]][zone.name] = level(.zone(zone)) }
        let stale = lastSeen.map { now.timeIntervalSince($0) > settings.staleAfterSeconds } ?? true
        return GaugeReading(
            time: now, overall: level(.overall), sources: sources, zones: zones, stale: stale,
            windowSeconds: settings.windowSeconds)
    }

    /// A figure of a reading: the whole showroom, a camera, a zone.
    enum Figure: Hashable, Comparable, Sendable {
        case overall
        case source(String)
        case zone(ZoneID)
    }
}
