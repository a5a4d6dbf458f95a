import Foundation
import Logging
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelPipeline
import SentinelPrivacy
import SentinelTestSupport
import SentinelVision
import SentinelVisitors
import SentinelWire
import Testing

/// The one pipeline's loop (capture edge, detector, visitor stage, mask, finish) driven by scripted frames and
/// detections: no decoder, no model.
@Suite("Pipeline: the per-frame loop with scripted detections", .computing)
struct PipelineTests {
    /// 10 fps, 320x240: a visitor in the left zone for the first 3 s; another on the right from 4 s to the end (6 s).
    static func script(_ index: Int, firstScore: Double = 0.9) -> [Detection] {
        var faces: [Detection] = []
        if index < 30 { faces.append(Detection(box: Box(x: 40, y: 80, width: 60, height: 60), score: firstScore)) }
        if index >= 40 { faces.append(Detection(box: Box(x: 220, y: 80, width: 60, height: 60), score: 0.9)) }
        return faces
    }

    /// Frames one tenth of a second apart, each its own image of `images`, which the detector also holds to know which
    /// frame it was given. From frame `reopenAt` on, a camera that was reopened after half a second without frames.
    final class BlankFrames: FrameSource {
        let name = "scripted"
        let images: [Image]
        let reopenAt: Int
        private var index = 0

        init(_ images: [Image], reopenAt: Int = .max) {
            self.images = images
            self.reopenAt = reopenAt
        }

        func next() throws(VisionError) -> Frame? {
            guard index < images.count else { return nil }
            defer { index += 1 }
            let reopened = index >= reopenAt
            return Frame(
                index: index, time: MediaTime(seconds: Double(index) / 10 + (reopened ? 0.5 : 0)),
                image: images[index], opening: reopened ? 1 : 0)
        }
    }

    /// Answers from `script` for the frame it is given, and fails on frame `failAt` if given. `slow`: every third frame
    /// takes 20 ms, the others none, so that detectors working side by side finish out of order.
    final class ScriptedDetector: FaceDetector {
        let name = "scripted"
        let settings = DetectorSettings.defaults(for: .yunet)
        let images: [Image]
        let failAt: Int?
        let slow: Bool
        let firstScore: Double
        private(set) var calls = 0

        init(_ images: [Image], failAt: Int? = nil, slow: Bool = false, firstScore: Double = 0.9) {
            self.images = images
            self.failAt = failAt
            self.slow = slow
            self.firstScore = firstScore
        }

        func detect(_ image: Image) throws(VisionError) -> [Detection] {
            calls += 1
            let index = images.firstIndex { $0 === image }!
            if slow && index % 3 == 0 { Thread.sleep(forTimeInterval: 0.02) }
            if index == failAt { throw VisionError(.processing, "scripted failure") }
            return PipelineTests.script(index, firstScore: firstScore)
        }

        /// The script is the frames' own detections: none at the edges.
        func detectAtEdges(_ image: Image, margin: Int) throws(VisionError) -> [Detection] { [] }
    }

    static let definition = Result {
        try PipelineDefinition.parse(
            """
            version: 1
            sources:
              - id: floor
                input: /dev/null
                zones:
                  - name: left
                    polygon: [[0.0, 0.0], [0.5, 0.0], [0.5, 1.0], [0.0, 1.0]]
                  - name: right
                    polygon: [[0.5, 0.0], [1.0, 0.0], [1.0, 1.0], [0.5, 1.0]]
            tracker:
              coastSeconds: 0.5
              visitTimeoutSeconds: 1.0
            emotion:
              enabled: false
            """, file: "scripted.yml")
    }

