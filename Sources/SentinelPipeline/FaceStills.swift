import Foundation
import SentinelCore
import SentinelVision
import SentinelWire

#if canImport(Glibc)
    import Glibc
#endif

/// The faces a pipeline read for emotion, written as stills for an operator to label and fit a head on
/// (`replay --faces DIR`): one visitor's face at most every `interval` seconds of media time, each still the square
/// around the face three times its side (what a detector needs to find it again), all but the face blurred,
/// named `PSEUDONYM_N.jpg` so that `eval emotion --fit` keeps one visitor's stills in one fold. Footage of people: the
/// folder is made readable by its owner only (one that others may read or write, or a link, is refused), each still is
/// made new in it (never through a link planted there, never over a file), readable by its owner only.
public struct FaceStills {
    public let directory: String
    public let interval: Double
    private let folder: Folder
    private var last: [String: MediaTime] = [:]
    private var counts: [String: Int] = [:]
    /// Stills written, and visitors they show.
    public private(set) var written = 0
    public var visitors: Int { counts.count }

    /// Makes `directory` (owner only) if it is not there; refuses one that is a link, not a folder, or open to others.
    public init(directory: String, interval: Double) throws {
        self.directory = directory
        self.interval = interval
        folder = try Folder(directory)
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
            let bytes = try still.jpeg()
            var number = counts[label, default: 0]
            while true {
                number += 1
                if try folder.create("\(label)_\(number).jpg", bytes) { break }
            }
            counts[label] = number
            written += 1
        }
    }
}

/// The stills' folder, held open from the start: each still is made in the folder that was checked, whatever its name
/// points to later.
private final class Folder {
    let path: String
    let descriptor: Int32

    init(_ path: String) throws {
        self.path = path
        let shown = path.controlCharactersShown
        if mkdir(path, 0o700) != 0, errno != EEXIST {
            throw CommandError("--faces \(shown): cannot make the folder: \(String(cString: strerror(errno)))")
        }
        descriptor = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else {
            let why = errno == ELOOP || errno == ENOTDIR ? "a link or not a folder" : String(cString: strerror(errno))
            throw CommandError("--faces \(shown): \(why); give a folder of your own (footage of people)")
        }
        var status = stat()
        fstat(descriptor, &status)
        guard status.st_uid == getuid(), status.st_mode & 0o077 == 0 else {
            close(descriptor)
            throw CommandError(
                "--faces \(shown): others may read or write it (mode \(String(status.st_mode & 0o777, radix: 8)), owner "
                    + "\(status.st_uid)): stills of faces go only in a folder of your own that no one else may open "
                    + "(chmod 700)")
        }
    }

    deinit { close(descriptor) }

    /// Writes `bytes` as a new file `name` (owner only), not through a link; false when the name is taken.
    func create(_ name: String, _ bytes: [UInt8]) throws -> Bool {
        let file = openat(descriptor, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard file >= 0 else {
            if errno == EEXIST { return false }
            throw CommandError("--faces \(path.controlCharactersShown)/\(name): \(String(cString: strerror(errno)))")
        }
        defer { close(file) }
        var written = 0
        while written < bytes.count {
            let count = bytes[written...].withUnsafeBytes { Glibc.write(file, $0.baseAddress, $0.count) }
            guard count > 0 else {
                throw CommandError(
                    "--faces \(path.controlCharactersShown)/\(name): \(String(cString: strerror(errno)))")
            }
            written += count
        }
        return true
    }
}
