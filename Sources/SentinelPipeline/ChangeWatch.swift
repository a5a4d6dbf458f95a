import SentinelCore
public import SentinelVision
import SentinelWire

/// Under a detection cadence, what tells a frame between two detections that someone may have come in: the image
/// changed, since the last detection, where no followed visitor explains it. Such a frame is detected at once rather
/// than at the next detection due, so a face coming in gets a box from its first frames, as with every frame
/// detected.
///
/// Compared on small thumbnails, cell by cell of a grid: a cell changed when its mean absolute grey difference
/// reaches `threshold`, well above a camera's noise. A followed visitor explains the cells around where it was last
/// seen and where it is predicted now, and those below it (its body). Decided by the frames alone, so a replay at any
/// pace and a live camera detect the same frames.
public struct ChangeWatch {
    static let thumbnailWidth = 160
    /// The grid's columns; its rows keep the frame's aspect (24 at 4:3, 18 at 16:9).
    static let columns = 32
    static let threshold: UInt8 = 24
    /// The last detected frame's thumbnail.
    private var reference: Image?

    /// The thumbnail a frame is compared by: sampled, not averaged (0.04 ms against 1.1 ms at 1280x720, measured),
    /// since each cell averages 25 of its pixels.
    public static func thumbnail(of image: Image) throws(VisionError) -> Image {
        let height = max(1, Int((Double(image.height) * Double(thumbnailWidth) / Double(image.width)).rounded()))
        return try image.resized(width: thumbnailWidth, height: height, sampled: true)
    }

    /// The frame of `thumbnail` was detected: later frames are compared with it.
    mutating func detected(_ thumbnail: Image) { reference = thumbnail }

    /// The cells (in the frame's pixels) where the frame of `thumbnail` (`width` x `height` pixels) changed from the
    /// last detected one; nil with nothing to compare with.
    func changes(_ thumbnail: Image, width: Int, height: Int) throws(VisionError) -> Changes? {
        guard let reference, reference.width == thumbnail.width, reference.height == thumbnail.height else {
            return nil
        }
        let columns = Self.columns
        let rows = max(1, Int((Double(columns) * Double(height) / Double(width)).rounded()))
        let cells = try thumbnail.differences(from: reference, columns: columns, rows: rows)
        let cellWidth = Double(width) / Double(columns)
        let cellHeight = Double(height) / Double(rows)
        var changed: [Box] = []
        for row in 0..<rows {
            for column in 0..<columns where cells[row * columns + column] >= Self.threshold {
                changed.append(
                    Box(
                        x: Double(column) * cellWidth, y: Double(row) * cellHeight, width: cellWidth,
                        height: cellHeight))
            }
        }
        return Changes(cells: changed, height: Double(height))
    }

    /// Whether the frame of `thumbnail` changed in a cell that none of `visitors` (boxes in the frame's pixels)
    /// explains. True with nothing to compare with.
    func changed(_ thumbnail: Image, width: Int, height: Int, visitors: [Box]) throws(VisionError) -> Bool {
        try changes(thumbnail, width: width, height: height)?.unexplained(by: visitors) ?? true
    }

    /// The cells of one frame that changed since the last detected one.
    struct Changes {
        let cells: [Box]
        let height: Double

        /// Whether a cell changed that none of `visitors` explains: the cells around where each was last seen and
        /// where it is predicted now, and those below it (its body).
        func unexplained(by visitors: [Box]) -> Bool {
            let explained = visitors.map { box in
                Box(x: box.x - box.width, y: box.y - box.height / 2, width: 3 * box.width, height: height)
            }
            return cells.contains { cell in !explained.contains { $0.intersection(cell) != nil } }
        }

        /// Whether a cell changed on one of `faces` or within half its side of it: the picture there is not the
        /// one last detected, so a detection could now say something new of it.
        func touches(_ faces: [Box]) -> Bool {
            let around = faces.map { box in
                let margin = max(box.width, box.height) / 2
                return Box(
                    x: box.x - margin, y: box.y - margin, width: box.width + 2 * margin, height: box.height + 2 * margin
                )
            }
            return cells.contains { cell in around.contains { $0.intersection(cell) != nil } }
        }
    }
}
