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
/// The empty scene is learned cell by cell on a thumbnail's grid (`ChangeWatch`'s), and nothing is taken for it
/// until learned: a cell is part of it once it has held still for `settleSeconds` with no face found over it, and
/// until then it counts as differing (the whole edge band is masked from the first frame, and a face's mask is held
/// there): someone already in view when the pipeline starts, holding still, is never the empty scene. A learned cell
/// that has not changed from one frame to the next for `driftSeconds` while it matches the scene follows it (light
/// drifting), and one that differs but has held still for `settleSeconds` with no face found over it joins it (a
/// parked trolley). A face found at any score (`seen`) keeps the cells it covers from settling until they change with
/// no face over them: someone found once who then holds still, found no more, is never taken for the empty scene.
/// Decided by the frames and their media time alone, so a replay at any pace and a live camera mask alike. Detection,
/// tracking and emotion never see any of this: it changes what people see only.
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
    /// Media seconds since which each cell has not changed from one frame to the next, nor had a face over it.
    private var stillSince: [Double] = []
    /// Whether each cell is learned: part of the empty scene.
    private var known: [Bool] = []
    /// Whether a face was found over each cell and it has not changed since with no face over it: someone may still be
    /// there, found or not, and the cell neither settles nor follows the picture until they move.
    private var occupied: [Bool] = []
    /// What the last frame's masks of faces covered (the edge band's are made anew each frame).
    private var held: [Box] = []
    /// Whether, at the last frame, every cell of the edge band was learned and none differed: nobody is at the edges
    /// (and the search for faces the edges cut may rest: a face it finds keeps its cells from settling).
    private(set) var bandSettled = false

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
            stillSince = Array(repeating: frame.time.seconds, count: count)
            known = Array(repeating: false, count: count)
            occupied = Array(repeating: false, count: count)
            held = []
        }
        guard let scene, let previous else { return [] }
        let moved = try thumbnail.differences(from: previous, columns: columns, rows: rows)
        let changed = try thumbnail.differences(from: scene, columns: columns, rows: rows)
        let now = frame.time.seconds
        let threshold = ChangeWatch.threshold
        let (cellWidth, cellHeight) = (width / Double(columns), height / Double(rows))
        // A face found over a cell: occupied, and not still, whatever the picture does.
        func cell(_ position: Double, _ side: Double, _ count: Int) -> Int {
            Int(min(Double(count - 1), max(0, position / side)))
        }
        var faceOver = [Bool](repeating: false, count: count)
        for face in seen {
            let (firstColumn, lastColumn) = (cell(face.x, cellWidth, columns), cell(face.maxX, cellWidth, columns))
            let (firstRow, lastRow) = (cell(face.y, cellHeight, rows), cell(face.maxY, cellHeight, rows))
            guard firstColumn <= lastColumn, firstRow <= lastRow else { continue }
            for row in firstRow...lastRow {
                for column in firstColumn...lastColumn { faceOver[row * columns + column] = true }
            }
        }
        var follow = [Bool](repeating: false, count: count)
        var differs = [Bool](repeating: false, count: count)
        var anyDiffers = false
        let bandColumns = Int((band * min(width, height) / cellWidth).rounded(.up))
        let bandRows = Int((band * min(width, height) / cellHeight).rounded(.up))
        func inBand(_ cell: Int) -> Bool {
            let (row, column) = (cell / columns, cell % columns)
            return column < bandColumns || column >= columns - bandColumns || row < bandRows || row >= rows - bandRows
        }
        bandSettled = true
        for cell in 0..<count {
            if faceOver[cell] {
                occupied[cell] = true
                stillSince[cell] = now
            } else if moved[cell] >= threshold {
                // Changed with no face over it: whoever was found there has moved.
                occupied[cell] = false
                stillSince[cell] = now
            }
            let changes = changed[cell] >= threshold || !known[cell]
            follow[cell] =
                !occupied[cell] && now - stillSince[cell] >= (changes ? settleSeconds : Self.driftSeconds)
            known[cell] = known[cell] || follow[cell]
            differs[cell] = changes && !follow[cell]
            anyDiffers = anyDiffers || differs[cell]
            if differs[cell] && inBand(cell) { bandSettled = false }
        }
        try scene.copyCells(from: thumbnail, columns: columns, rows: rows, which: follow)
        self.previous = thumbnail
        func box(_ cell: Int) -> Box {
            Box(
                x: Double(cell % columns) * cellWidth, y: Double(cell / columns) * cellHeight, width: cellWidth,
                height: cellHeight)
        }
        guard anyDiffers else {
            held = seen
            return []
        }
        // The band: whatever differs there, by connected part of each side, grown by a cell. A cell's side: left or
        // right for the columns within the band, else top or bottom.
        var sideOf = [Int](repeating: -1, count: count)
        for cell in 0..<count where differs[cell] {
            let (row, column) = (cell / columns, cell % columns)
            sideOf[cell] =
                column < bandColumns
                ? 0 : column >= columns - bandColumns ? 1 : row < bandRows ? 2 : row >= rows - bandRows ? 3 : -1
        }
        let edges = Self.parts(sideOf, columns: columns).map { part in
            Box(
                x: Double(part.minColumn - 1) * cellWidth, y: Double(part.minRow - 1) * cellHeight,
                width: Double(part.maxColumn - part.minColumn + 3) * cellWidth,
                height: Double(part.maxRow - part.minRow + 3) * cellHeight)
        }
        /// The area that differs under `region`, and its extent there: only the grid's cells it spans are looked at.
        func differing(in region: Box) -> (area: Double, extent: Box?) {
            let firstColumn = max(0, Int(region.x / cellWidth))
            let lastColumn = min(columns - 1, Int(region.maxX / cellWidth))
            let firstRow = max(0, Int(region.y / cellHeight))
            let lastRow = min(rows - 1, Int(region.maxY / cellHeight))
            var area = 0.0
            var extent: Box?
            guard firstColumn <= lastColumn, firstRow <= lastRow else { return (0, nil) }
            for row in firstRow...lastRow {
                for column in firstColumn...lastColumn where differs[row * columns + column] {
                    guard let part = box(row * columns + column).intersection(region) else { continue }
                    area += part.area
                    extent = extent?.union(part) ?? part
                }
            }
            return (area, extent)
        }
        // The last frame's masks of faces seen, where something still differs under them and neither this frame's
        // nor another held mask covers them (a prediction's mask does not count: it ends when the track's coasting
        // does), each stretched over what differs around it, within a quarter of its side each way (a face that went
        // on moving behind a pillar faster than its track predicts; the chin of a face half behind a nearer one).
        // Held where they were: stretching does not carry over to the next frame.
        func covered(_ region: Box, by others: [Box]) -> Bool {
            others.contains { ($0.intersection(region)?.area ?? 0) >= 0.9 * region.area }
        }
        var kept: [Box] = []
        for region in held where kept.count < Self.maxHeld {
            guard differing(in: region).area >= Self.heldShare * region.area, !covered(region, by: seen + kept)
            else { continue }
            kept.append(region)
        }
        let stretched = kept.map { region in
            let side = max(region.width, region.height)
            let reach = Box(
                x: region.x - side / 4, y: region.y - side / 4, width: region.width + side / 2,
                height: region.height + side / 2)
            return differing(in: reach).extent.map { region.union($0) } ?? region
        }
        held = seen + kept
        return edges + stretched
    }

    /// A connected part of the grid: the cells' bounds, in columns and rows.
    struct Part {
        var minColumn: Int, maxColumn: Int, minRow: Int, maxRow: Int
    }

    /// The 4-connected parts of the cells of each side (`side[cell]`: 0 to 3, -1 for none), a part never crossing
    /// from one side to another (a ring of the four would be bounded by the whole frame).
    static func parts(_ side: [Int], columns: Int) -> [Part] {
        var seen = [Bool](repeating: false, count: side.count)
        var parts: [Part] = []
        var stack: [Int] = []
        for start in side.indices where side[start] >= 0 && !seen[start] {
            seen[start] = true
            stack.append(start)
            var part = Part(
                minColumn: start % columns, maxColumn: start % columns, minRow: start / columns,
                maxRow: start / columns)
            while let cell = stack.popLast() {
                let (row, column) = (cell / columns, cell % columns)
                part.minColumn = min(part.minColumn, column)
                part.maxColumn = max(part.maxColumn, column)
                part.minRow = min(part.minRow, row)
                part.maxRow = max(part.maxRow, row)
                for next in [
                    cell - columns, cell + columns, column > 0 ? cell - 1 : -1, column < columns - 1 ? cell + 1 : -1,
                ]
                where next >= 0 && next < side.count && !seen[next] && side[next] == side[start] {
                    seen[next] = true
                    stack.append(next)
                }
            }
            parts.append(part)
        }
        return parts
    }
}
