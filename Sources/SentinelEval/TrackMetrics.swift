import Foundation
public import SentinelCore
import SentinelWire

/// The standard multi-object tracking figures of tracks against ground truth, by their published definitions and
/// computed as the reference implementations compute them (checked in a test against both on the MOT data that
/// py-motmetrics ships, to 1e-4):
///
/// - CLEAR MOT (Bernardin & Stiefelhagen 2008) as py-motmetrics: per frame, pairs from the previous frame are kept
///   while their IoU distance (1 - IoU) is at most `threshold`; the rest are matched by a minimum-cost assignment. A
///   match whose object was last matched to another track is an ID switch. `motp` is the mean IoU distance of the
///   matches (lower is better), as py-motmetrics reports it. Fragmentations count the times a followed object is lost
///   and followed again; an object is mostly tracked at >= 80 % of its frames matched, mostly lost below 20 %.
/// - ID measures (Ristani et al. 2016): the one-to-one assignment of tracks to objects that maximises the frames in
///   which they overlap within `threshold` (IDTP); IDP, IDR and IDF1 from it.
/// - HOTA (Luiten et al. 2021) as TrackEval: for each localisation threshold α from 0.05 to 0.95, per frame a
///   maximum assignment weighted by IoU and the ids' global alignment; DetA, AssA and LocA; the figures are the means
///   over α.
///
/// Several sequences combine as the references combine them: counts add up (each sequence with its own ID
/// assignment), HOTA's association terms are weighted by each sequence's true positives.
public struct TrackMetrics: Sendable, Codable, Equatable {
    public var idf1 = 0.0
    public var idp = 0.0
    public var idr = 0.0
    public var mota = 0.0
    public var motp = 0.0
    public var hota = 0.0
    public var detA = 0.0
    public var assA = 0.0
    public var locA = 0.0
    public var precision = 0.0
    public var recall = 0.0
    public var idSwitches = 0
    public var fragmentations = 0
    public var mostlyTracked = 0
    public var partiallyTracked = 0
    public var mostlyLost = 0
    public var falsePositives = 0
    public var misses = 0
    /// Ground-truth boxes, and track boxes.
    public var objects = 0
    public var predictions = 0
    public var frames = 0
    /// What combining needs: the ID true positives, the matches' summed distance, and HOTA's per-α sums.
    public var counts = Counts()

    public struct Counts: Sendable, Codable, Equatable {
        public var matches = 0
        public var idtp = 0
        public var distance = 0.0
        /// Per α: true positives, misses and false positives, summed similarity of the matches, and the true
        /// positives' association accuracy summed (AssA × TP).
        public var hotaTP = [Double](repeating: 0, count: HOTA.alphas.count)
        public var hotaFN = [Double](repeating: 0, count: HOTA.alphas.count)
        public var hotaFP = [Double](repeating: 0, count: HOTA.alphas.count)
        public var locSum = [Double](repeating: 0, count: HOTA.alphas.count)
        public var assSum = [Double](repeating: 0, count: HOTA.alphas.count)
    }

    public init() {}

    /// The most steps of matching scoring takes on. Each frame's boxes are matched by an assignment of about
    /// labelled x tracked x the fewer of them steps (a frame of ten faces: 1,000; 1,000 boxes stacked at one spot:
    /// 10^9), twice (CLEAR MOT, HOTA), as is each group of ids that overlap one another once; beyond this, scoring is
    /// refused before any matching. Measured (release, one core): 200 boxes stacked a frame over 100 frames, 1.6 x 10^9
    /// steps, 6.4 s; 1,000 over 100 frames took 746 s before it was refused.
    public static let maxMatchingSteps = 2_000_000_000
    /// The most pairs of a labelled and a tracked id that ever overlap, each held in the tables: 60 boxes stacked a
    /// frame with ids new every frame over 1,380 frames, 4.97 M pairs, peaked at 364 MB.
    public static let maxPairs = 5_000_000

    /// Tracks and labels that cannot be scored within the bounds above.
    public struct TooLarge: SentinelError {
        public var code: String { "tooLarge" }
        public let message: String
    }