    /// The store's copy of every event a run of `frames` produced, and the published JSON, and the error if any.
    /// `workers` scripted detectors (slow on every third frame when more than one) detect frames ahead side by side.
    func run(
        failAt: Int? = nil, maxFPS: Double = 0, workers: Int = 1, keys: PseudonymKeyRing? = nil, reopenAt: Int = .max,
        firstScore: Double = 0.9
    ) throws -> (
        stored: [VisitorEvent], published: [String], steps: [Pipeline.Step], error: (any Error)?, detections: Int
    ) {
        // Each frame shows its faces (a filled ellipse where each is), as a camera would: a face that comes in changes
        // the picture, which is what motion-gated detection looks for.
        let images = try (0..<60).map { index in
            let image = try Image(width: 320, height: 240)
            for face in Self.script(index) {
                try image.drawEllipse(in: face.box, color: Color(red: 200, green: 170, blue: 140))
            }
            return image
        }
        let detectors = (0..<workers).map { _ in
            ScriptedDetector(images, failAt: failAt, slow: workers > 1, firstScore: firstScore)
        }
        var definition = try Self.definition.get().forEvaluation
        definition.detection.maxFps = maxFPS
        let pipeline = Pipeline(
            definition: definition, source: definition.sources[0], detector: detectors[0], emotion: nil,
            keys: try keys ?? PseudonymKeyRing(), origin: Date(timeIntervalSince1970: 1_800_000_000),
            moreDetectors: Array(detectors.dropFirst()))
        let runner = SourceRunner(
            pipeline: pipeline, frames: BlankFrames(images, reopenAt: reopenAt), logger: Logger(label: "test"))
        var steps: [Pipeline.Step] = []
        var failure: (any Error)?
        do { try runner.run { steps.append($0) } } catch { failure = error }
        let events = steps.flatMap(\.events)
        return (
            events.map(\.stored.event), events.map { String(decoding: $0.published.json, as: UTF8.self) },
            steps, failure, detectors.map(\.calls).reduce(0, +)
        )
    }

    /// Happy on odd calls; on even ones, the refusal `FaceClassifier` makes of an output that is no reading.
    final class FlakyClassifier: FaceClassifying {
        private(set) var calls = 0
        func classify(_ image: Image, face: Detection) throws(VisionError) -> FaceOutput {
            calls += 1
            guard calls % 2 == 1 else {
                throw VisionError(
                    .refusedOutput, "the emotion model gave nan, which is no number: the reading is refused")
            }
            return FaceOutput(probabilities: [0, 0, 0, 1, 0, 0, 0])
        }
    }

    /// The scripted frames (blank) and detections run with emotion on, read by a `FlakyClassifier`, the definition
    /// adjusted by `adjust`: the steps and the classifier.
    func emotionRun(_ adjust: (inout PipelineDefinition) -> Void) throws -> ([Pipeline.Step], FlakyClassifier) {
        let images = try (0..<60).map { _ in try Image(width: 320, height: 240) }
        var definition = try Self.definition.get().forEvaluation
        definition.emotionEnabled = true
        definition.visitors.emotion.minFaceSize = 10
        adjust(&definition)
        let classifier = FlakyClassifier()
        let pipeline = Pipeline(
            definition: definition, source: definition.sources[0], detector: ScriptedDetector(images),
            emotion: EmotionReader(classifier: classifier, readout: .calibration(.identity)),
            keys: try PseudonymKeyRing(), origin: Date(timeIntervalSince1970: 1_800_000_000))
        let runner = SourceRunner(pipeline: pipeline, frames: BlankFrames(images), logger: Logger(label: "test"))
        var steps: [Pipeline.Step] = []
        try runner.run { steps.append($0) }
        return (steps, classifier)
    }

