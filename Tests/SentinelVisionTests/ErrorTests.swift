import Foundation
import Logging
import SentinelCore
import SentinelModels
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

@Suite("Bad input becomes a Swift error that names it, never a crash", .computing)
struct ErrorTests {
    func corruptFile(_ name: String, bytes: [UInt8] = Array("this is not a model".utf8)) throws -> String {
        let url = try Fixtures.temporaryFolder().appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url.path
    }

    @Test("a corrupt model file is a .model error naming the file", arguments: DetectorKind.allCases)
    func corruptDetectorModel(kind: DetectorKind) throws {
        let path = try corruptFile(kind == .cascade ? "bad.xml" : "bad.onnx")
        let error = try #require(throws: VisionError.self) { try OpenCVFaceDetector(kind: kind, modelPath: path) }
        #expect(error.code == .model)
        #expect(error.message.contains(path))
    }

    @Test("a truncated ONNX file is a .model error, not an abort")
    func truncatedOnnx() throws {
        let real = try Data(contentsOf: URL(fileURLWithPath: try Fixtures.model("centerface")))
        let path = try corruptFile("half.onnx", bytes: Array(real.prefix(real.count / 2)))
        let error = try #require(throws: VisionError.self) {
            try OpenCVFaceDetector(kind: .centerface, modelPath: path)
        }
        #expect(error.code == .model)
    }

    @Test("a corrupt classifier model is a .model error")
    func corruptClassifier() throws {
        let path = try corruptFile("bad.onnx")
        let error = try #require(throws: VisionError.self) {
            try FaceClassifier(modelPath: path, model: try Fixtures.store.classifier(named: "emotion"))
        }
        #expect(error.code == .model && error.message.contains(path))
    }

    @Test("a missing model file is a .model error naming it")
    func missingModel() throws {
        let error = try #require(throws: VisionError.self) {
            try OpenCVFaceDetector(kind: .yunet, modelPath: "/nonexistent/yunet.onnx")
        }
        #expect(error.code == .model && error.message.contains("/nonexistent/yunet.onnx"))
    }

    @Test("an empty frame is an .emptyFrame error for detection and classification")
    func emptyFrame() throws {
        let empty = try Image(width: 0, height: 0)
        let detector = try OpenCVFaceDetector(kind: .cascade, modelPath: try Fixtures.model("haar-frontalface"))
        #expect(throws: VisionError(.emptyFrame, "empty frame (0x0)")) { try detector.detect(empty) }
        let classifier = try Fixtures.classifier()
        let error = try #require(throws: VisionError.self) {
            try classifier.classify(empty, face: Detection(box: Box(x: 0, y: 0, width: 10, height: 10), score: 1))
        }
        #expect(error.code == .emptyFrame)
    }

    @Test(
        "sources that cannot be opened are .open errors naming the file, device or URL",
        arguments: [
            "/nonexistent/video.mp4", "/dev/video99", "http://127.0.0.1:9/stream.mjpg",
        ])
    func unopenableSource(spec: String) throws {
        let error = try #require(throws: VisionError.self) {
            _ = try SourceSpec(spec).open(logger: .init(label: "test"))
        }
        #expect(error.code == .open)
        #expect(error.message.contains(spec))
    }

    @Test("a file that is not a video is an .open error")
    func notAVideo() throws {
        let path = try corruptFile("fake.mp4", bytes: Array(repeating: 0x42, count: 4096))
        let error = try #require(throws: VisionError.self) { try VideoFileSource(path: path) }
        #expect(error.code == .open && error.message.contains(path))
    }

    @Test("an unreadable image is an .open error naming it")
    func unreadableImage() throws {
        let path = try corruptFile("broken.jpg")
        let error = try #require(throws: VisionError.self) { try Image(contentsOf: path) }
        #expect(error.code == .open && error.message.contains(path))
    }
}
