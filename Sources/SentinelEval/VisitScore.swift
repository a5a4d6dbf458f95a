public import Foundation
public import SentinelCore
public import SentinelWire

/// What the tracking figures (`TrackMetrics`) do not say, against a recording's own ground truth: how many visits each
/// drawn visitor became, its dwell, and where and when it was placed in zones.
///
/// Per frame, tracked boxes are matched to drawn faces (IoU >= 0.5, best first; faces mostly hidden count neither
/// way); each visit then belongs to the drawn visitor it overlapped in most frames. From that: dwell error per
/// visitor, the error of each visitor's time in each zone, and the timing error of zone entries and exits.
public struct VisitScore: Sendable, Codable {
    public var visitors: [VisitorScore] = []
    /// Zone entries and exits in the truth without a matching stay of the right visitor and zone.
    public var missedStays = 0
    /// Stays reported for a zone the matched visitor never entered (or more often than it did).
    public var extraStays = 0
    public var meanEntryError = 0.0
    public var maxEntryError = 0.0
    public var meanExitError = 0.0
    public var maxExitError = 0.0
    /// Per visitor and zone, the time in it as the visitor's visits' stays add up against the truth's.
    public var meanZoneDwellError = 0.0
    public var maxZoneDwellError = 0.0

    public struct VisitorScore: Sendable, Codable {
        public var visitor: String
        /// The visits given to this visitor (1 when it was followed without a break).
        public var visits: [String]
        public var trueDwell: Double
        public var measuredDwell: Double
        public var dwellError: Double
    }

    /// One stay as reported by `visitor.zoneExited`, in media seconds.
    public struct ReportedStay: Sendable {
        public var faceId: String
        public var zone: String
        public var entered: Double
        public var exited: Double
        public init(faceId: String, zone: String, entered: Double, exited: Double) {
            self.faceId = faceId
            self.zone = zone
            self.entered = entered
            self.exited = exited
        }
    }

    public init() {}

    /// Scores a run from its events: visit dwell from `visitor.exited`, stays from `visitor.zoneExited`, their
    /// dates turned back into media seconds with the source's `origin`.
    public static func evaluate(
        truth: GroundTruth, observed: [Int: [(faceId: String, box: Box)]], events: [VisitorEvent], origin: Date
    ) -> VisitScore {
        let dwell = Dictionary(
            events.filter { $0.type == .exited }.map { ($0.visitor.faceId, $0.visitor.dwellSeconds ?? 0) },
            uniquingKeysWith: { $1 })
        let stays = events.compactMap { event -> ReportedStay? in
            guard event.type == .zoneExited, let stay = event.stay, let exited = stay.exitedAt else { return nil }
            return ReportedStay(
                faceId: event.visitor.faceId, zone: stay.zone, entered: stay.enteredAt.timeIntervalSince(origin),
                exited: exited.timeIntervalSince(origin))
        }
        return evaluate(truth: truth, observed: observed, visitDwell: dwell, stays: stays)
    }

    /// - Parameters:
    ///   - observed: per frame index, the visits seen and their boxes.
    ///   - visitDwell: each visit's final dwell (from `visitor.exited`).
    ///   - stays: every closed zone stay.
    public static func evaluate(
        truth: GroundTruth, observed: [Int: [(faceId: String, box: Box)]], visitDwell: [String: Double],
        stays: [ReportedStay]
    ) -> VisitScore {
        var score = VisitScore()
        var common: [String: [String: Int]] = [:]  // truth visitor -> visit -> frames matched
        for frame in truth.frames {
            let tracked = observed[frame.index] ?? []
            for match in GroundTruth.Face.matches(frame.faces, tracked.map(\.box)) {
                let face = frame.faces[match.face]
                if !face.isOccluded { common[face.visitor, default: [:]][tracked[match.box].faceId, default: 0] += 1 }
            }
        }

        // Each visit belongs to the visitor it overlapped most.
        var owner: [String: String] = [:]
        var best: [String: Int] = [:]
        for (truthID, visits) in common {
            for (visit, count) in visits where count > best[visit, default: 0] {
                best[visit] = count
                owner[visit] = truthID
            }
        }
        var entryErrors: [Double] = []
        var exitErrors: [Double] = []
        var zoneDwellErrors: [Double] = []
        for visitor in truth.visitors {
            let visits = owner.filter { $0.value == visitor.id }.map(\.key).sorted()
            let measured = visits.reduce(0) { $0 + (visitDwell[$1] ?? 0) }
            let trueDwell = (visitor.lastSeen - visitor.firstSeen).seconds
            score.visitors.append(
                VisitorScore(
                    visitor: visitor.id, visits: visits, trueDwell: trueDwell, measuredDwell: measured,
                    dwellError: abs(measured - trueDwell)))
            var candidates = stays.filter { visits.contains($0.faceId) }
            var measuredInZone: [String: Double] = [:]
            var trueInZone: [String: Double] = [:]
            for stay in candidates { measuredInZone[stay.zone, default: 0] += stay.exited - stay.entered }
            for stay in visitor.stays { trueInZone[stay.zone, default: 0] += (stay.exited - stay.entered).seconds }
            for zone in Set(measuredInZone.keys).union(trueInZone.keys) {
                zoneDwellErrors.append(abs((measuredInZone[zone] ?? 0) - (trueInZone[zone] ?? 0)))
            }
            for stay in visitor.stays {
                let sameZone = candidates.indices.filter { candidates[$0].zone == stay.zone }
                guard
                    let nearest = sameZone.min(by: {
                        abs(candidates[$0].entered - stay.entered.seconds)
                            < abs(candidates[$1].entered - stay.entered.seconds)
                    })
                else {
                    score.missedStays += 1
                    continue
                }
                entryErrors.append(abs(candidates[nearest].entered - stay.entered.seconds))
                exitErrors.append(abs(candidates[nearest].exited - stay.exited.seconds))
                candidates.remove(at: nearest)
            }
            score.extraStays += candidates.count
        }
        score.meanEntryError = entryErrors.isEmpty ? 0 : entryErrors.reduce(0, +) / Double(entryErrors.count)
        score.maxEntryError = entryErrors.max() ?? 0
        score.meanExitError = exitErrors.isEmpty ? 0 : exitErrors.reduce(0, +) / Double(exitErrors.count)
        score.maxExitError = exitErrors.max() ?? 0
        score.meanZoneDwellError =
            zoneDwellErrors.isEmpty ? 0 : zoneDwellErrors.reduce(0, +) / Double(zoneDwellErrors.count)
        score.maxZoneDwellError = zoneDwellErrors.max() ?? 0
        return score
    }
}