    @Test(
        "a reading the model's output refuses is counted in the frame's timings with why, and the rest go on: the visitors read happy, the source does not end"
    )
    func refusedReadings() throws {
        let (steps, classifier) = try emotionRun {
            $0.visitors.emotion.maxPerSecond = 0
            // Blank frames: no face in them is sharp (see unreadFacesAreCounted).
            $0.visitors.emotion.minSharpness = 0
        }
        let refused = steps.compactMap(\.frame).flatMap(\.timings.refused)
        #expect(
            classifier.calls > 20 && refused.count == classifier.calls / 2, "\(refused.count) of \(classifier.calls)")
        #expect(refused.allSatisfy { $0.contains("nan, which is no number") })
        let events = steps.flatMap(\.events).map(\.stored.event)
        let emotions: [EmotionLabel] = events.compactMap(\.visitor.emotion)
        #expect(emotions.contains(.known(.happy)), "\(emotions)")
        #expect(emotions.allSatisfy { $0 == .known(.happy) || $0 == .unknown }, "\(emotions)")
    }

    @Test(
        "a run's tracks begin where its visits do: at the first frame a face was seen, the frames that confirmed it included (an operator's labels reviewed from them had each entry late)"
    )
    func tracksHoldTheConfirmingFrames() throws {
        let run = try run()
        var recorder = RunRecorder()
        for step in run.steps { recorder.record(step) }
        var first: [String: Int] = [:]
        for entry in recorder.tracked { first[entry.id] = min(first[entry.id] ?? .max, entry.frame) }
        // The script: one visitor from frame 0, another from frame 40.
        #expect(first.values.sorted() == [0, 40], "\(first)")
        // One box per frame and visitor, none twice.
        #expect(Set(recorder.tracked.map { "\($0.frame) \($0.id)" }).count == recorder.tracked.count)
    }

    /// Detections from `faces` for each frame of `images`.
    final class FunctionDetector: FaceDetector {
        let name = "function"
        let settings = DetectorSettings.defaults(for: .yunet)
        let images: [Image]
        let faces: @Sendable (Int) -> [Detection]

        init(_ images: [Image], faces: @escaping @Sendable (Int) -> [Detection]) {
            self.images = images
            self.faces = faces
        }

        func detect(_ image: Image) throws(VisionError) -> [Detection] { faces(images.firstIndex { $0 === image }!) }
        func detectAtEdges(_ image: Image, margin: Int) throws(VisionError) -> [Detection] { [] }
    }

    @Test(
        "a run's label-free summary depends on the recording, not on where its media time falls on the clock: under whole-second published times, the same lines at every origin"
    )
    func summaryIgnoresTheDate() throws {
        // A visit of 0.6 s (frames 2 to 8), then one of 2 s: on whole seconds the first would last 0 s or 1 s by where
        // it falls.
        let images = try (0..<50).map { _ in try Image(width: 320, height: 240) }
        let definition = try Self.definition.get()
        #expect(definition.privacy.timestampResolution == 1)
        func lines(_ fraction: Double) throws -> [String] {
            let origin = Date(timeIntervalSince1970: 1_800_000_000 + fraction)
            let detector = FunctionDetector(images) { index in
                (2...8).contains(index) || (20...40).contains(index)
                    ? [Detection(box: Box(x: 40, y: 80, width: 60, height: 60), score: 0.9)] : []
            }
            let pipeline = Pipeline(
                definition: definition, source: definition.sources[0], detector: detector, emotion: nil,
                keys: try PseudonymKeyRing(), origin: origin)
            var recorder = RunRecorder()
            try SourceRunner(pipeline: pipeline, frames: BlankFrames(images), logger: Logger(label: "test")).run {
                recorder.record($0)
            }
            return recorder.summary(origin: origin).lines
        }
        let summaries = try [0, 0.25, 0.5, 0.9].map(lines)
        #expect(Set(summaries).count == 1, "\(summaries)")
        #expect(summaries[0][0].hasPrefix("2 visits") && summaries[0][0].contains("1 shorter than 1 s"), "\(summaries)")
    }

    @Test(
        "a face that cannot be read is not read, and counted in the frame's timings with why: blank frames' faces are blurred, one a reading due"
    )
    func unreadFacesAreCounted() throws {
        let (steps, classifier) = try emotionRun { _ in }
        let unread = steps.compactMap(\.frame).flatMap(\.timings.unread)
        #expect(classifier.calls == 0)
        // At most maxPerSecond (1.5) due a second per visitor, read or not: not every frame's face.
        #expect(!unread.isEmpty && unread.allSatisfy { $0 == .blurred }, "\(unread)")
        #expect(unread.count < 60 / 2, "\(unread.count)")
    }

    @Test(
        "detectors on consecutive frames side by side (detector.workers): every frame, in order, and the events of one detector, whichever finishes first"
    )
    func workers() throws {
        let keys = try PseudonymKeyRing()
        let one = try run(keys: keys)
        let three = try run(workers: 3, keys: keys)
        #expect(three.error == nil)
        #expect(three.detections == 60)
        #expect(three.steps.compactMap(\.frame).map(\.index) == Array(0..<60))
        #expect(three.stored == one.stored)
        #expect(three.published == one.published)
        // A detection that fails: the frames before it are followed, the open visit ends, then the error comes out.
        let failing = try run(failAt: 50, workers: 3, keys: keys)
        #expect((failing.error as? VisionError)?.message.contains("scripted failure") == true)
        #expect(failing.steps.compactMap(\.frame).map(\.index) == Array(0..<50))
        #expect(failing.stored.filter { $0.type == .exited }.map(\.reason) == [.lost, .endOfStream])
    }

    @Test("detector.workers: 0 shares the machine's cores among the sources that run, at least one each")
    func workersShareTheCores() {
        let cores = ProcessInfo.processInfo.activeProcessorCount
        var detection = DetectorChoice()
        #expect(detection.workers == 0)
        #expect(detection.resolvedWorkers() == cores)
        #expect(detection.resolvedWorkers(sources: 2) == max(1, cores / 2))
        #expect(detection.resolvedWorkers(sources: cores + 1) == 1)
        detection.workers = 3
        #expect(detection.resolvedWorkers(sources: 8) == 3)
    }

    @Test("two scripted visits: one lost with its exact dwell, one ended by the end of the source")
    func visits() throws {
        let (events, published, steps, error, detections) = try run()
        #expect(detections == 60)
        #expect(error == nil)
        #expect(steps.compactMap(\.frame).count == 60)
        let exits = events.filter { $0.type == .exited }
        try #require(exits.count == 2, "\(events.map(\.type))")
        #expect(exits.map(\.reason) == [.lost, .endOfStream])
        // Seen from 0 s to 2.9 s at 10 fps: 3 s of presence; from 4 s to 5.9 s: 2 s.
        #expect(abs((exits[0].visitor.dwellSeconds ?? 0) - 3) <= 0.11, "\(exits[0].visitor.dwellSeconds ?? 0)")
        #expect(abs((exits[1].visitor.dwellSeconds ?? 0) - 2) <= 0.11, "\(exits[1].visitor.dwellSeconds ?? 0)")
        let stays = events.filter { $0.type == .zoneExited }.compactMap(\.stay)
        #expect(stays.map(\.zone) == ["left", "right"])
        // Everything that came out passed the mask: pseudonyms, no internal id, no box.
        let scanner = LeakScanner(internalIDs: [])
        #expect(published.allSatisfy { scanner.leaks(in: $0).isEmpty }, "\(published.map(scanner.leaks))")
        #expect(Set(events.map(\.visitor.faceId)).count == 2)
        // The end is a step of its own, at the last frame's time.
        #expect(steps.last?.frame == nil && steps.last?.time == MediaTime(seconds: 5.9))
    }

    @Test(
        "a camera reopened after half a second without frames (within the visit timeout): the visit open then ends when it was last seen, its stay with it, and the face after the gap is a new visit"
    )
    func reopenedCamera() throws {
        let (events, _, _, error, _) = try run(reopenAt: 50)
        #expect(error == nil)
        let exits = events.filter { $0.type == .exited }
        try #require(exits.count == 3, "\(events.map(\.type))")
        #expect(exits.map(\.reason) == [.lost, .lost, .endOfStream])
        #expect(Set(exits.map(\.visitor.faceId)).count == 3)
        // The right-hand visitor, seen from 4.0 s to 4.9 s before the gap: its visit and stay end at 4.9 s.
        let cut = exits[1]
        let lastSeen = try #require(cut.visitor.lastSeen)
        #expect(abs(lastSeen.timeIntervalSince1970 - 1_800_000_004.9) < 1e-3, "\(cut)")
        #expect(abs((cut.visitor.dwellSeconds ?? 0) - 0.9) < 1e-9)
        let stay = try #require(
            events.first { $0.type == .zoneExited && $0.visitor.faceId == cut.visitor.faceId }?.stay)
        #expect(stay.exitedAt == lastSeen && (stay.dwellSeconds ?? .infinity) <= 0.9 + 1e-9)
    }

    @Test("a detector that fails mid-run still ends the open visit before the error comes out")
    func finishOnFailure() throws {
        let (events, _, _, error, _) = try run(failAt: 50)
        #expect((error as? VisionError)?.message.contains("scripted failure") == true, "\(String(describing: error))")
        let exits = events.filter { $0.type == .exited }
        #expect(exits.map(\.reason) == [.lost, .endOfStream])
        #expect(events.filter { $0.type == .entered }.count == 2)
    }

    @Test(
        "a face the detector reports that no visitor follows (under the detector's score) stays masked on the frames between two detections, where it was"
    )
    func unfollowedFaceMasked() throws {
        let definition = try Self.definition.get()
        let carried = try run(maxFPS: 5, firstScore: definition.detectorSettings.scoreThreshold * 0.9)
        // Only the face that comes in at frame 40, on the right, is a visitor.
        #expect(carried.stored.allSatisfy { ($0.mediaTime ?? 0) >= 4 }, "\(carried.stored)")
        // The faces' masks alone: what is masked beyond them (the edge band, where this face also is) is another
        // mechanism's, tested on its own.
        var faces = definition.privacy.review
        faces.settleSeconds = 0
        faces.edgeBand = 0
        let masks = FaceMasks(settings: faces)
        let frames = carried.steps.compactMap(\.frame).filter { $0.index < 30 }
        #expect(frames.filter { !$0.analysed }.count >= 10)
        let centre = Point(x: 70, y: 110)
        let bare = frames.filter { frame in
            !masks.regions(frame).contains {
                centre.x >= $0.x && centre.x <= $0.maxX && centre.y >= $0.y && centre.y <= $0.maxY
            }
        }
        #expect(bare.isEmpty, "frames showing the face unmasked: \(bare.map(\.index))")
        // Once a detection no longer finds it (from frame 30, before the next face comes), it is no longer masked.
        let gone = carried.steps.compactMap(\.frame).filter { $0.index >= 32 && $0.index < 40 }
        #expect(!gone.isEmpty && gone.allSatisfy { masks.regions($0).isEmpty })
    }

    @Test("under a detection cadence, frames between detections are carried and the visits are the same")
    func cadence() throws {
        let every = try run()
        let carried = try run(maxFPS: 5)
        #expect(carried.error == nil)
        let frames = carried.steps.compactMap(\.frame)
        #expect(frames.count == 60)
        #expect(frames.filter { !$0.analysed }.count >= 20, "\(frames.filter { !$0.analysed }.count) carried")
        #expect(carried.detections == frames.filter(\.analysed).count)
        // A carried frame still places the visitor, where the tracker says.
        #expect(frames.filter { !$0.analysed && $0.index > 5 && $0.index < 28 }.allSatisfy { $0.tracked.count == 1 })
        func exits(_ events: [VisitorEvent]) -> [(ExitReason?, Double)] {
            events.filter { $0.type == .exited }.map { ($0.reason, $0.visitor.dwellSeconds ?? 0) }
        }
        let (a, b) = (exits(every.stored), exits(carried.stored))
        try #require(a.count == 2 && b.count == 2)
        #expect(a.map(\.0) == b.map(\.0))
        #expect(zip(a, b).allSatisfy { abs($0.1 - $1.1) <= 0.2 }, "\(a) vs \(b)")
    }
}
