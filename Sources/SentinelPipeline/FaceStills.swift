import Foundation
import SentinelCore
import SentinelVision
import SentinelWire

/// The faces a pipeline read for emotion, written as stills for an operator to label and fit a head on
/// (`replay --faces DIR`): one visitor's face at most every `interval` seconds of media time, each still the square
/// around the face three times its side (what a detector needs to find it again), all but the face blurred,
/// named `PSEUDONYM_N.jpg` so that `eval emotion --fit` keeps one visitor's stills in one fold. Footage of people: the
/// folder is made readable by its owner only, and nothing is written over.
public struct FaceStills {
    public let directory: String
    public let interval: Double
    private var last: [String: MediaTime] = [:]
    private var counts: [String: Int] = [:]
    /// Stills written, and visitors they show.
    public private(set) var written = 0
    public var visitors: Int { counts.count }

    /// Makes `directory` (owner only) if it is not there.
    public init(directory: String, interval: Double) throws {
        self.directory = directory
        self.interval = interval
        try FileManager.default.createDirectory(
            atPath: directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
    }

    /// Writes the faces `frame` read that are due.
    public mutating func write(_ frame: MaskedFrame) throws {
        for (label, box) in frame.read {
            if let previous = last[label], (frame.time - previous).seconds < interval - 1e-9 { continue }
            last[label] = frame.time
            let side = max(box.width, box.height) * 3
            let sharp = try frame.image.cropped(
                to: Box(x: box.center.x - side / 2, y: box.center.y - side / 2, width: side, height: side))
            // The face where the crop placed it (a face at the frame's edge is off centre), a little wider.
            let left = max(0, box.center.x - side / 2)
            let top = max(0, box.center.y - side / 2)
            let face = Box(
                x: box.x - left - box.width * 0.2, y: box.y - top - box.height * 0.2, width: box.width * 1.4,
                height: box.height * 1.4)
            // Everything else blurred: whoever stands beside, whole or cut by the still's edge, is no face in it.
            let still = try sharp.clone()
            try still.mask(
                Box(x: 0, y: 0, width: Double(still.width), height: Double(still.height)), style: .blur, strength: 0.1)
            try still.composite(sharp, from: face, into: face)
            var number = counts[label, default: 0]
            var path: String
            repeat {
                number += 1
                path = (directory as NSString).appendingPathComponent("\(label)_\(number).jpg")
            } while FileManager.default.fileExists(atPath: path)
            counts[label] = number
            try still.write(to: path)
            chmod(path, 0o600)
            written += 1
        }
    }
}
