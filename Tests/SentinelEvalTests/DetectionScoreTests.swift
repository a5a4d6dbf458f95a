import SentinelCore
import SentinelEval
import SentinelWire
import Testing

@Suite("Detection precision and recall")
struct DetectionScoreTests {
    let a = GroundTruth.Face(visitor: "a", box: Box(x: 0, y: 0, width: 100, height: 100), visible: 1)
    let b = GroundTruth.Face(visitor: "b", box: Box(x: 200, y: 0, width: 100, height: 100), visible: 1)

    @Test("a detection overlapping a face counts once; a second on the same face is a false positive")
    func duplicates() {
        var score = DetectionScore()
        score.add(
            truth: [a],
            detections: [Box(x: 5, y: 5, width: 100, height: 100), Box(x: 0, y: 0, width: 100, height: 100)])
        #expect(score.truePositives == 1 && score.falsePositives == 1 && score.falseNegatives == 0)
        #expect(score.meanIoU == 1)
    }

    @Test("a missed face is a false negative; a detection on nothing a false positive")
    func missesAndFalseAlarms() {
        var score = DetectionScore()
        score.add(
            truth: [a, b],
            detections: [Box(x: 0, y: 0, width: 100, height: 100), Box(x: 500, y: 500, width: 50, height: 50)])
        #expect(score.truePositives == 1 && score.falsePositives == 1 && score.falseNegatives == 1)
        #expect(score.precision == 0.5 && score.recall == 0.5)
    }

    @Test("overlap below the IoU threshold does not match")
    func threshold() {
        var score = DetectionScore()
        score.add(truth: [a], detections: [Box(x: 50, y: 0, width: 100, height: 100)], iouThreshold: 0.5)
        #expect(score.truePositives == 0 && score.falsePositives == 1 && score.falseNegatives == 1)
    }

    @Test("a hidden face counts neither way")
    func hiddenFaces() {
        let hidden = GroundTruth.Face(visitor: "h", box: a.box, visible: 0.2)
        var found = DetectionScore()
        var missed = DetectionScore()
        found.add(truth: [hidden], detections: [a.box])
        missed.add(truth: [hidden], detections: [])
        #expect(found == missed)
        #expect(found.truePositives == 0 && found.falsePositives == 0 && found.falseNegatives == 0)
    }

    @Test("the best overlaps are matched first")
    func greedyByIoU() {
        var score = DetectionScore()
        let near = Box(x: 0, y: 0, width: 100, height: 100)
        score.add(
            truth: [a, GroundTruth.Face(visitor: "c", box: Box(x: 30, y: 0, width: 100, height: 100), visible: 1)],
            detections: [Box(x: 28, y: 0, width: 100, height: 100), near])
        #expect(score.truePositives == 2)
    }
}
