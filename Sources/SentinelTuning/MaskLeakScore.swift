import Foundation
public import SentinelCore
public import SentinelVision
import SentinelWire

/// How well a review video hides faces: for every ground-truth face in every frame, the detail (variance of
/// the Laplacian) left in the review video's face region, against the same region of the original footage.
public struct MaskLeakScore: Sendable, Codable, Equatable {
    /// Faces counted (at least `minVisible` of the face in view), summed over frames.
    public var faceFrames = 0
    /// Face-frames whose region kept more than `bound` of its original detail.
    public var leaked = 0
    /// The highest detail ratio seen.
    public var worstRatio = 0.0
    /// Frame indices with a leak, with the visitor, for finding them in the video.
    public var leaks: [Leak] = []

    public struct Leak: Sendable, Codable, Equatable {
        public var frame: Int
        public var visitor: String
        public var ratio: Double
    }

    /// Compares a review video with the footage it was made from, frame by frame.
    public static func measure(
        original: String, review: String, truth: GroundTruth, bound: Double = 0.25, minVisible: Double = 0.5
    )
        throws(VisionError) -> MaskLeakScore
    {
        let source = try VideoFileSource(path: original)
        let masked = try VideoFileSource(path: review)
        let truthByFrame = Dictionary(truth.frames.map { ($0.index, $0) }, uniquingKeysWith: { a, _ in a })
        var score = MaskLeakScore()
        while let frame = try source.next() {
            guard let reviewed = try masked.next() else {
                throw VisionError(.argument, "\(review) ends at frame \(frame.index), before \(original)")
            }
            for face in truthByFrame[frame.index]?.faces ?? [] where face.visible >= minVisible {
                guard let inner = visibleRegion(of: face.box, occluders: truth.occluders ?? []) else { continue }
                let before = try frame.image.detail(in: inner)
                guard before > 1 else { continue }  // nothing to hide: a flat region
                let ratio = try reviewed.image.detail(in: inner) / before
                score.faceFrames += 1
                score.worstRatio = max(score.worstRatio, ratio)
                if ratio > bound {
                    score.leaked += 1
                    score.leaks.append(
                        Leak(frame: frame.index, visitor: face.visitor, ratio: (ratio * 1000).rounded() / 1000))
                }
            }
        }
        return score
    }

    /// The inner 80 % of a face box (outlines drawn around a mask must not count as detail), less the largest
    /// part hidden by scenery: the detail of a pillar says nothing about a face.
    static func visibleRegion(of face: Box, occluders: [Box]) -> Box? {
        var region = Box(
            x: face.x + face.width * 0.1, y: face.y + face.height * 0.1, width: face.width * 0.8,
            height: face.height * 0.8)
        for occluder in occluders {
            // Grown by the outline the renderer draws around it.
            let o = Box(x: occluder.x - 3, y: occluder.y - 3, width: occluder.width + 6, height: occluder.height + 6)
            guard region.intersection(o) != nil else { continue }
            let sides = [
                Box(x: region.x, y: region.y, width: o.x - region.x, height: region.height),
                Box(x: o.maxX, y: region.y, width: region.maxX - o.maxX, height: region.height),
                Box(x: region.x, y: region.y, width: region.width, height: o.y - region.y),
                Box(x: region.x, y: o.maxY, width: region.width, height: region.maxY - o.maxY),
            ].filter { $0.width > 0 && $0.height > 0 }
            guard let largest = sides.max(by: { $0.area < $1.area }) else { return nil }
            region = largest
        }
        return region.width >= 4 && region.height >= 4 ? region : nil
    }
}