    /// The figures of one sequence. `threshold` is the largest IoU distance (1 - IoU) a match may have.
    public static func evaluate(
        truth: TrackSet, tracks: TrackSet, threshold: Double = 0.5
    ) throws(TooLarge) -> TrackMetrics {
        try checkSteps(truth: truth, tracks: tracks)
        var metrics = TrackMetrics()
        let ids = IDs(truth: truth, tracks: tracks)
        // HOTA first: it meets every overlapping pair, and so refuses too many before the ID measures hold them.
        try HOTA.evaluate(truth: truth, tracks: tracks, ids: ids, into: &metrics.counts)
        try metrics.clear(truth: truth, tracks: tracks, ids: ids, threshold: threshold)
        metrics.finish()
        return metrics
    }

    /// The steps of an assignment of `rows` to `columns`.
    static func steps(_ rows: Int, _ columns: Int) -> Int { rows * columns * min(rows, columns) }

    /// Refuses, from the boxes' count per frame alone, what would take more than `maxMatchingSteps`.
    static func checkSteps(truth: TrackSet, tracks: TrackSet) throws(TooLarge) {
        func perFrame(_ set: TrackSet) -> [Int: Int] { set.entries.reduce(into: [:]) { $0[$1.frame, default: 0] += 1 } }
        let tracked = perFrame(tracks)
        var total = 0
        var busiest = (frame: 0, labelled: 0, tracked: 0, steps: 0)
        for (frame, labelled) in perFrame(truth) {
            guard let tracked = tracked[frame] else { continue }
            let steps = steps(labelled, tracked)
            total += steps
            if (steps, -frame) > (busiest.steps, -busiest.frame) { busiest = (frame, labelled, tracked, steps) }
        }
        // Each frame is matched twice (CLEAR MOT, HOTA).
        guard 2 * total <= maxMatchingSteps else {
            throw TooLarge(
                message:
                    "matching the boxes frame by frame takes \(2 * total) steps, more than the \(maxMatchingSteps) "
                    + "scoring takes on: frame \(busiest.frame) alone matches \(busiest.labelled) labelled with "
                    + "\(busiest.tracked) tracked boxes (a frame's boxes that all overlap are matched each with each)")
        }
    }

    /// Several sequences as one.
    public static func combined(_ sequences: [TrackMetrics]) -> TrackMetrics {
        var total = TrackMetrics()
        for s in sequences {
            total.idSwitches += s.idSwitches
            total.fragmentations += s.fragmentations
            total.mostlyTracked += s.mostlyTracked
            total.partiallyTracked += s.partiallyTracked
            total.mostlyLost += s.mostlyLost
            total.falsePositives += s.falsePositives
            total.misses += s.misses
            total.objects += s.objects
            total.predictions += s.predictions
            total.frames += s.frames
            total.counts.matches += s.counts.matches
            total.counts.idtp += s.counts.idtp
            total.counts.distance += s.counts.distance
            for a in HOTA.alphas.indices {
                total.counts.hotaTP[a] += s.counts.hotaTP[a]
                total.counts.hotaFN[a] += s.counts.hotaFN[a]
                total.counts.hotaFP[a] += s.counts.hotaFP[a]
                total.counts.locSum[a] += s.counts.locSum[a]
                total.counts.assSum[a] += s.counts.assSum[a]
            }
        }
        total.finish()
        return total
    }

    /// The ratios from the counts.
    private mutating func finish() {
        func ratio(_ a: Double, _ b: Double) -> Double { b > 0 ? a / b : 0 }
        let detections = Double(counts.matches + idSwitches)
        let idtp = Double(counts.idtp)
        let idfp = Double(predictions) - idtp
        let idfn = Double(objects) - idtp
        idp = ratio(idtp, idtp + idfp)
        idr = ratio(idtp, idtp + idfn)
        idf1 = ratio(2 * idtp, 2 * idtp + idfp + idfn)
        mota = objects > 0 ? 1 - Double(misses + idSwitches + falsePositives) / Double(objects) : 0
        motp = ratio(counts.distance, detections)
        precision = ratio(detections, detections + Double(falsePositives))
        recall = ratio(detections, Double(objects))
        var sums = (hota: 0.0, detA: 0.0, assA: 0.0, locA: 0.0)
        for a in HOTA.alphas.indices {
            let tp = counts.hotaTP[a]
            let det = tp / max(1, tp + counts.hotaFN[a] + counts.hotaFP[a])
            let ass = counts.assSum[a] / max(1, tp)
            sums.detA += det
            sums.assA += ass
            sums.hota += (det * ass).squareRoot()
            sums.locA += max(1e-10, counts.locSum[a]) / max(1e-10, tp)
        }
        let n = Double(HOTA.alphas.count)
        (hota, detA, assA, locA) = (sums.hota / n, sums.detA / n, sums.assA / n, sums.locA / n)
    }

