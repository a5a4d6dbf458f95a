import Foundation
import SentinelTestSupport
import Testing

/// The measuring half of the tuning loop, as an operator runs it: Sentinel's tracks exported to a labelling tool's
/// format, read back as labels, and scored.
@Suite("sentinel replay --tracks and sentinel eval tracks, from the command line")
struct TuningCommandTests {
    @Test(
        "tracks exported as CVAT XML, MOT and Label Studio score IDF1, MOTA and HOTA 1 against the CVAT export; --json has the figures at its top level; a bad label file is one line naming file and frame, exit 1"
    )
    func exportImportScore() throws {
        let folder = try Fixtures.temporaryFolder()
        let recording = Fixtures.recording()
        var exports: [String] = []
        for name in ["tracks.xml", "tracks.txt", "tracks.json"] {
            let path = folder.appendingPathComponent(name).path
            let (status, _, errors) = try Fixtures.run(
                Fixtures.sentinel,
                ["replay", recording, "--pace", "fastest", "-o", "/dev/null", "--tracks", path])
            #expect(status == 0, "\(errors)")
            exports.append(path)
        }
        let json = folder.appendingPathComponent("score.json").path
        let (status, output, errors) = try Fixtures.run(
            Fixtures.sentinel,
            ["eval", "tracks", "--json", json] + exports.flatMap { ["--truth", exports[0], "--tracks", $0] })
        #expect(status == 0, "\(errors)")
        #expect(output.contains("HOTA 1.000") && output.contains("IDF1 1.000"), "\(output)")
        let figures = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        for key in ["idf1", "idp", "idr", "mota", "hota"] { #expect(figures[key] as? Double == 1, "\(key)") }
        #expect(abs(figures["motp"] as? Double ?? 1) < 1e-9 && figures["idSwitches"] as? Int == 0)
        #expect((figures["sequences"] as? [String: Any])?.count == 3)
        // The sample's own truth against Sentinel's tracks: what the README quotes.
        let truth = URL(fileURLWithPath: recording).deletingPathExtension().appendingPathExtension("truth.json").path
        let (_, scored, _) = try Fixtures.run(
            Fixtures.sentinel, ["eval", "tracks", "--truth", truth, "--tracks", exports[0]])
        #expect(scored.contains("IDF1 0.9"), "\(scored)")

        let bad = Fixtures.root.appendingPathComponent("Tests/Corpus/labels/cvat-box-outside.xml").path
        let refused = try Fixtures.run(Fixtures.sentinel, ["eval", "tracks", "--truth", bad, "--tracks", exports[0]])
        #expect(
            refused.status == 1 && refused.errors.contains("\(bad):frame 1: box of id 0 lies outside the 64x48 frame"),
            "\(refused.errors)")
        #expect(!refused.errors.contains("Usage:"))
    }
}
