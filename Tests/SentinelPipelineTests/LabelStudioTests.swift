import Foundation
import SentinelEval
import SentinelTestSupport
import Testing

/// Sentinel's Label Studio tasks through a real Label Studio 1.23 (PyPI, `make label-studio` into .build/label-studio),
/// which the test starts on loopback and stops (`Tests/Peers/labelstudio_roundtrip.py`).
@Suite("Label Studio: Sentinel's tasks imported, exported and read back", .ownThread, .timeLimit(.minutes(8)))
struct LabelStudioTests {
    static let venv = Fixtures.root.appendingPathComponent(".build/label-studio")

    @Test(
        "imported as annotations and as predictions with no validator complaint, exported through the API as a whole project, and read back by the video's name at IDF1 1.000; a task of predictions only, which an export lists by id, is refused saying so"
    )
    func roundTrip() async throws {
        let folder = try Fixtures.temporaryFolder()
        let annotated = folder.appendingPathComponent("a.json").path
        let predicted = folder.appendingPathComponent("b.json").path
        for (recording, file, role) in [
            ("showroom-640x480.mp4", annotated, "annotations"), ("showroom-1280x720.mp4", predicted, "predictions"),
        ] {
            let replay = try await Fixtures.run(
                Fixtures.sentinel,
                [
                    "replay", Fixtures.recording(recording), "--pace", "fastest", "-o", "/dev/null", "--tracks", file,
                    "--tracks-as", role,
                ], timeout: 300)
            try #require(replay.status == 0, "\(replay.errors)")
        }
        let config = folder.appendingPathComponent("config.xml")
        try TrackFile.LabelStudioConfig.xml.write(to: config, atomically: true, encoding: .utf8)
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                Fixtures.root.appendingPathComponent("Tests/Peers/labelstudio_roundtrip.py").path, Self.venv.path,
                folder.path, config.path, annotated, predicted,
            ], timeout: 420)
        try #require(outcome.status == 0, "Label Studio (make label-studio?): \(outcome.output) \(outcome.errors)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any], "\(outcome.output)")
        let imports = summary["imports"] as? [[String: Int]]
        #expect(imports?[0]["annotation_count"] == 1 && imports?[1]["prediction_count"] == 1, "\(summary)")
        #expect((summary["complaints"] as? [String])?.isEmpty == true, "Label Studio complained: \(summary)")

        let export = folder.appendingPathComponent("export.json").path
        let back = try await Fixtures.run(
            Fixtures.sentinel,
            ["eval", "tracks", "--truth", export, "--tracks", annotated, "--video", Fixtures.recording()], timeout: 120)
        #expect(back.status == 0 && back.output.contains("IDF1 1.000"), "\(back.output)\(back.errors)")
        let predictions = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "eval", "tracks", "--truth", export, "--tracks", predicted, "--video",
                Fixtures.recording("showroom-1280x720.mp4"),
            ], timeout: 120)
        #expect(
            predictions.status != 0 && predictions.errors.contains("predictions only"),
            "\(predictions.output)\(predictions.errors)")
        // The README's labeling config is the one tested here.
        let docs = try String(
            contentsOf: Fixtures.root.appendingPathComponent("docs/integrations.md"), encoding: .utf8)
        #expect(docs.contains(TrackFile.LabelStudioConfig.xml))
    }
}
