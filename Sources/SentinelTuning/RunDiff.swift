public import Foundation
import SentinelCore
import SentinelEval
public import SentinelWire

/// Two runs compared visit by visit. Pseudonyms differ between runs (a new key, another day), and published records
/// carry no boxes, so visits are matched by where and when they were: the seconds two visits spent in the same zone at
/// the same time (and, far behind, the seconds they were both seen), one to one, the largest first. A visit that shares
/// a second or more of zone time with several of the other run's is where one run split or merged a visitor.
public struct RunDiff: Sendable {
    public struct Visit: Sendable {
        public var faceId: String
        public var sourceId: String
        public var firstSeen: Date
        public var lastSeen: Date
        public var dwell: Double
        /// Seconds in each zone, in order of first entry.
        public var zones: [VisitorRecord.ZoneDwell]
        /// Each stay: zone, entry and exit (nil while open at the end of the run).
        public var stays: [(zone: String, entered: Date, exited: Date?)] = []
        public var seconds: Double { lastSeen.timeIntervalSince(firstSeen) }
    }

    public struct Pair: Sendable {
        public var a: Visit
        public var b: Visit
        public var overlapSeconds: Double
    }

    public var pairs: [Pair] = []
    public var onlyA: [Visit] = []
    public var onlyB: [Visit] = []
    /// Visits of A that overlap more than one of B (B split them), and the other way round.
    public var splitInB: [(a: Visit, b: [Visit])] = []
    public var splitInA: [(b: Visit, a: [Visit])] = []

    /// The longest line read: a visitor event with every zone of a large showroom is a few KiB (as the fleet takes).
    static let maxLine = 64 * 1_024

    /// The visits of a run's published events (JSON lines, as `sentinel replay` writes them; gauge readings and lines
    /// that are not visitor events are passed over). Refused with the line number when a line is not JSON.
    public static func visits(_ data: Data, file: String) throws -> [Visit] {
        var visits: [String: Visit] = [:]
        var order: [String] = []
        let decoder = JSONDecoder.sentinel()
        for (number, line) in data.split(separator: UInt8(ascii: "\n")).enumerated() {
            guard line.count <= maxLine else {
                throw TuneError(
                    "\(file):\(number + 1): a line longer than \(maxLine / 1_024) KiB is no event Sentinel writes")
            }
            guard let object = (try? JSONSerialization.jsonObject(with: Data(line))) as? [String: Any] else {
                throw TuneError("\(file):\(number + 1): not a JSON object on its line")
            }
            // Gauge readings and other lines are passed over; a visitor event that does not read is an error.
            guard (object["type"] as? String)?.hasPrefix("visitor.") == true else { continue }
            let event: VisitorEvent
            do { event = try decoder.decode(VisitorEvent.self, from: Data(line)) } catch {
                throw TuneError(
                    "\(file):\(number + 1): not a visitor event Sentinel reads (\(TrackFile.describe(error)))"
                        .controlCharactersShown)
            }
            let visitor = event.visitor
            let first = visitor.firstSeen ?? event.time
            let last = visitor.lastSeen ?? event.time
            if visits[visitor.faceId] == nil {
                order.append(visitor.faceId)
                visits[visitor.faceId] = Visit(
                    faceId: visitor.faceId, sourceId: visitor.sourceId, firstSeen: first, lastSeen: last, dwell: 0,
                    zones: [])
            }
            visits[visitor.faceId]!.firstSeen = min(visits[visitor.faceId]!.firstSeen, first)
            visits[visitor.faceId]!.lastSeen = max(visits[visitor.faceId]!.lastSeen, last)
            if let dwell = visitor.dwellSeconds { visits[visitor.faceId]!.dwell = dwell }
            if event.type == .zoneExited, let stay = event.stay {
                visits[visitor.faceId]!.stays.append((stay.zone, stay.enteredAt, stay.exitedAt ?? last))
            }
            if let zones = visitor.zones { visits[visitor.faceId]!.zones = zones }
        }
        return order.map { visits[$0]! }
    }

    /// A visit's stays in each zone as the times its count of open stays changes, in order: +1 at an entry, -1 at the
    /// end of a stay's last second (published times are rounded down, to a second by default).
    typealias ZoneEdges = [String: [(time: Double, step: Int)]]

    static func edges(_ visit: Visit) -> ZoneEdges {
        var edges: ZoneEdges = [:]
        for stay in visit.stays {
            let start = stay.entered.timeIntervalSince1970
            let end = (stay.exited ?? visit.lastSeen).timeIntervalSince1970 + 1
            guard end > start else { continue }
            edges[stay.zone, default: []] += [(start, 1), (end, -1)]
        }
        return edges.mapValues { $0.sorted { ($0.time, $0.step) < ($1.time, $1.step) } }
    }

