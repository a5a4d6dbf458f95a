import Foundation
import SentinelCore
import SentinelEval
import SentinelPrivacy
import SentinelTestSupport
import SentinelTuning
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
    @Test("the review video leaves no face-frame with detail when masks follow the tracker")
    func reviewVideoMasksEveryFace() async throws {
        let run = try await SampleRun.load()
        let truth = try #require(run.truth)
        let following = try MaskLeakScore.measure(
            original: run.recording, review: run.reviewFollowingTracks, truth: truth)
        let detectionsOnly = try MaskLeakScore.measure(
            original: run.recording, review: run.reviewDetectionsOnly, truth: truth)
        print(
            "review video leaks: following tracks \(following.leaked)/\(following.faceFrames) (worst ratio \(following.worstRatio)); detections only \(detectionsOnly.leaked)/\(detectionsOnly.faceFrames) (worst \(detectionsOnly.worstRatio))"
        )
        #expect(following.faceFrames >= 1000)
        #expect(following.leaked == 0, "\(following.leaks.prefix(10))")
        #expect(detectionsOnly.leaked >= following.leaked)
        let unmasked = try MaskLeakScore.measure(original: run.recording, review: run.recording, truth: truth)
        #expect(unmasked.leaked == unmasked.faceFrames)
    }
}