    /// Each id as a number, objects and tracks apart: a pair of them is `object * tracks + track`, one integer, so
    /// that the tables of pairs cost what the pairs that overlap cost, without a string in them.
    struct IDs {
        let object: [String: Int]
        let track: [String: Int]
        var tracks: Int { max(track.count, 1) }

        init(truth: TrackSet, tracks: TrackSet) {
            object = Dictionary(uniqueKeysWithValues: truth.ids.enumerated().map { ($1, $0) })
            track = Dictionary(uniqueKeysWithValues: tracks.ids.enumerated().map { ($1, $0) })
        }

        func pair(_ object: String, _ track: String) -> Int { self.object[object]! * tracks + self.track[track]! }
    }

    /// CLEAR MOT and the ID measures, frame by frame.
    private mutating func clear(truth: TrackSet, tracks: TrackSet, ids: IDs, threshold: Double) throws(TooLarge) {
        let truthFrames = truth.frames
        let trackFrames = tracks.frames
        let frameIndices = Set(truthFrames.keys).union(trackFrames.keys).sorted()
        frames = frameIndices.count
        var matchedTo: [String: String] = [:]
        var followed: [String: [Bool]] = [:]  // per object, per frame it is present in: matched?
        var overlaps: [Int: Int] = [:]  // pair -> frames within the threshold
        var objectFrames: [String: Int] = [:]
        var trackFrameCounts: [String: Int] = [:]
        for index in frameIndices {
            let objects = truthFrames[index] ?? []
            let hypotheses = trackFrames[index] ?? []
            self.objects += objects.count
            predictions += hypotheses.count
            for o in objects { objectFrames[o.id, default: 0] += 1 }
            for h in hypotheses { trackFrameCounts[h.id, default: 0] += 1 }
            var distance: [[Double?]] = objects.map { o in
                hypotheses.map { h in
                    let d = 1 - o.box.iou(h.box)
                    return d <= threshold ? d : nil
                }
            }
            for (i, o) in objects.enumerated() {
                for (j, h) in hypotheses.enumerated() where distance[i][j] != nil {
                    overlaps[ids.pair(o.id, h.id), default: 0] += 1
                }
            }
            var objectMatched = [Bool](repeating: false, count: objects.count)
            var trackMatched = [Bool](repeating: false, count: hypotheses.count)
            func match(_ i: Int, _ j: Int, _ d: Double) {
                objectMatched[i] = true
                trackMatched[j] = true
                counts.distance += d
                matchedTo[objects[i].id] = hypotheses[j].id
            }
            // 1. Pairs carried from before, while still within the threshold.
            for (i, o) in objects.enumerated() {
                guard let previous = matchedTo[o.id],
                    let j = hypotheses.indices.first(where: { !trackMatched[$0] && hypotheses[$0].id == previous }),
                    let d = distance[i][j]
                else { continue }
                counts.matches += 1
                match(i, j, d)
            }
            // 2. The rest by minimum cost.
            for i in objects.indices where objectMatched[i] { distance[i] = distance[i].map { _ in nil } }
            for j in hypotheses.indices where trackMatched[j] { for i in objects.indices { distance[i][j] = nil } }
            for (i, j) in Assignment.minimumCost(distance) {
                if let previous = matchedTo[objects[i].id], previous != hypotheses[j].id {
                    idSwitches += 1
                } else {
                    counts.matches += 1
                }
                match(i, j, distance[i][j]!)
            }
            misses += objectMatched.filter { !$0 }.count
            falsePositives += trackMatched.filter { !$0 }.count
            for (i, o) in objects.enumerated() { followed[o.id, default: []].append(objectMatched[i]) }
        }
        for states in followed.values {
            let ratio = Double(states.filter { $0 }.count) / Double(states.count)
            if ratio >= 0.8 {
                mostlyTracked += 1
            } else if ratio >= 0.2 {
                partiallyTracked += 1
            } else {
                mostlyLost += 1
            }
            guard let first = states.firstIndex(of: true), let last = states.lastIndex(of: true) else { continue }
            fragmentations += (first..<last).filter { states[$0] && !states[$0 + 1] }.count
        }
        // ID measures: the assignment that maximises the frames in common. A pair that never overlaps adds nothing,
        // so each group of ids linked by overlaps is assigned on its own: memory and time grow with the pairs that
        // overlap, not with ids squared.
        let width = ids.tracks
        let groups = Self.linkedGroups(overlaps.keys, objects: ids.object.count, tracks: width)
        let steps = groups.reduce(0) { $0 + Self.steps($1.objects.count, $1.tracks.count) }
        guard steps <= Self.maxMatchingSteps, groups.allSatisfy({ $0.objects.count * $0.tracks.count <= Self.maxPairs })
        else {
            let largest = groups.max { $0.objects.count * $0.tracks.count < $1.objects.count * $1.tracks.count }!
            throw TooLarge(
                message:
                    "the ID measures would match \(largest.objects.count) labelled with \(largest.tracks.count) "
                    + "tracked ids that overlap one another, more than scoring takes on (\(Self.maxPairs) pairs, "
                    + "\(Self.maxMatchingSteps) steps)")
        }
        for (objectIDs, trackIDs) in groups {
            let weights: [[Double?]] = objectIDs.map { o in trackIDs.map { t in -Double(overlaps[o * width + t] ?? 0) }
            }
            counts.idtp += Assignment.minimumCost(weights).reduce(0) {
                $0 + (overlaps[objectIDs[$1.row] * width + trackIDs[$1.column]] ?? 0)
            }
        }
    }

