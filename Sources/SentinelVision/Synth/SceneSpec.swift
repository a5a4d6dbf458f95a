import Foundation
public import SentinelCore
import SentinelWire
import Yams

/// A scene to render into sample recordings: a background, face photos, zones, scenery and visitors who
/// walk along timed paths. Positions are normalized (0-1 of the frame) so one scene renders at any size.
public struct SceneSpec: Codable, Sendable, Equatable {
    public var name: String
    public var fps: Double
    /// Length in seconds.
    public var duration: Double
    /// Frame sizes to render, each `[width, height]`.
    public var sizes: [[Int]]
    /// A photo with no face, stretched to the frame (path relative to the scene file).
    public var background: String
    public var faces: [String: FacePhoto]
    public var zones: [ZoneSpec]
    /// Scenery in front of visitors (pillars), each `[x, y, width, height]` normalized.
    public var occluders: [[Double]]
    public var visitors: [VisitorSpec]

    /// A photo and where the face is in it, in pixels of the photo.
    public struct FacePhoto: Codable, Sendable, Equatable {
        public var image: String
        /// `[x, y, width, height]`.
        public var face: [Double]
    }

    public struct ZoneSpec: Codable, Sendable, Equatable {
        public var name: String
        /// `[[x, y], ...]` normalized.
        public var polygon: [[Double]]
    }

    public struct VisitorSpec: Codable, Sendable, Equatable {
        public var id: String
        /// A key of `faces`.
        public var face: String
        public var mirror: Bool?
        /// Face height as a fraction of the frame height.
        public var size: Double
        /// Body colour `[r, g, b]`.
        public var color: [Int]
        /// Keyframes `[seconds, x, y]` for the face centre, normalized; straight lines in between. The visitor
        /// is in the scene from the first keyframe to the last.
        public var path: [[Double]]
    }

    /// Reads a scene file and checks it, naming the field of every problem.
    public static func load(_ path: String) throws(SynthError) -> SceneSpec {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw SynthError("cannot read scene \(path): \(error.localizedDescription)")
        }
        let spec: SceneSpec
        do {
            spec = try YAMLDecoder().decode(SceneSpec.self, from: text)
        } catch {
            throw SynthError("scene \(path) is invalid: \(error)")
        }
        let problems = spec.problems()
        guard problems.isEmpty else {
            throw SynthError("scene \(path) is invalid:\n" + problems.map { "  \($0)" }.joined(separator: "\n"))
        }
        return spec
    }

    /// Every problem in the scene, each with its field path.
    public func problems() -> [String] {
        var problems: [String] = []
        if !(fps > 0) { problems.append("fps: must be positive") }
        if !(duration > 0) { problems.append("duration: must be positive") }
        for (i, size) in sizes.enumerated() where size.count != 2 || size.contains(where: { $0 <= 0 || $0 % 2 != 0 }) {
            problems.append("sizes[\(i)]: must be [width, height], positive and even")
        }
        for (name, photo) in faces where photo.face.count != 4 || photo.face[2] <= 0 || photo.face[3] <= 0 {
            problems.append("faces.\(name).face: must be [x, y, width, height] with positive size")
        }
        for (i, zone) in zones.enumerated()
        where zone.polygon.count < 3 || zone.polygon.contains(where: { $0.count != 2 }) {
            problems.append("zones[\(i)].polygon: needs at least three [x, y] points")
        }
        for (i, box) in occluders.enumerated() where box.count != 4 {
            problems.append("occluders[\(i)]: must be [x, y, width, height]")
        }
        for (i, visitor) in visitors.enumerated() {
            if faces[visitor.face] == nil { problems.append("visitors[\(i)].face: no face named \(visitor.face)") }
            if !(visitor.size > 0 && visitor.size < 1) {
                problems.append("visitors[\(i)].size: must be between 0 and 1")
            }
            if visitor.color.count != 3 { problems.append("visitors[\(i)].color: must be [r, g, b]") }
            if visitor.path.count < 2 { problems.append("visitors[\(i)].path: needs at least two keyframes") }
            for (k, key) in visitor.path.enumerated() {
                if key.count != 3 {
                    problems.append("visitors[\(i)].path[\(k)]: must be [seconds, x, y]")
                    continue
                }
                if k > 0, visitor.path[k - 1].count == 3, key[0] < visitor.path[k - 1][0] {
                    problems.append("visitors[\(i)].path[\(k)]: time \(key[0]) comes before the previous keyframe")
                }
            }
        }
        if Set(visitors.map(\.id)).count != visitors.count { problems.append("visitors: ids repeat") }
        return problems
    }
}

extension SceneSpec.VisitorSpec {
    /// The face centre at `seconds`, or nil when the visitor is not in the scene.
    func position(at seconds: Double) -> Point? {
        guard let first = path.first, let last = path.last, seconds >= first[0], seconds <= last[0] else { return nil }
        for (a, b) in zip(path, path.dropFirst()) where seconds <= b[0] {
            let t = b[0] > a[0] ? (seconds - a[0]) / (b[0] - a[0]) : 1
            return Point(x: a[1] + (b[1] - a[1]) * t, y: a[2] + (b[2] - a[2]) * t)
        }
        return Point(x: last[1], y: last[2])
    }
}

/// A problem making a recording, with the file or field involved.
public struct SynthError: SentinelError, Equatable {
    public enum Code: String, Sendable, CustomStringConvertible {
        case invalidScene
        public var description: String { rawValue }
    }
    public var code: Code { .invalidScene }
    public let message: String
    public init(_ message: String) { self.message = message }
}
