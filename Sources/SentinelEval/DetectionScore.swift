public import SentinelCore

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
        var pairs: [(iou: Double, truth: Int, detection: Int)] = []
        for (t, face) in truth.enumerated() {
            for (d, box) in detections.enumerated() {
                let overlap = face.box.iou(box)
                if overlap >= iouThreshold { pairs.append((overlap, t, d)) }
            }
        }
        pairs.sort { $0.iou > $1.iou }
        var usedTruth = Set<Int>()
        var usedDetection = Set<Int>()
        for pair in pairs where !usedTruth.contains(pair.truth) && !usedDetection.contains(pair.detection) {
            usedTruth.insert(pair.truth)
            usedDetection.insert(pair.detection)
            if !truth[pair.truth].isOccluded {
                truePositives += 1
                matchedIoU += pair.iou
            }
        }
        falseNegatives += truth.indices.filter { !usedTruth.contains($0) && !truth[$0].isOccluded }.count
        falsePositives += detections.count - usedDetection.count
    }

    private func ratio(_ a: Int, _ b: Int) -> Double { b == 0 ? 0 : Double(a) / Double(b) }
    private func ratio(_ a: Double, _ b: Double) -> Double { b == 0 ? 0 : a / b }
}