    /// The connected groups of the bipartite graph whose edges are the overlapping pairs (`object * tracks + track`),
    /// each group's objects and tracks in order.
    static func linkedGroups(
        _ pairs: some Sequence<Int>, objects: Int, tracks: Int
    ) -> [(objects: [Int], tracks: [Int])] {
        // Union-find over objects (0..<objects) and tracks (objects + track).
        var parent = Array(0..<(objects + tracks))
        var linked = [Bool](repeating: false, count: objects + tracks)
        func root(_ node: Int) -> Int {
            var node = node
            while parent[node] != node {
                parent[node] = parent[parent[node]]
                node = parent[node]
            }
            return node
        }
        for pair in pairs {
            let (object, track) = (pair / tracks, objects + pair % tracks)
            linked[object] = true
            linked[track] = true
            let (a, b) = (root(object), root(track))
            if a != b { parent[a] = b }
        }
        var groups: [Int: (objects: [Int], tracks: [Int])] = [:]
        for node in parent.indices where linked[node] {
            if node < objects {
                groups[root(node), default: ([], [])].objects.append(node)
            } else {
                groups[root(node), default: ([], [])].tracks.append(node - objects)
            }
        }
        return groups.keys.sorted().map { groups[$0]! }
    }
}

/// HOTA as TrackEval computes it.
enum HOTA {
    /// 0.05, 0.10, ... 0.95, as numpy's `arange(0.05, 0.99, 0.05)` makes them.
    static let alphas = (0..<19).map { 0.05 + Double($0) * 0.05 }

