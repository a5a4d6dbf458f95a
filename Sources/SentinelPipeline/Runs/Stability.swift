public import Foundation
import SentinelCore
public import SentinelWire

/// Measures of a run that need no labels, for footage nobody has labelled. With the detector fixed, what varies
/// between configurations is whether the tracker keeps a visitor whole across the frames the detector missed, or
/// splits it, starts visits on nothing, or flickers between zones. The README defines each; a sweep reports how well
/// they rank configurations the way IDF1 and the dwell error do on labelled footage (Spearman's ρ).
public struct Stability: Sendable, Codable, Equatable {
    /// Visits that begin within `splitSeconds` of another's last sighting and within `splitDistance` face sides of
    /// where it was last seen, per visit: the visitor was probably split in two (lower is steadier).
    public var suspectedSplits = 0.0
    /// Visits shorter than `shortSeconds`, as a share of the visits (lower is steadier).
    public var shortVisits = 0.0
    /// Returns to a zone within `flickerSeconds` of leaving it, per visitor-minute (lower is steadier): a zone edge
    /// the hysteresis did not hold. Walking on from zone to zone counts nothing.
    public var zoneFlicker = 0.0
    /// Changes of the published emotion between two known expressions, per visitor-second (lower is steadier).
    public var emotionChurn = 0.0
    /// Detected frames inside a visit (between its first and last detection) where it was not detected, as a share of
    /// them: gaps the tracker bridged. The detector misses the same frames whatever the tracker does, so a higher
    /// share means fewer visits were cut at a gap.
    public var detectionGaps = 0.0
    public var visits = 0

    public init() {}

    public static let splitSeconds = 3.0
    public static let splitDistance = 2.0
    public static let shortSeconds = 1.0
    public static let flickerSeconds = 2.0

    /// One figure to maximise: 1 less the mean of the suspected splits (at most 1) and the short visits, the two that
    /// see a visitor cut in two or a visit made of nothing. Gaps bridged, zone flicker and emotion churn are reported
    /// beside it but left out: over the sample sweeps they ranked configurations inconsistently against IDF1 (README,
    /// "Tuning on your own footage").
    public var score: Double { 1 - (min(suspectedSplits, 1) + shortVisits) / 2 }

    /// Gathers what the measures need frame by frame.
    public struct Collector: Sendable {
        /// Per visit label: first and last detected frame, its box there, and the frames detected in between.
        var first: [String: (frame: Int, box: Box)] = [:]
        var last: [String: (frame: Int, box: Box)] = [:]
        var detected: [String: Int] = [:]
        /// The frames the detector ran on, in order (under a cadence not every frame is one).
        var analysed: [Int] = []

        public init() {}

        /// A frame: whether the detector ran on it, and the visits it detected there (by label, with their boxes).
        public mutating func add(frame index: Int, analysed: Bool, detected faces: [(label: String, box: Box)]) {
            guard analysed else { return }
            self.analysed.append(index)
            for face in faces {
                if first[face.label] == nil { first[face.label] = (index, face.box) }
                last[face.label] = (index, face.box)
                detected[face.label, default: 0] += 1
            }
        }

        /// The measures, from the run's events (the store's copies: exact times).
        public func finish(events: [VisitorEvent], origin: Date) -> Stability {
            var result = Stability()
            let exits = events.filter { $0.type == .exited }
            result.visits = exits.count
            guard !exits.isEmpty else { return result }
            struct Visit {
                var id: String
                var firstSeen: Double
                var lastSeen: Double
            }
            let visits = exits.map { event in
                Visit(
                    id: event.visitor.faceId,
                    firstSeen: (event.visitor.firstSeen ?? event.time).timeIntervalSince(origin),
                    lastSeen: (event.visitor.lastSeen ?? event.time).timeIntervalSince(origin))
            }
            var splits = 0
            var taken = Set<String>()
            for a in visits {
                guard let end = last[a.id] else { continue }
                let candidate = visits.filter { b in
                    b.id != a.id && !taken.contains(b.id) && b.firstSeen >= a.lastSeen
                        && b.firstSeen - a.lastSeen <= Stability.splitSeconds
                }.min { $0.firstSeen < $1.firstSeen }
                guard let b = candidate, let start = first[b.id] else { continue }
                let side = max(end.box.width, end.box.height, 1)
                let dx = (start.box.x + start.box.width / 2) - (end.box.x + end.box.width / 2)
                let dy = (start.box.y + start.box.height / 2) - (end.box.y + end.box.height / 2)
                if (dx * dx + dy * dy).squareRoot() <= Stability.splitDistance * side {
                    splits += 1
                    taken.insert(b.id)
                }
            }
            let count = Double(visits.count)
            result.suspectedSplits = Double(splits) / count
            result.shortVisits =
                Double(visits.filter { $0.lastSeen - $0.firstSeen < Stability.shortSeconds }.count) / count
            let minutes = visits.reduce(0) { $0 + max($1.lastSeen - $1.firstSeen, 0) } / 60
            var left: [[String]: Date] = [:]  // (visit, zone) -> when it last left the zone
            var returns = 0
            for event in events {
                guard let stay = event.stay else { continue }
                let key = [event.visitor.faceId, stay.zone]
                if event.type == .zoneExited, let exited = stay.exitedAt { left[key] = exited }
                if event.type == .zoneEntered, let exited = left[key],
                    stay.enteredAt.timeIntervalSince(exited) <= Stability.flickerSeconds
                {
                    returns += 1
                }
            }
            result.zoneFlicker = minutes > 0 ? Double(returns) / minutes : 0
            var changes = 0
            var previous: [String: Emotion] = [:]
            for event in events {
                guard let emotion = event.visitor.emotion?.emotion else { continue }
                if let before = previous[event.visitor.faceId], before != emotion { changes += 1 }
                previous[event.visitor.faceId] = emotion
            }
            result.emotionChurn = minutes > 0 ? Double(changes) / (minutes * 60) : 0
            var span = 0
            var seen = 0
            func analysedBefore(_ frame: Int) -> Int {
                var (low, high) = (0, analysed.count)
                while low < high {
                    let middle = (low + high) / 2
                    if analysed[middle] < frame { low = middle + 1 } else { high = middle }
                }
                return low
            }
            for (id, start) in first {
                guard let end = last[id] else { continue }
                span += analysedBefore(end.frame + 1) - analysedBefore(start.frame)
                seen += detected[id] ?? 0
            }
            result.detectionGaps = span > 0 ? 1 - Double(seen) / Double(span) : 0
            return result
        }
    }
}
