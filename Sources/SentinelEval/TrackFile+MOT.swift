import Foundation
import SentinelCore
import SentinelWire

/// MOT Challenge text: gt.txt (ground truth) and results layouts.
extension TrackFile {
    static func readMOT(_ data: Data, _ path: String) throws(LabelError) -> TrackSet {
        var entries: [TrackSet.Entry] = []
        // Bytes, not characters: a 100 MB file of a long video is read at the disk's pace.
        let separators: Set<UInt8> = [UInt8(ascii: ","), UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\r")]
        for (number, line) in data.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).enumerated() {
            let fields = line.split(whereSeparator: separators.contains).map { String(decoding: $0, as: UTF8.self) }
            if fields.isEmpty { continue }
            let location = "\(number + 1)"
            guard fields.count >= 6 else {
                throw LabelError(
                    .malformed, path, location,
                    "\(fields.count) fields; frame,id,left,top,width,height[,conf,…] expected")
            }
            guard let frame = Int(fields[0]), frame >= 1 else {
                throw LabelError(.malformed, path, location, "frame \"\(fields[0])\" is not a number from 1")
            }
            guard frame <= maxFrames else {
                throw LabelError(
                    .outOfVideo, path, location, "frame \(frame) is beyond any video (\(maxFrames) frames)")
            }
            let numbers = fields[2...5].map { Double($0) }
            guard numbers.allSatisfy({ $0 != nil }) else {
                throw LabelError(.malformed, path, location, "left, top, width and height must be numbers")
            }
            // A ground-truth row with confidence 0 is to be ignored, as the benchmark's evaluation ignores it.
            if fields.count > 6, let confidence = Double(fields[6]), confidence == 0 { continue }
            entries.append(
                .init(
                    frame: frame - 1, id: fields[1],
                    box: Box(x: numbers[0]!, y: numbers[1]!, width: numbers[2]!, height: numbers[3]!)))
        }
        return TrackSet(entries)
    }

    /// MOT Challenge's two layouts of a row after the box: ground truth `conf,class,visibility` (1: to be
    /// evaluated, 1: pedestrian, 1: fully visible; datumaro's `mot_seq` and TrackEval read these), results
    /// `conf,x,y,z` (world coordinates -1: none). A ground-truth file is named `gt.txt`, as in MOT's folders.
    public enum MOTLayout: String, Sendable {
        case groundTruth, results
        public init(_ path: String) {
            self = URL(fileURLWithPath: path).lastPathComponent == "gt.txt" ? .groundTruth : .results
        }
        var tail: String { self == .groundTruth ? ",1,1,1\n" : ",1,-1,-1,-1\n" }
    }

    /// MOT ids are numbers: other ids (pseudonyms) are numbered from 1 in id order.
    static func mot(_ tracks: TrackSet, layout: MOTLayout) -> String {
        let numbers =
            tracks.ids.allSatisfy { Int($0) != nil }
            ? nil : Dictionary(uniqueKeysWithValues: tracks.ids.enumerated().map { ($1, String($0 + 1)) })
        return tracks.entries.map { e in
            "\(e.frame + 1),\(numbers?[e.id] ?? e.id),\(number(e.box.x)),\(number(e.box.y)),\(number(e.box.width)),\(number(e.box.height))"
                + layout.tail
        }.joined()
    }

    /// The shortest decimal that reads back as the same Double.
    static func number(_ value: Double) -> String {
        value == value.rounded() && abs(value) < 1e15 ? String(Int(value)) : "\(value)"
    }
}
