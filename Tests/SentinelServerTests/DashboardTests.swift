import Foundation
import SentinelTestSupport
import Testing

/// The dashboard in a real browser: Debian's headless Chromium, driven over the DevTools protocol by
/// `dashboard_probe.py`, against `sentinel run` on the showroom clip behind a token.
@Suite("Dashboard in headless Chromium", .timeLimit(.minutes(3)))
struct DashboardTests {
    @Test(
        "opened from a link with ?access_token=, the page shows the mood as thermometers (a number or 'too few visitors', never NaN), who is here with a pseudonym, zone, dwell and emotion, the camera running, and its three charts drawn from the reports API"
    )
    func inChromium() async throws {
        let token = "dashboard-token-0123456789"
        let folder = try Fixtures.temporaryFolder()
        let pipeline = folder.appendingPathComponent("pipeline.yml")
        try RunningSentinel.showroomOnClip().write(to: pipeline, atomically: true, encoding: .utf8)
        let database = folder.appendingPathComponent("sentinel.sqlite").path
        let sentinel = try RunningSentinel(
            arguments: ["run", pipeline.path, "--port", "0", "--database", database, "--pace", "realtime", "--loop"],
            folder: folder, database: database, environment: ["SENTINEL_TOKEN": token])
        defer { kill(sentinel.process.processIdentifier, SIGKILL) }
        struct Shown: Decodable {
            var status: String
            var gauges: [String]
            var visitors: [String]
            var cameras: [String]
            var charts: [String]
            var body: String
        }
        let shown = try probePage(
            "dashboard_probe", url: "http://127.0.0.1:\(sentinel.port)/?access_token=\(token)", seconds: 90,
            folder: folder, keepAs: "SENTINEL_SCREENSHOT", as: Shown.self)
        #expect(shown.status == "live")
        // Overall, the camera, and each of its three zones.
        #expect(shown.gauges.count == 5, "\(shown.gauges)")
        #expect(
            shown.gauges.allSatisfy { $0.wholeMatch(of: /.+: (\d{1,3}|too few visitors)/) != nil }, "\(shown.gauges)")
        #expect(shown.gauges.first?.hasPrefix("overall: ") == true)
        #expect(!shown.visitors.isEmpty)
        #expect(
            shown.visitors.allSatisfy {
                $0.wholeMatch(
                    of: /[a-z2-7]{16} showroom (entrance|display|counter|–) .+ s (not sure yet|\w+ \(\d+ %\))/)
                    != nil
            }, "\(shown.visitors)")
        // Running, or behind when this machine cannot analyse every frame (dropped frames are counted and shown).
        #expect(
            shown.cameras.first?.wholeMatch(of: /showroom (running|behind) [\d.]+ \d+ \d+ [\d.]+ s/) != nil,
            "\(shown.cameras)")
        #expect(shown.charts.map { String($0.prefix { $0 != ":" }) } == ["occupancy", "dwell", "today"])
        #expect(!shown.body.contains("NaN") && !shown.body.contains("undefined"))
        // The page's own fetches all carried the token: nothing was refused.
        #expect(!sentinel.log.contains("401"))
    }
}
