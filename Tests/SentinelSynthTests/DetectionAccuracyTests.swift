import Foundation
import SentinelCore
import SentinelEval
import SentinelTestSupport
import SentinelVision
import Testing

@Suite("Detection accuracy on the sample recording against its ground truth", .computing)
struct DetectionAccuracyTests {
    /// Floors set a little under what `sentinel eval detections` measured on every frame (release build):
    /// cascade P 0.993 R 0.897, centerface P 0.996 R 0.990.
    static let floors: [(DetectorKind, String, precision: Double, recall: Double)] = [
        (.cascade, "haar-frontalface", 0.97, 0.85),
        (.centerface, "centerface", 0.98, 0.97),
    ]

    @Test("each obtainable detector keeps its precision and recall floor", arguments: [0, 1])
    func accuracyFloor(index: Int) throws {
        let (kind, model, minPrecision, minRecall) = Self.floors[index]
        let path = Fixtures.recording()
        let truth = try JSONDecoder().decode(
            GroundTruth.self, from: Data(contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: path))))
        let detector = try OpenCVFaceDetector(kind: kind, modelPath: try Fixtures.model(model))
        let source = try VideoFileSource(path: path)
        var score = DetectionScore()
        while let frame = try source.next() {
            // Every third frame keeps the debug-build run short; frames are still spread over all 40 s.
            guard frame.index % 3 == 0 else { continue }
            score.add(truth: truth.frames[frame.index].faces, detections: try detector.detect(frame.image).map(\.box))
        }
        #expect(score.frames == 200)
        #expect(score.precision >= minPrecision, "\(kind): precision \(score.precision)")
        #expect(score.recall >= minRecall, "\(kind): recall \(score.recall)")
    }
}
