import Foundation
public import SentinelCore
public import SentinelWire

/// Boxes with identities, frame by frame: a ground truth's or a tracker's, as every label format reads into and writes
/// out of (`TrackFile`). Frames are 0-based; boxes are in pixels of the video.
public struct TrackSet: Sendable, Equatable {
    public struct Entry: Sendable, Equatable {
        public var frame: Int
        public var id: String
        public var box: Box
        public init(frame: Int, id: String, box: Box) {
            self.frame = frame
            self.id = id
            self.box = box
        }
    }

    /// Every box, ordered by frame, then id (numbers by value: MOT files list a frame's boxes so).
    public private(set) var entries: [Entry]
    /// The video's size and length, when the file says them (CVAT and Label Studio do; MOT does not).
    public var width: Int?
    public var height: Int?
    public var frameCount: Int?
    /// Sentinel's own tracks as `replay --tracks` wrote them, which no person has corrected: every CVAT track still
    /// `source="sentinel"` (CVAT writes its own source on export), or a Label Studio task's prediction, not an
    /// annotation. Scored against them, a pipeline is measured against itself.
    public var unreviewed = false

    public init(_ entries: [Entry], width: Int? = nil, height: Int? = nil, frameCount: Int? = nil) {
        self.entries = entries.sorted { a, b in a.frame != b.frame ? a.frame < b.frame : Self.idOrder(a.id, b.id) }
        self.width = width
        self.height = height
        self.frameCount = frameCount
    }

    /// The boxes of each frame that has any.
    public var frames: [Int: [Entry]] { Dictionary(grouping: entries, by: \.frame) }

    /// The identities, in id order.
    public var ids: [String] { Array(Set(entries.map(\.id))).sorted(by: Self.idOrder) }

    /// Ids that are numbers by value, before any other, which go by text.
    static func idOrder(_ a: String, _ b: String) -> Bool {
        switch (Int(a), Int(b)) {
        case (let x?, let y?): x < y
        case (.some, nil): true
        case (nil, .some): false
        case (nil, nil): a < b
        }
    }

    /// A recording's ground truth as a track set: each drawn face, those mostly hidden by scenery left out (nobody is
    /// expected to detect them).
    public init(_ truth: GroundTruth) {
        self.init(
            truth.frames.flatMap { frame in
                frame.faces.filter { !$0.isOccluded }.map { Entry(frame: frame.index, id: $0.visitor, box: $0.box) }
            }, width: truth.width, height: truth.height, frameCount: truth.frames.count)
    }
}

/// The minimum-cost assignment of rows to columns (Kuhn-Munkres with potentials, O(n²m)). `nil` marks a pair that may
/// not be assigned: as many allowed pairs as possible are assigned first, then the cheapest such set, as py-motmetrics
/// and scipy's `linear_sum_assignment` with its "expensive edges" do.
enum Assignment {
    static func minimumCost(_ cost: [[Double?]]) -> [(row: Int, column: Int)] {
        let rows = cost.count
        let columns = cost.first?.count ?? 0
        guard rows > 0, columns > 0 else { return [] }
        // Larger than any sum of allowed costs: one forbidden pair more always costs more than any allowed ones.
        let allowed = cost.joined().compactMap { $0 }
        let spread = (allowed.max() ?? 0) - min(allowed.min() ?? 0, 0)
        let forbidden = Double(min(rows, columns) + 1) * (spread + 1)
        let transposed = rows > columns
        let n = transposed ? columns : rows
        let m = transposed ? rows : columns
        func at(_ i: Int, _ j: Int) -> Double {
            (transposed ? cost[j][i] : cost[i][j]) ?? forbidden
        }
        // 1-based arrays, as the classic formulation: column 0 is the virtual start.
        var u = [Double](repeating: 0, count: n + 1)
        var v = [Double](repeating: 0, count: m + 1)
        var owner = [Int](repeating: 0, count: m + 1)
        var way = [Int](repeating: 0, count: m + 1)
        for i in 1...n {
            owner[0] = i
            var j0 = 0
            var least = [Double](repeating: .infinity, count: m + 1)
            var used = [Bool](repeating: false, count: m + 1)
            repeat {
                used[j0] = true
                let i0 = owner[j0]
                var delta = Double.infinity
                var j1 = 0
                for j in 1...m where !used[j] {
                    let reduced = at(i0 - 1, j - 1) - u[i0] - v[j]
                    if reduced < least[j] {
                        least[j] = reduced
                        way[j] = j0
                    }
                    if least[j] < delta {
                        delta = least[j]
                        j1 = j
                    }
                }
                for j in 0...m {
                    if used[j] {
                        u[owner[j]] += delta
                        v[j] -= delta
                    } else {
                        least[j] -= delta
                    }
                }
                j0 = j1
            } while owner[j0] != 0
            repeat {
                let j1 = way[j0]
                owner[j0] = owner[j1]
                j0 = j1
            } while j0 != 0
        }
        var pairs: [(row: Int, column: Int)] = []
        for j in 1...m where owner[j] != 0 {
            let (row, column) = transposed ? (j - 1, owner[j] - 1) : (owner[j] - 1, j - 1)
            if cost[row][column] != nil { pairs.append((row, column)) }
        }
        return pairs.sorted { ($0.row, $0.column) < ($1.row, $1.column) }
    }
}
