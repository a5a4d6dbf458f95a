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
        "imported as annotations and as predictions with no validator complaint, exported through the API as a whole project, and read back by the video's name at IDF1 1.000; a task of predictions only, which an export lists by id, is refused saying so; faces uploaded and labelled in an image-classification project are read back by eval emotion from its export"
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
        // Faces labelled as docs/emotion.md says: an image-classification project of the seven as choices.
        let classification = folder.appendingPathComponent("classification.xml")
        try """
        <View>
          <Image name="image" value="$image"/>
          <Choices name="emotion" toName="image" choice="single">
            <Choice value="Angry"/><Choice value="Disgust"/><Choice value="Fear"/><Choice value="Happy"/>
            <Choice value="Sad"/><Choice value="Surprise"/><Choice value="Neutral"/>
          </Choices>
        </View>
        """.write(to: classification, atomically: true, encoding: .utf8)
        let faces = folder.appendingPathComponent("faces.csv")
        try
            "image,emotion\nastronaut.png,Happy\ngrace_hopper_512x512.jpg,Neutral\n640px-IceBlockNearJoekullsarlon.jpg,Neutral\n"
            .write(to: faces, atomically: true, encoding: .utf8)
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                Fixtures.root.appendingPathComponent("Tests/Peers/labelstudio_roundtrip.py").path, Self.venv.path,
                folder.path, config.path, annotated, predicted, "--photos", Fixtures.photos.path, faces.path,
                classification.path,
            ], timeout: 420)
        try #require(outcome.status == 0, "Label Studio (make label-studio?): \(outcome.output) \(outcome.errors)")
        let summary = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any], "\(outcome.output)")
        let imports = summary["imports"] as? [[String: Int]]
        #expect(imports?[0]["annotation_count"] == 1 && imports?[1]["prediction_count"] == 1, "\(summary)")
        #expect((summary["complaints"] as? [String])?.isEmpty == true, "Label Studio complained: \(summary)")

        // The faces' export, read by eval emotion as an operator's labels: every upload found under its own name.
        let labelled = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "eval", "emotion", Fixtures.photos.path, "--labels",
                folder.appendingPathComponent("emotion-export.json").path,
            ], timeout: 120)
        #expect(labelled.status == 0, "\(labelled.errors)")
        #expect(
            labelled.output.contains(": 3 photos")
                && labelled.output.contains("faces read 2; photos without a reading 1")
                && labelled.output.contains("accuracy 1.000"), "\(labelled.output)")
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
