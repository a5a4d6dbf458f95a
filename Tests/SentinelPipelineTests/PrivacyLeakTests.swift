import Foundation
import SentinelCore
import SentinelPipeline
import SentinelPrivacy
import SentinelTestSupport
import Testing

/// Looks through an output for anything that could identify a person or join a record with footage.
struct LeakScanner {
    /// Internal visit ids, as the visitor stage makes them.
    var internalIDs: Set<String>

    func leaks(in text: String) -> [String] {
        var found: [String] = []
        for id in internalIDs where text.contains(id) { found.append("internal id \(id)") }
        let patterns = [
            ("internal id pattern", #"[A-Za-z0-9_-]+#\d{10,}#\d+"#),
            ("box field", #""(box|x|y|width|height|landmarks|bbox)"\s*:"#),
            ("detector score", #""(detectionScore|score)"\s*:"#),
            ("media time", #""(mediaTime|frameIndex|frame)"\s*:"#),
            ("emotion distribution", #""emotionDistribution"\s*:"#),
            ("image data", #"data:image|[A-Za-z0-9+/]{80,}={0,2}"#),
            ("box in a log line", #"Box\(|x: \d+(\.\d+)?, y: \d+"#),
        ]
        for (name, pattern) in patterns where text.range(of: pattern, options: .regularExpression) != nil {
            found.append(name)
        }
        for magic in ["\u{FF}\u{D8}\u{FF}", "\u{89}PNG"] where text.contains(magic) { found.append("image bytes") }
        return found
    }
}

@Suite("Privacy: nothing identifying leaves the box under the default policy")
struct PrivacyLeakTests {
    @Test("the replay command's events and logs carry no internal id, box, score, media time or image data")
    func replayOutputsAreClean() throws {
        let run = try SampleRun.shared.get()
        let folder = try Fixtures.temporaryFolder()
        let events = folder.appendingPathComponent("events.jsonl")
        let (status, _, logs) = try Fixtures.run(
            Fixtures.sentinel, ["replay", run.recording, "-o", events.path, "--annotate", folder.appendingPathComponent("review.avi").path, "--verbose"])
        #expect(status == 0, "\(logs)")
        let published = try String(contentsOf: events, encoding: .utf8)

        let scanner = LeakScanner(internalIDs: Set(run.events.map(\.visitor.faceId)))
        #expect(scanner.internalIDs.count >= 4)
        #expect(scanner.leaks(in: published).isEmpty, "\(scanner.leaks(in: published))")
        #expect(scanner.leaks(in: logs).isEmpty, "\(scanner.leaks(in: logs))")

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
    func scannerCatchesAllowedBox() throws {
        let run = try SampleRun.shared.get()
        var policy = PrivacyPolicy()
        policy.outputs[.events]!.insert(.box)
        var mask = PrivacyMask(policy: policy, keys: try PseudonymKeyRing())
        let text = try run.events.prefix(5).map { String(decoding: try mask.mask($0)[.events]!.json, as: UTF8.self) }.joined(separator: "\n")
        #expect(LeakScanner(internalIDs: []).leaks(in: text).contains("box field"))
        #expect(LeakScanner(internalIDs: []).leaks(in: String(decoding: try JSONEncoder.sentinel().encode(run.events[0]), as: UTF8.self)).contains("internal id pattern"))
    }

    /// The recording's own faces against themselves: every face-frame counts as leaked, so the measure can fail.
    @Test("the review video leaves no face-frame with detail when masks follow the tracker")
    func reviewVideoMasksEveryFace() throws {
        let run = try SampleRun.shared.get()
        let truth = try #require(run.truth)
        let following = try MaskLeakScore.measure(original: run.recording, review: run.reviewFollowingTracks, truth: truth)
        let detectionsOnly = try MaskLeakScore.measure(original: run.recording, review: run.reviewDetectionsOnly, truth: truth)
        print("review video leaks: following tracks \(following.leaked)/\(following.faceFrames) (worst ratio \(following.worstRatio)); detections only \(detectionsOnly.leaked)/\(detectionsOnly.faceFrames) (worst \(detectionsOnly.worstRatio))")
        #expect(following.faceFrames >= 1000)
        #expect(following.leaked == 0, "\(following.leaks.prefix(10))")
        #expect(detectionsOnly.leaked >= following.leaked)
        let unmasked = try MaskLeakScore.measure(original: run.recording, review: run.recording, truth: truth)
        #expect(unmasked.leaked == unmasked.faceFrames)
    }
}
