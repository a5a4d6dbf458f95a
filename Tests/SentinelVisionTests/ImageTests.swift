import Foundation
import SentinelCore
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

@Suite("Images: masking, encoding, classification", .computing)
struct ImageTests {
    let face = Box(x: 175, y: 109, width: 183, height: 206)

    @Test(
        "every file of Tests/Corpus/images: its header's size is the decoded image's, or it is refused by name before OpenCV allocates what the header claims"
    )
    func headers() throws {
        for line in try Corpus.lines("images") {
            let path = line.file.path
            do {
                let image = try Image(contentsOf: path)
                let size = try ImageHeader.size(ofFile: path)
                #expect(line.outcome == "ok" && line.expected == "\(size.width)x\(size.height)", "\(line): \(size)")
                #expect(image.width == size.width && image.height == size.height, "\(line)")
            } catch {
                #expect(line.outcome == "refused", "\(line): \(error.message)")
                #expect(
                    error.message.hasPrefix(line.expected.replacingOccurrences(of: "FILE", with: path)),
                    "\(error.message)")
            }
        }
    }

    @Test("every mask style removes the face's detail", arguments: MaskStyle.allCases)
    func maskingRemovesDetail(style: MaskStyle) throws {
        let image = try Image(contentsOf: Fixtures.photo("grace_hopper_512x512.jpg"))
        let before = try image.detail(in: face)
        try image.mask(face, style: style)
        let after = try image.detail(in: face)
        #expect(after < before * 0.1, "\(style): detail \(before) -> \(after)")
    }

    @Test(
        "sharpness tells a face in focus (0.1 or more) from the same face blurred (under emotion.minSharpness) or a flat region (0)"
    )
    func sharpness() throws {
        let image = try Image(contentsOf: Fixtures.photo("grace_hopper_512x512.jpg"))
        let sharp = try image.sharpness(in: face)
        #expect(sharp >= 0.1, "\(sharp)")
        try image.mask(face, style: .blur, strength: 0.08)
        let blurred = try image.sharpness(in: face)
        #expect(blurred < 0.08, "\(sharp) -> \(blurred)")
        let flat = try Image(width: 320, height: 240)
        #expect(try flat.sharpness(in: Box(x: 10, y: 10, width: 100, height: 100)) == 0)
    }

    @Test(
        "the emotion model gives a probability for each of the seven expressions, and its feature layer's 2,048 values in the same pass"
    )
    func emotionProbabilities() throws {
        let classifier = try Fixtures.classifier()
        let output = try classifier.classify(
            try Image(contentsOf: Fixtures.photo("astronaut.png")),
            face: Detection(box: Box(x: 179, y: 58, width: 94, height: 117), score: 1))
        let values = output.probabilities
        #expect(values.count == 7)
        #expect(output.features?.count == 2048 && output.features!.allSatisfy(\.isFinite))
        #expect(abs(values.reduce(0, +) - 1) < 1e-4)
        // The astronaut smiles broadly: "happy" is the model's answer.
        #expect(values.firstIndex(of: values.max()!) == 3)
    }

    @Test("a crop that leaves the frame is padded, not refused")
    func cropAtEdge() throws {
        let classifier = try Fixtures.classifier()
        let values = try classifier.classify(
            try Image(contentsOf: Fixtures.photo("astronaut.png")),
            face: Detection(box: Box(x: -20, y: -20, width: 60, height: 60), score: 1)
        ).probabilities
        #expect(values.count == 7)
    }
}

@Suite("Detection in regions", .computing)
struct RegionDetectionTests {
    @Test("RetinaFace in a square around a face finds the face the whole frame finds; a square elsewhere, nothing")
    func regions() throws {
        let image = try Image(contentsOf: Fixtures.photo("astronaut.png"))
        let detector = try OpenCVFaceDetector(kind: .retinaface, modelPath: try Fixtures.model("retinaface"))
        let whole = try #require(try detector.detect(image).first)
        let side = try #require(detector.regionSide(width: image.width, height: image.height))
        // 512x512 brought to 320: a square of 128 / 0.625 pixels.
        #expect(side == 205)
        let square = Box(x: whole.box.center.x - side / 2, y: whole.box.center.y - side / 2, width: side, height: side)
        let found = try detector.detect(image, in: [square])
        #expect(found.count == 1)
        let box = try #require(found.first).box
        #expect(
            box.intersection(whole.box).map { $0.area / box.union(whole.box).area } ?? 0 > 0.8, "\(box) vs \(whole.box)"
        )
        #expect(try detector.detect(image, in: [Box(x: 0, y: 300, width: side, height: side)]).isEmpty)
        // A detector that takes whole frames only says so.
        #expect(
            try OpenCVFaceDetector(kind: .centerface, modelPath: try Fixtures.model("centerface")).regionSide(
                width: 512, height: 512) == nil)
    }
}
