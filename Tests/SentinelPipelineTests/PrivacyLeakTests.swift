import Foundation
import Logging
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelPipeline
import SentinelPrivacy
import SentinelTestSupport
import SentinelTuning
import SentinelVision
import SentinelWire
import Testing

@Suite("Privacy: nothing identifying leaves the box under the default policy", .ownThread)
struct PrivacyLeakTests {
    @Test("the replay command's events and logs carry no internal id, box, score, media time or image data")
    func replayOutputsAreClean() async throws {
        let run = try await SampleRun.load()
        let folder = try Fixtures.temporaryFolder()
        let events = folder.appendingPathComponent("events.jsonl")
        let (status, _, logs) = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "replay", run.recording, "-o", events.path, "--annotate",
                folder.appendingPathComponent("review.avi").path, "--verbose",
            ])
        #expect(status == 0, "\(logs)")
        let output = try String(contentsOf: events, encoding: .utf8).split(separator: "\n")
        // Replay publishes what run does: visitor events and the gauge's readings.
        let isReading = { (line: Substring) in line.contains(#""type":"sentiment.gauge""#) }
        let published = output.filter { !isReading($0) }.joined(separator: "\n")
        let readings = output.filter(isReading).joined(separator: "\n")
        #expect(!readings.isEmpty)

        let scanner = LeakScanner(internalIDs: run.internalIDs)
        #expect(scanner.internalIDs.count >= 4)
        #expect(scanner.leaks(in: published).isEmpty, "\(scanner.leaks(in: published))")
        #expect(scanner.leaks(in: logs).isEmpty, "\(scanner.leaks(in: logs))")
        #expect(scanner.leaks(in: readings).isEmpty, "\(scanner.leaks(in: readings))")

        // Not vacuous: the same visits were published and logged, under pseudonyms.
        let lines = published.split(separator: "\n")
        #expect(lines.count == run.events.count)
        let decoded = try lines.map { try JSONDecoder.sentinel().decode(VisitorEvent.self, from: Data($0.utf8)) }
        let pseudonyms = Set(decoded.map(\.visitor.faceId))
        #expect(pseudonyms.count == scanner.internalIDs.count)
        #expect(pseudonyms.allSatisfy { logs.contains("face.id=\($0)") })
        #expect(decoded.allSatisfy { $0.time.timeIntervalSince1970 == $0.time.timeIntervalSince1970.rounded(.down) })
    }

    @Test("the scanner finds a box when a pipeline allows one, so a clean scan means something")
    func scannerCatchesAllowedBox() async throws {
        let run = try await SampleRun.load()
        var policy = PrivacyPolicy()
        policy.outputs[.store]!.insert(.box)
        policy.outputs[.events]!.insert(.box)
        var mask = PrivacyMask(policy: policy, keys: try PseudonymKeyRing())
        let text = try run.events.prefix(5).map { String(decoding: try mask.mask($0).published.json, as: UTF8.self) }
            .joined(separator: "\n")
        #expect(LeakScanner(internalIDs: []).leaks(in: text).contains("box field"))
        var unmasked = run.events[0]
        unmasked.visitor.faceId = try #require(run.internalIDs.first)
        #expect(
            LeakScanner(internalIDs: []).leaks(
                in: String(decoding: try JSONEncoder.sentinel().encode(unmasked), as: UTF8.self)
            ).contains("internal id pattern"))
    }

    @Test("a gauge level's 0-100 score is no detector score; any other score field is")
    func scannerTellsGaugeLevelsFromScores() {
        let scanner = LeakScanner(internalIDs: [])
        #expect(scanner.leaks(in: #"{"overall":{"value":{"label":"warm","score":72},"visitors":4}}"#).isEmpty)
        #expect(scanner.leaks(in: #"{"label":"warm","score":0.93}"#) == ["detector score"])
        #expect(scanner.leaks(in: #"{"faceId":"abc","score":0.93}"#) == ["detector score"])
    }

    /// The recording's own faces against themselves: every face-frame counts as leaked, so the measure can fail.
    @Test(
        "the review video leaves no face-frame with detail, faces 15 % in view at the edges included; the masks of the faces found alone leave some"
    )
    func reviewVideoMasksEveryFace() async throws {
        let run = try await SampleRun.load()
        let truth = try #require(run.truth)
        let masked = try MaskLeakScore.measure(original: run.recording, review: run.review, truth: truth)
        let facesFound = try MaskLeakScore.measure(original: run.recording, review: run.reviewFacesFound, truth: truth)
        print(
            "review video leaks: \(masked.leaked)/\(masked.faceFrames) (\(masked.byVisibility)); faces found only \(facesFound.leaked)/\(facesFound.faceFrames) (\(facesFound.byVisibility))"
        )
        #expect(masked.faceFrames >= 1000)
        // Faces partly in view are counted: the sample's visitors enter and leave at the edges.
        #expect(masked.bands[0].faceFrames + masked.bands[1].faceFrames >= 40, "\(masked.byVisibility)")
        #expect(masked.leaked == 0, "\(masked.leaks.prefix(10))")
        #expect(facesFound.leaked >= 5, "\(facesFound.byVisibility)")
        let unmasked = try MaskLeakScore.measure(original: run.recording, review: run.recording, truth: truth)
        #expect(unmasked.leaked == unmasked.faceFrames)
    }

    /// What the camera stills' test checks of one live frame, on every frame of the sample: the detector, at the
    /// pipeline's own settings, finds no face in a masked frame. Under the masks of the faces found alone it found one
    /// at frame 65, beside a blurred face (the stills' test's known issue until issue 65).
    @Test(
        "the detector finds no face in any masked frame of the sample; under the masks of the faces found alone, it does"
    )
    func noFaceInMaskedFrames() async throws {
        let run = try await SampleRun.load()
        let definition = try PipelineDefinition.load(
            Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path)
        let found = try await Fixtures.onOwnThread {
            let detector = try OpenCVFaceDetector(
                kind: definition.detection.kind, modelPath: try Fixtures.model(definition.detection.kind.defaultModel),
                settings: definition.detectorSettings)
            return try [run.review, run.reviewFacesFound].map { path in
                let video = try VideoFileSource(path: path)
                var faces: [String] = []
                while let frame = try video.next() {
                    faces += try detector.detect(frame.image).map {
                        "frame \(frame.index): \($0.box) score \($0.score)"
                    }
                }
                return faces
            }
        }
        #expect(found[0].isEmpty, "\(found[0])")
        #expect(!found[1].isEmpty, "the control: the masks of the faces found alone left nothing for the detector")
    }

    @Test(
        "faces coming in at each edge and one stopping behind a pillar leave no face-frame bare that is 15 % in view, by either measure; the masks of the faces found alone leave them bare"
    )
    func edgesAndPillar() async throws {
        let (truth, masked, found) = try await Self.leaks(Scenes.edges)
        // Every visitor is counted while partly in view, at each edge and at the pillar.
        let partly = Set(truth.frames.flatMap(\.faces).filter { $0.visible >= 0.15 && $0.visible < 0.5 }.map(\.visitor))
        #expect(partly == ["left", "right", "top", "bottom", "pillar"])
        print(
            "edge scene leaks: \(masked.leaked)/\(masked.faceFrames) (\(masked.byVisibility)); faces found only \(found.leaked)/\(found.faceFrames) (\(found.byVisibility))"
        )
        #expect(masked.leaked == 0, "\(masked.leaks.prefix(20))")
        // The control: without the edge band and the held masks, faces partly in view are left at every edge.
        let bareVisitors = Set(found.leaks.map(\.visitor))
        #expect(bareVisitors.count >= 3, "\(found.leaks.prefix(40))")
    }

    @Test(
        "faces there from the first frame and holding still, cut by each edge or half behind a pillar, are masked from the first frame on; the masks of the faces found alone leave them bare; as drawn, and with a camera's noise on every frame",
        arguments: [0.0, 6.0])
    func presentFromTheStart(noise: Double) async throws {
        let (truth, masked, found) = try await Self.leaks(Scenes.still, noise: noise)
        // Each is partly in view from the first frame to the last.
        for visitor in ["left", "right", "top", "bottom", "pillar"] {
            let seen = truth.frames.map { $0.faces.first { $0.visitor == visitor }?.visible ?? 0 }
            #expect(seen.allSatisfy { $0 >= 0.15 && $0 < 0.85 }, "\(visitor): \(seen.prefix(3)) ... \(seen.suffix(3))")
        }
        print(
            "still scene, noise \(noise): leaks \(masked.leaked)/\(masked.faceFrames) (\(masked.byVisibility)); faces found only \(found.leaked)/\(found.faceFrames) (\(found.byVisibility)); bare: \(Set(masked.leaks.map(\.visitor)).sorted())"
        )
        #expect(masked.leaked == 0, "\(masked.leaks.prefix(20))")
        // The control: the masks of the faces found alone leave them bare (the detector finds the others, some frames).
        let bare = Dictionary(grouping: found.leaks, by: \.visitor).mapValues(\.count)
        print("still scene, faces found only, bare face-frames by visitor: \(bare)")
        #expect(bare.count >= 2 && found.leaked * 10 >= found.faceFrames, "\(bare)")
    }

    @Test(
        "a live camera showing faces there from its first frame, cut by each edge and behind a pillar, holding still: the zone editor's frame of it, at once and seconds later, leaves none recognisable; the unmasked frame does",
        .enabled(if: RTSPCamera.isAvailable, "needs Debian's GStreamer RTSP server"))
    func liveCameraFromTheStart() async throws {
        let folder = try Fixtures.temporaryFolder()
        let (camera, truth, original) = try await Scenes.servedLive(Scenes.still, in: folder)
        defer { camera.stop() }
        var definition = try PipelineDefinition.load(
            Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path)
        definition.sources[0].input = camera.url("cam")
        definition.sources[0].resolvedInput = camera.url("cam")
        definition.sources[0].zones = []
        let faces = try #require(truth.frames.first).faces
        func recognisable(_ image: Image) throws -> [String] {
            try Scenes.recognisable(faces, in: image, original: original)
        }
        #expect(try recognisable(original).count == faces.count, "the control: the frame as it is shows every face")
        for seconds in [0.0, 3.0] {
            let snapshot = try await Fixtures.onOwnThread { [definition] in
                try SourceSnapshot.take(
                    definition: definition, source: definition.sources[0], models: Fixtures.store, at: seconds,
                    logger: Logger(label: "test"))
            }
            let jpeg = folder.appendingPathComponent("frame-\(seconds).jpg")
            try Data(snapshot.jpeg).write(to: jpeg)
            let shown = try Image(contentsOf: jpeg.path)
            let left = try recognisable(shown)
            #expect(left.isEmpty, "at \(seconds) s, \(snapshot.masked) regions masked: \(left)")
        }
    }

    /// Renders `scene` (faces from Debian's photos) and measures the leaks of its review video as the sample pipeline
    /// masks it, and of one masking the raw frame's detections alone (no edge search, band or held masks).
    static func leaks(_ scene: String, noise: Double = 0) async throws -> (
        truth: GroundTruth, masked: MaskLeakScore, found: MaskLeakScore
    ) {
        let folder = try Fixtures.temporaryFolder()
        let (video, truth) = try await Scenes.render(scene, in: folder, noise: noise)
        var definition = try PipelineDefinition.load(
            Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path)
        definition.sources[0].zones = []
        var facesFound = definition
        facesFound.privacy.review.settleSeconds = 0
        facesFound.privacy.review.edgeBand = 0
        let definitions = [definition, facesFound]
        let scores = try await Fixtures.onOwnThread {
            try definitions.enumerated().map { index, definition in
                let review = folder.appendingPathComponent("review-\(index).avi").path
                let runner = try SourceRunner(
                    definition: definition, source: definition.sources[0], models: Fixtures.store, input: video.path,
                    logger: Logger(label: "test"))
                let writer = ReviewVideo(
                    path: review, fps: runner.nominalFPS, zones: [], settings: definition.privacy.review,
                    drawings: false)
                try runner.run { step in if let frame = step.frame { try writer.write(frame) } }
                writer.finish()
                return try MaskLeakScore.measure(original: video.path, review: review, truth: truth)
            }
        }
        return (truth, scores[0], scores[1])
    }
}
