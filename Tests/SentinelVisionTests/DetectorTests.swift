import Foundation
import SentinelCore
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

@Suite("Face detectors on Debian's public-domain photos", .computing)
struct DetectorTests {
    /// Detectors a fresh machine obtains with `make setup`; YuNet needs a manual download (or ../shared).
    static let obtainable: [DetectorKind] = [.cascade, .centerface, .retinaface]

    func detector(_ kind: DetectorKind) throws -> OpenCVFaceDetector {
        try OpenCVFaceDetector(kind: kind, modelPath: try Fixtures.model(kind.defaultModel))
    }

    @Test("each detector finds the one face in each portrait, where it is", arguments: obtainable)
    func findsThePortraitFace(kind: DetectorKind) throws {
        try checkPortraits(kind)
    }

    @Test(
        "YuNet finds the portrait faces and nothing in the landscape",
        .enabled(
            if: Fixtures.hasModel("yunet"), "YuNet model absent (a manual download, or ../shared/models via make setup)"
        ))
    func yunetOnPhotos() throws {
        try checkPortraits(.yunet)
        try findsNothingInLandscape(kind: .yunet)
        try blankFrameHasNoFaces(kind: .yunet)
    }

    func checkPortraits(_ kind: DetectorKind) throws {
        let detector = try detector(kind)
        // The face boxes YuNet gives on these photos, which Recordings/showroom.yml uses too.
        for (photo, face) in [
            ("grace_hopper_512x512.jpg", Box(x: 175, y: 109, width: 183, height: 206)),
            ("astronaut.png", Box(x: 179, y: 58, width: 94, height: 117)),
        ] {
            let found = try detector.detect(try Image(contentsOf: Fixtures.photo(photo)))
            let best = try #require(found.first, "\(kind) found no face in \(photo)")
            #expect(best.box.iou(face) > 0.5, "\(kind) on \(photo): best box \(best.box)")
            #expect(
                found.filter { $0.box.iou(face) > 0.5 }.count == 1, "\(kind) on \(photo): duplicate boxes on one face")
        }
    }

    @Test("no detector finds a face in the landscape photo", arguments: obtainable)
    func findsNothingInLandscape(kind: DetectorKind) throws {
        let found = try detector(kind).detect(
            try Image(contentsOf: Fixtures.photo("640px-IceBlockNearJoekullsarlon.jpg")))
        #expect(found.isEmpty, "\(kind) found \(found)")
    }

    @Test(
        "a black frame yields no faces, although YuNet alone would see some (YuNet's case: above)",
        arguments: obtainable)
    func blankFrameHasNoFaces(kind: DetectorKind) throws {
        let found = try detector(kind).detect(try Image(width: 640, height: 480, fill: .black))
        #expect(found.isEmpty)
    }

    @Test(
        "landmarks come in the order Detection names (eyes, nose tip, mouth corners; image-left first) and lie inside the box: the emotion crop turns the face by the first two",
        arguments: [DetectorKind.centerface, .retinaface] + (Fixtures.hasModel("yunet") ? [.yunet] : []))
    func landmarkOrder(kind: DetectorKind) throws {
        for photo in ["grace_hopper_512x512.jpg", "astronaut.png"] {
            let found = try detector(kind).detect(try Image(contentsOf: Fixtures.photo(photo)))
            let face = try #require(found.first)
            try #require(face.landmarks.count == 5, "\(kind) on \(photo)")
            let (eyes, nose, mouth) = (face.landmarks[0...1], face.landmarks[2], face.landmarks[3...4])
            for point in face.landmarks {
                let inside =
                    point.x > face.box.x && point.x < face.box.maxX && point.y > face.box.y && point.y < face.box.maxY
                #expect(inside, "\(kind) on \(photo): \(point) outside \(face.box)")
            }
            #expect(eyes.first!.x < eyes.last!.x && mouth.first!.x < mouth.last!.x, "\(kind) on \(photo): \(face)")
            #expect(eyes.allSatisfy { $0.y < nose.y } && mouth.allSatisfy { $0.y > nose.y }, "\(kind) on \(photo)")
        }
    }

    @Test("detection scale keeps boxes in the original frame's pixels")
    func scaleMapsBack() throws {
        let image = try Image(contentsOf: Fixtures.photo("grace_hopper_512x512.jpg"))
        var settings = DetectorSettings.defaults(for: .centerface)
        let full = try OpenCVFaceDetector(
            kind: .centerface, modelPath: try Fixtures.model("centerface"), settings: settings)
        settings.longestSide = 256
        let half = try OpenCVFaceDetector(
            kind: .centerface, modelPath: try Fixtures.model("centerface"), settings: settings)
        let a = try #require(try full.detect(image).first)
        let b = try #require(try half.detect(image).first)
        #expect(a.box.iou(b.box) > 0.8)
    }

    @Test("CenterFace gives the same faces when frame sizes alternate (OpenCV 4.6's Net size bug)")
    func centerFaceSurvivesSizeChanges() throws {
        let detector = try detector(.centerface)
        let big = try Image(contentsOf: Fixtures.photo("grace_hopper_512x512.jpg"))
        let small = try big.resized(width: 320, height: 320)
        let first = try detector.detect(big)
        _ = try detector.detect(small)
        let again = try detector.detect(big)
        #expect(first == again)
    }

    @Test("the minimum face size drops smaller faces")
    func minimumFaceSize() throws {
        var settings = DetectorSettings.defaults(for: .centerface)
        settings.minFaceSize = 250
        let detector = try OpenCVFaceDetector(
            kind: .centerface, modelPath: try Fixtures.model("centerface"), settings: settings)
        #expect(try detector.detect(try Image(contentsOf: Fixtures.photo("grace_hopper_512x512.jpg"))).isEmpty)
    }
}