    /// Seconds two visits were in the same zone at the same time: over every pair of their stays in one zone, the
    /// seconds both lasted, as one walk over both visits' edges (the time both were in, counted once for each pair of
    /// open stays). It costs the stays' count, not their product: 40 visits of 5,000 stays took 120 s.
    static func zoneOverlap(_ x: ZoneEdges, _ y: ZoneEdges) -> Double {
        var seconds = 0.0
        for (zone, xs) in x {
            guard let ys = y[zone] else { continue }
            var (i, j) = (0, 0)
            var open = (x: 0, y: 0)
            var previous = 0.0
            while i < xs.count || j < ys.count {
                let takeX = j == ys.count || (i < xs.count && xs[i].time <= ys[j].time)
                let edge = takeX ? xs[i] : ys[j]
                seconds += Double(open.x * open.y) * (edge.time - previous)
                if takeX {
                    open.x += edge.step
                    i += 1
                } else {
                    open.y += edge.step
                    j += 1
                }
                previous = edge.time
            }
        }
        return seconds
    }

    /// What ranks two visits as the same visitor: their zone time together, then (far behind) their time together.
    static func overlap(_ x: Visit, _ y: Visit, _ xEdges: ZoneEdges, _ yEdges: ZoneEdges) -> Double {
        x.sourceId == y.sourceId ? zoneOverlap(xEdges, yEdges) + 0.01 * timeOverlap(x, y) : 0
    }

    static func timeOverlap(_ x: Visit, _ y: Visit) -> Double {
        guard x.sourceId == y.sourceId else { return 0 }
        let end = min(x.lastSeen, y.lastSeen).addingTimeInterval(1)
        return max(0, end.timeIntervalSince(max(x.firstSeen, y.firstSeen)))
    }

    /// The other run's visits a visit is weighed against, at most: those it shares most with. Matching and splits
    /// read only these, so memory grows with the visits, not with their pairs (5,000 visits at one time and zone made
    /// 25 M pairs: 851 MB).
    static let maxCandidates = 16

    /// For each visit of `xs`, the visits of `ys` seen at the same camera at the same time (a window over `ys` in
    /// order of first sight), best first: the most seconds shared, then the nearest start, then the nearest place in
    /// its run (a run against itself pairs each visit with its own copy).
    static func candidates(_ xs: [Visit], _ ys: [Visit]) -> [[(index: Int, seconds: Double)]] {
        let (xEdges, yEdges) = (xs.map(edges), ys.map(edges))
        var bySource: [String: [Int]] = [:]
        var longest: [String: Double] = [:]
        for (j, y) in ys.enumerated() {
            bySource[y.sourceId, default: []].append(j)
            longest[y.sourceId] = max(longest[y.sourceId] ?? 0, y.seconds)
        }
        for key in bySource.keys { bySource[key]!.sort { (ys[$0].firstSeen, $0) < (ys[$1].firstSeen, $1) } }
        return xs.enumerated().map { i, x in
            guard let order = bySource[x.sourceId] else { return [] }
            // Every visit that can share a second with x began in this window.
            let from = x.firstSeen.addingTimeInterval(-1 - (longest[x.sourceId] ?? 0))
            let to = x.lastSeen.addingTimeInterval(1)
            var low = 0
            var high = order.count
            while low < high {
                let middle = (low + high) / 2
                if ys[order[middle]].firstSeen < from { low = middle + 1 } else { high = middle }
            }
            func rank(_ c: (index: Int, seconds: Double)) -> (Double, Double, Int) {
                (-c.seconds, abs(ys[c.index].firstSeen.timeIntervalSince(x.firstSeen)), abs(c.index - i))
            }
            var best: [(index: Int, seconds: Double)] = []
            for j in order[low...] {
                guard ys[j].firstSeen <= to else { break }
                let seconds = overlap(x, ys[j], xEdges[i], yEdges[j])
                guard seconds > 0 else { continue }
                let candidate = (index: j, seconds: seconds)
                if best.count == maxCandidates {
                    guard rank(candidate) < rank(best[maxCandidates - 1]) else { continue }
                    best.removeLast()
                }
                best.insert(candidate, at: best.firstIndex { rank(candidate) < rank($0) } ?? best.count)
            }
            return best
        }
    }

