import Foundation
import SentinelCore
import SentinelEval
import SentinelTestSupport
import SentinelWire
import Testing

/// The emotion head's regression against scikit-learn's (Debian's python3-sklearn, run by the test), and the head's
/// file read back as written.
@Suite("Emotion head: the fit against scikit-learn, the file")
struct HeadFitTests {
    /// 90 rows of 6 values in three classes of 50, 25 and 15 (angry, happy, neutral: four of the seven absent), each
    /// class about its own centre, from a fixed generator.
    static func fixture() -> (x: [[Double]], y: [Int]) {
        var state: UInt64 = 2_463_534_242
        func uniform() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
        var x: [[Double]] = []
        var y: [Int] = []
        for (label, count) in [(0, 50), (3, 25), (6, 15)] {
            for _ in 0..<count {
                x.append(
                    (0..<6).map { j in (j == label % 6 ? 1.5 : 0) + (j == 5 && label == 6 ? -1 : 0) + uniform() * 2 - 1
                    })
                y.append(label)
            }
        }
        return (x, y)
    }

    @Test(
        "the regression gives scikit-learn's coefficients and intercepts, with and without class weights, at two penalties",
        arguments: [(0.05, true), (1.0, false)])
    func sklearn(c: Double, balanced: Bool) async throws {
        let (x, y) = Self.fixture()
        let ours = HeadFit.logistic(
            x.flatMap { $0 }, columns: 6, truths: y, c: c, balanced: balanced, tolerance: 1e-13)
        let task = try JSONSerialization.data(withJSONObject: ["x": x, "y": y, "c": c, "balanced": balanced])
        let input = try Fixtures.temporaryFolder().appendingPathComponent("task.json")
        try task.write(to: input)
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/bin/sh"),
            ["-c", "/usr/bin/python3 \(Fixtures.root.path)/Tests/Peers/sklearn_head.py < \(input.path)"], timeout: 120)
        try #require(outcome.status == 0, "python3-sklearn (make deps): \(outcome.errors)")
        let reference = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any])
        let classes = try #require(reference["classes"] as? [Int])
        let coef = try #require(reference["coef"] as? [[Double]])
        let intercept = try #require(reference["intercept"] as? [Double])
        #expect(classes == [0, 3, 6])
        for (row, label) in classes.enumerated() {
            for j in 0..<6 {
                #expect(abs(ours.weights[label][j] - coef[row][j]) < 1e-4, "class \(label) weight \(j)")
            }
            #expect(abs(ours.bias[label] - intercept[row]) < 1e-4, "class \(label) intercept")
        }
        // The absent classes read as never.
        #expect(ours.bias[1] == -30 && ours.weights[1].allSatisfy { $0 == 0 })
    }

    @Test(
        "a head's file reads back as written; one of the wrong shape or with a non-finite weight is refused, naming it")
    func file() throws {
        let head = EmotionHead(
            features: FeatureLayer(layer: "add_4", size: 3), modelSHA256: String(repeating: "a", count: 64),
            crop: CropRecord(margin: 0.1, align: true, mirror: true),
            weights: (0..<7).map { k in [Double(k), -0.5, 1e-7] }, bias: (0..<7).map { Double($0) / 10 },
            temperature: 0.8,
            fitted: .init(
                command: "test", labels: "0123", faces: 20, people: 10, c: 0.001, classWeight: "balanced", figures: nil)
        )
        let read = try EmotionHead.read(head.json(), file: "h.json")
        #expect(read == head)
        let reading = head.reading([1, 2, 3])
        #expect(abs(reading.probabilities.reduce(0, +) - 1) < 1e-12 && reading.top.emotion == .neutral)
        var short = head
        short.weights[2] = [1, 2]
        #expect(throws: ModelFileProblem.self) { try EmotionHead.read(short.json(), file: "h.json") }
        let text = String(decoding: head.json(), as: UTF8.self).replacingOccurrences(
            of: "[0, -0.5, 1e-07]", with: "[0, -0.5, 1e999]")
        #expect(throws: ModelFileProblem.self) { try EmotionHead.read(Data(text.utf8), file: "h.json") }
    }

    @Test("every file of Tests/Corpus/heads is read or refused as expected.tsv says, naming the file, shown not sent")
    func corpus() throws {
        for line in try Corpus.lines("heads") {
            let path = line.file.path
            do {
                let head = try EmotionHead.read(Data(contentsOf: line.file), file: path)
                #expect(line.outcome == "ok", "\(line) was read")
                #expect(try EmotionHead.read(head.json(), file: path) == head, "\(line) reads back as written")
            } catch let problem as ModelFileProblem {
                #expect(line.outcome == "refused", "\(line): \(problem)")
                #expect(
                    problem.description.contains(line.expected.replacingOccurrences(of: "FILE", with: path)),
                    "\(problem)")
                #expect(!problem.description.unicodeScalars.contains { $0.properties.generalCategory == .control })
            }
        }
    }
}
