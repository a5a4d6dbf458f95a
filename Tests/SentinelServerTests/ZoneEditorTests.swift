import Foundation
import SentinelCore
import SentinelModels
import SentinelPipeline
import SentinelServer
import SentinelTestSupport
import Testing

/// `sentinel zones` in a real browser: Debian's headless Chromium, driven over the DevTools protocol by
/// `zone_editor_probe.py`, dragging corners with the mouse and saving into a copy of the demo pipeline.
@Suite("Zone editor in headless Chromium", .timeLimit(.minutes(3)))
struct ZoneEditorTests {
    @Test(
        "an operator drags a corner, adds and names a zone and saves: the file has them, every other line as it was, and passes the checks; a twisted zone is refused with its reason and the file is left alone"
    )
    func inChromium() async throws {
        let folder = try Fixtures.temporaryFolder()
        let pipeline = folder.appendingPathComponent("pipeline.yml")
        let original = try RunningSentinel.showroomOnClip()
        try original.write(to: pipeline, atomically: true, encoding: .utf8)
        let editor = try RunningSentinel(
            arguments: ["zones", pipeline.path, "--port", "0"], folder: folder, database: "")
        defer { kill(editor.process.processIdentifier, SIGKILL) }
        struct Shown: Decodable {
            var status: String
            var problems: [String]
            var zones: [String]
            var masked: String
        }
        let shown = try probePage(
            "zone_editor_probe", url: "http://127.0.0.1:\(editor.port)/", seconds: 60, folder: folder,
            keepAs: "SENTINEL_ZONES_SCREENSHOT", as: [String: Shown].self)
        let loaded = try #require(shown["loaded"])
        let saved = try #require(shown["saved"])
        let refused = try #require(shown["refused"])
        #expect(loaded.zones == ["entrance", "display", "counter"])
        #expect(loaded.masked.wholeMatch(of: /[1-9]\d* faces? hidden/) != nil, "\(loaded.masked)")
        #expect(saved.status.hasPrefix("Saved to \(pipeline.path)"), "\(saved.status) \(saved.problems)")
        #expect(saved.zones == ["entrance", "display", "counter", "sofa"])
        #expect(refused.status.hasPrefix("Not saved"))
        // Named as the page names it, not by a line of the file it would have written.
        #expect(
            refused.problems == ["showroom › display: polygon: self-intersecting polygon: edge 1 crosses edge 3"],
            "\(refused)")

        // The file: the dragged corner and the new zone, within a pixel of where the mouse let go.
        let text = try String(contentsOf: pipeline, encoding: .utf8)
        let definition = try ServiceDefinition.load(pipeline.path).pipeline
        #expect(definition.environmentProblems(models: Fixtures.store).isEmpty)
        let zones = Dictionary(uniqueKeysWithValues: definition.sources[0].zones.map { ($0.name, $0) })
        #expect(Array(zones.keys).sorted() == ["counter", "display", "entrance", "sofa"])
        func near(_ point: Point?, _ x: Double, _ y: Double) -> Bool {
            guard let point else { return false }
            return abs(point.x - x) < 2.0 / 640 && abs(point.y - y) < 2.0 / 480
        }
        let entrance = try #require(zones["entrance"]).polygon.vertices
        #expect(near(entrance[1], 0.30, 0.15), "\(entrance)")
        #expect(near(entrance[0], 0, 0.2) && near(entrance[2], 0.25, 0.9))
        let sofa = try #require(zones["sofa"]).polygon.vertices
        #expect(sofa.count == 4 && near(sofa[2], 0.70, 0.70) && near(sofa[0], 0.4, 0.4), "\(sofa)")
        // The refused save left the display as the first save wrote it.
        #expect(try #require(zones["display"]).polygon.vertices.first.map { near($0, 0.35, 0.2) } == true)
        // Every line but the edited polygon and the two added is the original's, in order: comments included.
        let before = original.components(separatedBy: "\n")
        let after = text.components(separatedBy: "\n")
        #expect(after.count == before.count + 2)
        let changed = after.enumerated().filter { !before.contains($0.element) }.map(\.element)
        #expect(changed.count == 3, "\(changed)")
        #expect(
            after.filter { before.contains($0) } == before.filter { $0 != before.first { $0.contains("[0.25, 0.2]") } })
        #expect(!editor.log.contains("error"))
    }
}
