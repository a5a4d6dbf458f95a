public import SentinelCore
public import SentinelWire

/// Precision and recall of face detections against ground truth.
///
/// Each frame's detections are matched greedily, highest IoU first, to the drawn faces; a match needs
/// IoU >= `iouThreshold`. Faces mostly hidden by scenery are "don't care": a detection on one is neither
/// right nor wrong, and missing one is not a miss.
public struct DetectionScore: Sendable, Equatable, Codable {
    public var frames = 0
    public var truePositives = 0
    public var falsePositives = 0
    public var falseNegatives = 0
    /// Summed IoU of the matches, for the mean localisation quality.
    public var matchedIoU = 0.0

    public init() {}

    public var precision: Double { ratio(truePositives, truePositives + falsePositives) }
    public var recall: Double { ratio(truePositives, truePositives + falseNegatives) }
    public var meanIoU: Double { ratio(matchedIoU, Double(truePositives)) }

    /// Adds one frame's outcome.
    public mutating func add(truth: [GroundTruth.Face], detections: [Box], iouThreshold: Double = 0.5) {
        frames += 1
        let matches = GroundTruth.Face.matches(truth, detections, iouThreshold: iouThreshold)
        for match in matches where !truth[match.face].isOccluded {
            truePositives += 1
            matchedIoU += match.iou
        }
        let usedTruth = Set(matches.map(\.face))
        falseNegatives += truth.indices.filter { !usedTruth.contains($0) && !truth[$0].isOccluded }.count
        falsePositives += detections.count - matches.count
    }

    private func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
    private func ratio(_ a: Double, _ b: Double) -> Double { b == 0 ? 0 : a / b }
}

extension GroundTruth.Face {
    /// A frame's boxes matched one to one to its drawn faces, highest IoU first, a match needing IoU >=
    /// `iouThreshold`: the index of each face and box matched, and their IoU.
    static func matches(_ faces: [GroundTruth.Face], _ boxes: [Box], iouThreshold: Double = 0.5) -> [(
        face: Int, box: Int, iou: Double
    )] {
        var pairs: [(iou: Double, face: Int, box: Int)] = []
        for (f, face) in faces.enumerated() {
            for (b, box) in boxes.enumerated() {
                let overlap = face.box.iou(box)
                if overlap >= iouThreshold { pairs.append((overlap, f, b)) }
            }
        }
        pairs.sort { $0.iou > $1.iou }
        var usedFaces = Set<Int>()
        var usedBoxes = Set<Int>()
        var matches: [(face: Int, box: Int, iou: Double)] = []
        for pair in pairs where !usedFaces.contains(pair.face) && !usedBoxes.contains(pair.box) {
            usedFaces.insert(pair.face)
            usedBoxes.insert(pair.box)
            matches.append((pair.face, pair.box, pair.iou))
        }
        return matches
    }
}
