import Foundation
public import SentinelCore
public import SentinelWire

/// Who is in the showroom now: each present visitor as the latest published event shows them, and counts by zone
/// and mood mix published with k-suppression. Fed masked events only (pseudonymous ids).
public struct Occupancy: Sendable {
    public let minGroupSize: Int
    private var present: [String: Visitor] = [:]
    private var arrivals = 0

    struct Visitor: Sendable {
        var record: VisitorRecord
        /// Order of arrival among the visitors seen.
        var arrival: Int
        var zone: ZoneID? { record.zone.map { ZoneID(sourceId: record.sourceId, name: $0) } }
        var emotion: String? { record.emotion?.emotion?.rawValue }
    }

    public init(minGroupSize: Int) { self.minGroupSize = minGroupSize }

    /// What the dashboard may show.
    public struct Snapshot: Sendable, Equatable {
        /// Visitors present, in a zone or not.
        public var visitors: Aggregate<Int>
        public var zones: [ZoneID: Aggregate<Int>]
        /// The share of each expression among present visitors whose expression is known.
        public var emotions: Aggregate<[String: Double]>
    }

    public mutating func process(_ event: MaskedEvent) {
        let visitor = event.event.visitor
        if event.event.type == .exited {
            present[visitor.faceId] = nil
        } else if let known = present[visitor.faceId] {
            present[visitor.faceId] = Visitor(record: visitor, arrival: known.arrival)
        } else {
            arrivals += 1
            present[visitor.faceId] = Visitor(record: visitor, arrival: arrivals)
        }
    }

    /// Visitors present, as published, in order of arrival: those who arrived after the `after`-th arrival, at most
    /// `limit`, and the arrival to continue after while more follow. A visitor present from one page to the next is
    /// on exactly one of them (arrivals only grow: newcomers follow on later pages).
    public func visitors(after: Int = 0, limit: Int = .max) -> (records: [VisitorRecord], next: Int?) {
        let following = present.values.filter { $0.arrival > after }.sorted { $0.arrival < $1.arrival }
        let page = following.prefix(limit)
        return (page.map(\.record), following.count > limit ? page.last?.arrival : nil)
    }

    /// Counts for every zone in `zones` (including empty ones), suppressed below the group size.
    ///
    /// A count hidden this way could still be recovered by subtracting the published zones from the published
    /// total, so while what the published figures leave unexplained covers fewer than `minGroupSize` visitors
    /// (but more than none), the smallest published zone is suppressed too.
    public func snapshot(zones names: [ZoneID]) -> Snapshot {
        let total = present.count
        var counts = Dictionary(uniqueKeysWithValues: names.map { ($0, 0) })
        for visitor in present.values { if let zone = visitor.zone { counts[zone, default: 0] += 1 } }
        let published = Complement.publishable(counts, minGroupSize: minGroupSize) { published in
            total >= minGroupSize ? [(total, Array(published))] : []
        }
        let zoneFigures = Dictionary(
            uniqueKeysWithValues: counts.map { name, count in
                (name, published.contains(name) ? Aggregate.value(count, visitors: count) : .suppressed)
            })
        let labelled = present.values.compactMap(\.emotion)
        var mix: [String: Double] = [:]
        for label in labelled { mix[label, default: 0] += 1 }
        for key in mix.keys { mix[key] = ((mix[key]! / Double(labelled.count)) * 1000).rounded() / 1000 }
        return Snapshot(
            visitors: Aggregate(total, visitors: total, minGroupSize: minGroupSize), zones: zoneFigures,
            emotions: Aggregate(mix, visitors: labelled.count, minGroupSize: minGroupSize))
    }
}

/// Complementary suppression. A figure hidden below `minGroupSize` could be recovered by subtracting the published
/// figures inside a published total from that total. So besides every figure below `minGroupSize`, the smallest
/// published figure inside a total is withheld while what the published figures leave of it unexplained covers
/// more than none but fewer than `minGroupSize` visitors, until no total leaves such a rest.
enum Complement {
    /// The keys of `counts` that may be published. `totals` lists, for what is published so far, each published
    /// total with the published figures inside it (disjoint, as the visitors they count are).
    static func publishable<Key: Hashable & Comparable>(
        _ counts: [Key: Int], minGroupSize: Int, totals: (Set<Key>) -> [(total: Int, parts: [Key])]
    ) -> Set<Key> {
        var published = Set(counts.filter { $0.value >= minGroupSize }.keys)
        while let leaky = totals(published).first(where: { total, parts in
            let rest = total - parts.reduce(0) { $0 + counts[$1]! }
            return rest > 0 && rest < minGroupSize
        }),
            let smallest = leaky.parts.min(by: { (counts[$0]!, $0) < (counts[$1]!, $1) })
        {
            published.remove(smallest)
        }
        return published
    }
}
