import SentinelCore
import SentinelPrivacy
import SentinelVision
import SentinelWire

/// Where a face may be that no detection found, for the masks of every frame shown to people: whatever differs from
/// the empty scene in a band along the frame's edges (someone coming in, their face partly in view, scores low or
/// not at all), and wherever a face seen on the frame before was masked while the picture there still differs from
/// the empty scene, stretched over what differs beside it (a face gone partly behind a pillar, or stopped half out
/// of view, where the tracker's prediction has moved on, lags or ended). Masks cover more than faces this way; a wrong "no face here" would expose someone.
///
/// The empty scene is learned cell by cell on a thumbnail's grid (`ChangeWatch`'s): a cell that has not changed from
/// one frame to the next for `driftSeconds` while it matches the scene follows it (light drifting), and one that
/// differs from the scene but has held still for `settleSeconds` becomes part of it (a parked trolley; also a person
/// standing perfectly still that long, whose face is then masked only where detected). The scene starts as the first
/// frame: someone already standing still there, partly in view at an edge, is masked only once they move or are
/// found. Decided by the frames and
/// their media time alone, so a replay at any pace and a live camera mask alike. Detection, tracking and emotion
/// never see any of this: it changes what people see only.
struct ForegroundWatch {
    /// The band's width, as a fraction of the frame's shorter side (0: no band).
    let band: Double
    /// Seconds a changed cell must hold still to become part of the scene (0: no masks beyond the faces found).
    let settleSeconds: Double
    static let driftSeconds = 2.0
    /// Masks held at most, beyond the faces found (a bound on the work a frame's masks take).
    static let maxHeld = 64
    /// A mask is held while at least this share of it differs from the empty scene: a face two-thirds behind a pillar
    /// still differs over a sixth of its mask (its visible part, hair), a passer-by's elbow over less.
    static let heldShare = 0.1

    private var scene: Image?
    private var previous: Image?
    private var stillSince: [MediaTime] = []
    /// What the last frame's masks of faces covered (the edge band's are made anew each frame).
    private var held: [Box] = []

    init(settings: ReviewSettings) {
        band = settings.edgeBand
        settleSeconds = settings.settleSeconds
    }

    /// The regions of `frame` to mask beyond its faces' masks. `seen`: the masks (as `FaceMasks` grows them) of the
    /// faces seen in it, detected or a visitor found; only those are held, since a prediction's mask already follows
    /// the track and grows.
    mutating func regions(_ frame: Frame, seen: [Box]) throws(VisionError) -> [Box] {
        guard settleSeconds > 0 else { return [] }
        let thumbnail: Image
        if let made = frame.thumbnail {
            thumbnail = made
        } else {
            thumbnail = try ChangeWatch.thumbnail(of: frame.image)
        }
        let (width, height) = (Double(frame.image.width), Double(frame.image.height))
        let columns = ChangeWatch.columns
        let rows = max(1, Int((Double(columns) * height / width).rounded()))
        let count = columns * rows
        if scene?.width != thumbnail.width || scene?.height != thumbnail.height {
            // The first frame (or a new size): the empty scene as it is.
            scene = try thumbnail.clone()
            previous = thumbnail
            stillSince = Array(repeating: frame.time, count: count)
            held = []
        }
        guard let scene, let previous else { return [] }
        let moved = try thumbnail.differences(from: previous, columns: columns, rows: rows)
        let changed = try thumbnail.differences(from: scene, columns: columns, rows: rows)
        var follow = [Bool](repeating: false, count: count)
        for cell in 0..<count {
            if moved[cell] >= ChangeWatch.threshold { stillSince[cell] = frame.time }
            let still = (frame.time - stillSince[cell]).seconds
            follow[cell] = still >= (changed[cell] >= ChangeWatch.threshold ? settleSeconds : Self.driftSeconds)
        }
        try scene.copyCells(from: thumbnail, columns: columns, rows: rows, which: follow)
        self.previous = thumbnail
        let (cellWidth, cellHeight) = (width / Double(columns), height / Double(rows))
        func box(_ cell: Int) -> Box {
            Box(
                x: Double(cell % columns) * cellWidth, y: Double(cell / columns) * cellHeight, width: cellWidth,
                height: cellHeight)
        }
        let foreground = (0..<count).filter { changed[$0] >= ChangeWatch.threshold && !follow[$0] }
        // The band: whatever differs there, by connected part of each side, grown by a cell.
        let side = band * min(width, height)
        var sides: [[Int]] = [[], [], [], []]
        for cell in foreground {
            let b = box(cell)
            if b.x < side {
                sides[0].append(cell)
            } else if b.maxX > width - side {
                sides[1].append(cell)
            } else if b.y < side {
                sides[2].append(cell)
            } else if b.maxY > height - side {
                sides[3].append(cell)
            }
        }
        let edges = sides.flatMap { Self.parts(of: Set($0), columns: columns) }.map { part in
            let boxes = part.map(box)
            let x = boxes.map(\.x).min()! - cellWidth
            let y = boxes.map(\.y).min()! - cellHeight
            return Box(
                x: x, y: y, width: boxes.map(\.maxX).max()! + cellWidth - x,
                height: boxes.map(\.maxY).max()! + cellHeight - y)
        }
        // The last frame's masks of faces seen, where something still differs under them and this frame's do not
        // cover them (a prediction's mask does not count: it ends when the track's coasting does), each stretched over what differs beside it, within a quarter of its side across and an eighth up
        // and down (a face that went on moving behind a pillar faster than its track predicts; not the body below).
        // Held where they were: stretching does not carry over to the next frame.
        let cells = foreground.map(box)
        let kept = held.filter { region in
            let under = cells.compactMap { region.intersection($0)?.area }.reduce(0, +)
            return under >= Self.heldShare * region.area
                && !seen.contains { ($0.intersection(region)?.area ?? 0) >= 0.9 * region.area }
        }.prefix(Self.maxHeld)
        let stretched = kept.map { region in
            let side = max(region.width, region.height)
            let reach = Box(
                x: region.x - side / 4, y: region.y - side / 8, width: region.width + side / 2,
                height: region.height + side / 4)
            return cells.compactMap { $0.intersection(reach) }.reduce(region) { $0.union($1) }
        }
        held = seen + kept
        return edges + stretched
    }

    /// The 4-connected parts of a set of grid cells.
    static func parts(of cells: Set<Int>, columns: Int) -> [[Int]] {
        var left = cells
        var parts: [[Int]] = []
        while let start = left.popFirst() {
            var part = [start]
            var stack = [start]
            while let cell = stack.popLast() {
                var next = [cell - columns, cell + columns]
                if cell % columns > 0 { next.append(cell - 1) }
                if cell % columns < columns - 1 { next.append(cell + 1) }
                for n in next where left.remove(n) != nil {
                    part.append(n)
                    stack.append(n)
                }
            }
            parts.append(part)
        }
        return parts.sorted { $0.min()! < $1.min()! }
    }
}
