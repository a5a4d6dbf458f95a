import Foundation
public import SentinelCore
public import SentinelVision
import SentinelWire

/// How well a review video hides faces: for every ground-truth face in view in every frame (at least `minVisible` of
/// its box, not off the frame or behind scenery, and `minPixels` each way), whether the review video's face region
/// kept its detail, by two measures: the detail left (variance of the Laplacian) against the original's, above
/// `bound`; and the correlation of the two regions' high-pass detail, above `correlationBound`, which does not depend
/// on how strong a blur is (a weak blur keeps little variance yet the same edges where they were).
public struct MaskLeakScore: Sendable, Codable, Equatable {
    /// Faces counted, summed over frames.
    public var faceFrames = 0
    /// Face-frames that kept their detail by either measure.
    public var leaked = 0
    /// The highest detail ratio and correlation seen.
    public var worstRatio = 0.0
    public var worstCorrelation = 0.0
    /// The same counts by how much of the face is in view.
    public var bands: [Band] = Self.visibility.map { Band(from: $0.lowerBound, to: $0.upperBound) }
    /// Frame indices with a leak, with the visitor, for finding them in the video.
    public var leaks: [Leak] = []

    /// Fractions of a face in view that the counts are given by.
    public static let visibility = [0.15..<0.25, 0.25..<0.5, 0.5..<0.75, 0.75..<1.01]

    public struct Band: Sendable, Codable, Equatable {
        public var from: Double
        public var to: Double
        public var faceFrames = 0
        public var leaked = 0
    }

    public struct Leak: Sendable, Codable, Equatable {
        public var frame: Int
        public var visitor: String
        public var ratio: Double
        public var correlation: Double
        /// The fraction of the face in view.
        public var visible: Double
    }

    /// Compares a review video with the footage it was made from, frame by frame.
    public static func measure(
        original: String, review: String, truth: GroundTruth, bound: Double = 0.25, correlationBound: Double = 0.5,
        minVisible: Double = 0.15, minPixels: Double = 16
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
                let occluders = truth.occluders ?? []
                guard let seen = visibleRegion(of: face.box, occluders: occluders, inner: 1),
                    seen.width >= minPixels, seen.height >= minPixels,
                    let inner = visibleRegion(of: face.box, occluders: occluders)
                else { continue }
                let before = try frame.image.detail(in: inner)
                guard before > 1 else { continue }  // nothing to hide: a flat region
                let ratio = try reviewed.image.detail(in: inner) / before
                let correlation = try reviewed.image.detailCorrelation(in: inner, with: frame.image)
                let band = visibility.firstIndex { $0.contains(face.visible) } ?? visibility.count - 1
                score.faceFrames += 1
                score.bands[band].faceFrames += 1
                score.worstRatio = max(score.worstRatio, ratio)
                score.worstCorrelation = max(score.worstCorrelation, correlation)
                if ratio > bound || correlation > correlationBound {
                    score.leaked += 1
                    score.bands[band].leaked += 1
                    score.leaks.append(
                        Leak(
                            frame: frame.index, visitor: face.visitor, ratio: (ratio * 1000).rounded() / 1000,
                            correlation: (correlation * 1000).rounded() / 1000,
                            visible: (face.visible * 1000).rounded() / 1000))
                }
            }
        }
        return score
    }

    /// The counts by visibility, one line: `15-25 %: 0 of 31, 25-50 %: 2 of 60, ...`.
    public var byVisibility: String {
        bands.map {
            "\(Int(($0.from * 100).rounded()))-\(min(100, Int(($0.to * 100).rounded()))) % in view: \($0.leaked) of \($0.faceFrames)"
        }
        .joined(separator: ", ")
    }

    /// The `inner` part of a face box (80 %: outlines drawn around a mask must not count as detail), less the
    /// largest part hidden by scenery: the detail of a pillar says nothing about a face.
    static func visibleRegion(of face: Box, occluders: [Box], inner: Double = 0.8) -> Box? {
        let margin = (1 - inner) / 2
        var region = Box(
            x: face.x + face.width * margin, y: face.y + face.height * margin, width: face.width * inner,
            height: face.height * inner)
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

extension GroundTruth {
    /// The faces of a recording as a second opinion sees them, for measuring masks on footage no person has labelled:
    /// every one of `detectors` (each reporting down to half its score) on every frame as it is and mirrored at its
    /// edges by `margin` of its shorter side, boxes of one face merged (IoU above 0.3). A face counts when two
    /// detectors find it, or one at its own score (one alone at half its score is as often a hand or a lamp). A face
    /// cut by the edge keeps its whole box, so its share in view is known. What they all miss is not counted: a floor
    /// under the leaks, not their count.
    public static func secondOpinion(of recording: String, detectors: [any FaceDetector], margin: Double) throws
        -> GroundTruth
    {
        let video = try VideoFileSource(path: recording)
        var frames: [Frame] = []
        var width = 0
        var height = 0
        while let frame = try video.next() {
            (width, height) = (frame.image.width, frame.image.height)
            let whole = Box(x: 0, y: 0, width: Double(width), height: Double(height))
            let pixels = min(Int((margin * Double(min(width, height))).rounded(.up)), min(width, height) - 1)
            let mirrored = pixels > 0 ? try frame.image.paddedMirrored(by: pixels) : nil
            // Each box with the detector that found it and whether at that detector's own score.
            var found: [(box: Box, detector: Int, sure: Bool)] = []
            for (index, detector) in detectors.enumerated() {
                let own = detector.settings.scoreThreshold * 2
                found += try detector.detect(frame.image).map { ($0.box, index, $0.score >= own) }
                if let mirrored {
                    found += try detector.detect(mirrored).map {
                        let box = Box(
                            x: $0.box.x - Double(pixels), y: $0.box.y - Double(pixels), width: $0.box.width,
                            height: $0.box.height)
                        return (box, index, $0.score >= own)
                    }
                }
            }
            // Sure ones first; a box overlapping a face kept is that face (a mirror image lies wholly outside).
            var kept: [(box: Box, detectors: Set<Int>, sure: Bool)] = []
            for candidate in found.sorted(by: { $0.sure && !$1.sure }) {
                guard let inside = candidate.box.intersection(whole), inside.area > 0 else { continue }
                if let same = kept.firstIndex(where: { $0.box.iou(candidate.box) > 0.3 }) {
                    kept[same].detectors.insert(candidate.detector)
                    kept[same].sure = kept[same].sure || candidate.sure
                } else {
                    kept.append((candidate.box, [candidate.detector], candidate.sure))
                }
            }
            let agreed = kept.filter { $0.sure || $0.detectors.count >= 2 }.map(\.box)
            let faces = agreed.enumerated().map { index, box in
                Face(visitor: "face \(index + 1)", box: box, visible: (box.intersection(whole)?.area ?? 0) / box.area)
            }
            frames.append(Frame(index: frame.index, time: frame.time, faces: faces))
        }
        return GroundTruth(
            recording: recording, width: width, height: height, fps: video.nominalFPS, zones: [], frames: frames,
            visitors: [])
    }
}