    public init(a: [Visit], b: [Visit]) {
        let ofA = Self.candidates(a, b)
        let ofB = Self.candidates(b, a)
        var candidates: [(i: Int, j: Int, seconds: Double)] = []
        var listed = Set<Int>()
        for (i, list) in ofA.enumerated() {
            for c in list where listed.insert(i * b.count + c.index).inserted {
                candidates.append((i, c.index, c.seconds))
            }
        }
        for (j, list) in ofB.enumerated() {
            for c in list where listed.insert(c.index * b.count + j).inserted {
                candidates.append((c.index, j, c.seconds))
            }
        }
        func nearness(_ c: (i: Int, j: Int, seconds: Double)) -> (Double, Double, Int, Int, Int) {
            (-c.seconds, abs(a[c.i].firstSeen.timeIntervalSince(b[c.j].firstSeen)), abs(c.i - c.j), c.i, c.j)
        }
        candidates.sort { nearness($0) < nearness($1) }
        var partner: (ofA: [Int: Int], ofB: [Int: Int]) = ([:], [:])
        for c in candidates where partner.ofA[c.i] == nil && partner.ofB[c.j] == nil {
            partner.ofA[c.i] = c.j
            partner.ofB[c.j] = c.i
            pairs.append(Pair(a: a[c.i], b: b[c.j], overlapSeconds: c.seconds))
        }
        pairs.sort { $0.a.firstSeen < $1.a.firstSeen }
        onlyA = a.indices.filter { partner.ofA[$0] == nil }.map { a[$0] }
        onlyB = b.indices.filter { partner.ofB[$0] == nil }.map { b[$0] }
        // Each visit is attributed to the other run's visit it shares most with: two or more attributed to one is a
        // visitor that run split (two visitors side by side share zone time too, but each has a better partner).
        // Among equals, its own partner in the pairing: visits of the same time and zone (a run against itself, a
        // crowd) each belong to their partner, not all to the first of them.
        func attributed(
            _ visits: [Visit], to others: [Visit], candidates: [[(index: Int, seconds: Double)]], partners: [Int: Int]
        ) -> [Int: [Visit]] {
            var groups: [Int: [Visit]] = [:]
            for (index, visit) in visits.enumerated() {
                guard var best = candidates[index].first else { continue }
                if let own = partners[index],
                    Self.overlap(visit, others[own], Self.edges(visit), Self.edges(others[own])) >= best.seconds
                {
                    best.index = own
                }
                groups[best.index, default: []].append(visit)
            }
            return groups
        }
        splitInB = attributed(b, to: a, candidates: ofB, partners: partner.ofB).filter { $0.value.count > 1 }.sorted {
            $0.key < $1.key
        }.map { (a[$0.key], $0.value) }
        splitInA = attributed(a, to: b, candidates: ofA, partners: partner.ofA).filter { $0.value.count > 1 }.sorted {
            $0.key < $1.key
        }.map { (b[$0.key], $0.value) }
    }

    /// What a person reads: the counts, then each difference worth a look.
    public func lines(nameA: String, nameB: String, threshold: Double = 0.5) -> [String] {
        var lines = [
            "\(pairs.count + onlyA.count) visits in \(nameA), \(pairs.count + onlyB.count) in \(nameB); \(pairs.count) matched by zone and time, \(onlyA.count) only in \(nameA), \(onlyB.count) only in \(nameB)"
        ]
        let dwellErrors = pairs.map { abs($0.a.dwell - $0.b.dwell) }
        if !dwellErrors.isEmpty {
            lines.append(
                String(
                    format: "dwell of matched visits: mean difference %.2f s, largest %.2f s",
                    dwellErrors.reduce(0, +) / Double(dwellErrors.count), dwellErrors.max() ?? 0))
        }
        let time = ISO8601.string
        for s in splitInB {
            lines.append(
                "split in \(nameB): \(nameA)'s \(s.a.faceId) (\(time(s.a.firstSeen))) is \(s.b.count) visits there: \(s.b.map(\.faceId).joined(separator: ", "))"
            )
        }
        for s in splitInA {
            lines.append(
                "split in \(nameA): \(nameB)'s \(s.b.faceId) (\(time(s.b.firstSeen))) is \(s.a.count) visits there: \(s.a.map(\.faceId).joined(separator: ", "))"
            )
        }
        for pair in pairs {
            var differences: [String] = []
            if abs(pair.a.dwell - pair.b.dwell) >= threshold {
                differences.append(String(format: "dwell %.1f s against %.1f s", pair.a.dwell, pair.b.dwell))
            }
            let zonesA = Dictionary(pair.a.zones.map { ($0.zone, $0.dwellSeconds) }, uniquingKeysWith: +)
            let zonesB = Dictionary(pair.b.zones.map { ($0.zone, $0.dwellSeconds) }, uniquingKeysWith: +)
            for zone in Set(zonesA.keys).union(zonesB.keys).sorted() {
                let x = zonesA[zone] ?? 0
                let y = zonesB[zone] ?? 0
                if abs(x - y) >= threshold {
                    differences.append(String(format: "%@ %.1f s against %.1f s", zone, x, y))
                }
            }
            if !differences.isEmpty {
                lines.append(
                    "\(pair.a.faceId) ~ \(pair.b.faceId) (\(time(pair.a.firstSeen))): "
                        + differences.joined(separator: "; "))
            }
        }
        for visit in onlyA {
            lines.append(
                "only in \(nameA): \(visit.faceId) \(time(visit.firstSeen)), \(String(format: "%.1f", visit.dwell)) s")
        }
        for visit in onlyB {
            lines.append(
                "only in \(nameB): \(visit.faceId) \(time(visit.firstSeen)), \(String(format: "%.1f", visit.dwell)) s")
        }
        // Ids and names come from the files: shown, never sent to the terminal as escape sequences.
        return lines.map(\.controlCharactersShown)
    }
}