    static func evaluate(
        truth: TrackSet, tracks: TrackSet, ids: TrackMetrics.IDs, into counts: inout TrackMetrics.Counts
    ) throws(TrackMetrics.TooLarge) {
        let objectIndex = ids.object
        let trackIndex = ids.track
        let truthFrames = truth.frames
        let trackFrames = tracks.frames
        let frameIndices = Set(truthFrames.keys).union(trackFrames.keys).sorted()
        guard !tracks.entries.isEmpty, !truth.entries.isEmpty else {
            for a in alphas.indices {
                counts.hotaFN[a] += Double(truth.entries.count)
                counts.hotaFP[a] += Double(tracks.entries.count)
            }
            return
        }
        let no = objectIndex.count
        let nt = trackIndex.count
        // Keyed by object * nt + track, only for pairs that share a frame: each pair's potential, then its alignment.
        var alignment: [Int: Double] = [:]
        var objectCount = [Double](repeating: 0, count: no)
        var trackCount = [Double](repeating: 0, count: nt)
        // A frame's ids and similarities, made again where the second pass needs them: kept for every frame, they
        // cost as much as every pair of boxes of the sequence (200 stacked a frame over 1,000 frames: 320 MB).
        func step(_ index: Int) -> (objects: [Int], tracks: [Int], similarity: [[Double]]) {
            let objects = truthFrames[index] ?? []
            let hypotheses = trackFrames[index] ?? []
            return (
                objects.map { objectIndex[$0.id]! }, hypotheses.map { trackIndex[$0.id]! },
                objects.map { o in hypotheses.map { o.box.iou($0.box) } }
            )
        }
        let eps = Double.ulpOfOne
        for index in frameIndices {
            let (g, t, similarity) = step(index)
            let rowSums = similarity.map { $0.reduce(0, +) }
            let columnSums = t.indices.map { j in similarity.reduce(0) { $0 + $1[j] } }
            for i in g.indices {
                for j in t.indices {
                    let denominator = columnSums[j] + rowSums[i] - similarity[i][j]
                    if denominator > eps, similarity[i][j] > 0 {
                        alignment[g[i] * nt + t[j], default: 0] += similarity[i][j] / denominator
                    }
                }
            }
            for i in g { objectCount[i] += 1 }
            for j in t { trackCount[j] += 1 }
            guard alignment.count <= TrackMetrics.maxPairs else {
                throw TrackMetrics.TooLarge(
                    message:
                        "more than \(TrackMetrics.maxPairs) pairs of a labelled and a tracked id overlap (by frame "
                        + "\(index)), more than scoring holds: ids that change from frame to frame on boxes that "
                        + "overlap")
            }
        }
        // Each pair's potential becomes its global alignment in place (a second table doubled the pairs' cost).
        var index = alignment.values.startIndex
        while index != alignment.values.endIndex {
            let key = alignment.keys[index]
            let p = alignment.values[index]
            alignment.values[index] = p / (objectCount[key / nt] + trackCount[key % nt] - p)
            alignment.values.formIndex(after: &index)
        }
        // Per pair and the highest α its similarity reached, the frames it was matched so: one table for every α, as
        // a pair matched at an α is matched at each lower one.
        var matched: [Int: Double] = [:]
        for index in frameIndices {
            let step = step(index)
            if step.objects.isEmpty || step.tracks.isEmpty {
                for a in alphas.indices {
                    counts.hotaFP[a] += Double(step.tracks.count)
                    counts.hotaFN[a] += Double(step.objects.count)
                }
                continue
            }
            let score: [[Double?]] = step.objects.indices.map { i in
                step.tracks.indices.map { j in
                    -(alignment[step.objects[i] * nt + step.tracks[j]] ?? 0) * step.similarity[i][j]
                }
            }
            var matchedAt = [Int](repeating: 0, count: alphas.count)
            for pair in Assignment.minimumCost(score) {
                let similarity = step.similarity[pair.row][pair.column]
                guard let top = alphas.lastIndex(where: { similarity >= $0 - eps }) else { continue }
                for a in 0...top {
                    matchedAt[a] += 1
                    counts.locSum[a] += similarity
                }
                matched[(step.objects[pair.row] * nt + step.tracks[pair.column]) * alphas.count + top, default: 0] += 1
            }
            for a in alphas.indices {
                counts.hotaTP[a] += Double(matchedAt[a])
                counts.hotaFN[a] += Double(step.objects.count - matchedAt[a])
                counts.hotaFP[a] += Double(step.tracks.count - matchedAt[a])
            }
        }
        // In pair order, as the dense table was summed, so that the figure does not depend on hashing.
        let keys = matched.keys.sorted()
        var k = 0
        while k < keys.count {
            let pair = keys[k] / alphas.count
            var framesAt = [Double](repeating: 0, count: alphas.count)
            while k < keys.count, keys[k] / alphas.count == pair {
                framesAt[keys[k] % alphas.count] = matched[keys[k]]!
                k += 1
            }
            var m = 0.0
            for a in alphas.indices.reversed() {
                m += framesAt[a]
                // TrackEval's AssA is this sum over TP; kept as the sum, so that sequences combine weighted by TP.
                if m > 0 { counts.assSum[a] += m * m / max(1, objectCount[pair / nt] + trackCount[pair % nt] - m) }
            }
        }
    }
}
