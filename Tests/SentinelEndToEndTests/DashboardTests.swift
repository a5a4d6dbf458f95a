import Foundation
import SentinelTestSupport
import Testing

/// The dashboard in a real browser: Debian's headless Chromium, driven over the DevTools protocol by
/// `dashboard_probe.py`, against `sentinel run` on the showroom clip behind a token.
@Suite("Dashboard in headless Chromium", .ownThread, .timeLimit(.minutes(3)))
struct DashboardTests {
    @Test(
        "opened from a link with ?access_token=, the page shows the mood as thermometers (a number, 'too few visitors', or 'not measured here' in the staff zone, never NaN), why a zone is withheld while visitors are listed, who is here with a pseudonym, zone, dwell and emotion, one visit's zones on a click, the camera running and what it sees with every face masked, and its three charts drawn from the reports API, the visits one over a chosen range of days; opened with the aggregate token, only aggregates"
    )
    func inChromium() async throws {
        let token = "dashboard-token-0123456789"
        let aggregateToken = "aggregate-token-0123456789"
        let folder = try Fixtures.temporaryFolder()
        let pipeline = folder.appendingPathComponent("pipeline.yml")
        // For the docs' picture (make screenshot), the demo's own recording: its four visitors give the mood a number
        // within a minute, where the short clip's never reach the group size.
        let picture = ProcessInfo.processInfo.environment["SENTINEL_SCREENSHOT"] != nil
        try await
            (picture
            ? String(contentsOf: Fixtures.root.appendingPathComponent("Pipelines/showroom.yml"), encoding: .utf8)
                .replacingOccurrences(
                    of: "input: ../Recordings/out/showroom-640x480.mp4", with: "input: \(Fixtures.recording())")
            : RunningSentinel.showroomOnClip()).write(to: pipeline, atomically: true, encoding: .utf8)
        let database = folder.appendingPathComponent("sentinel.sqlite").path
        let sentinel = try await RunningSentinel(
            arguments: ["run", pipeline.path, "--port", "0", "--database", database, "--pace", "realtime", "--loop"],
            folder: folder, database: database,
            environment: ["SENTINEL_TOKEN": token, "SENTINEL_AGGREGATE_TOKEN": aggregateToken])
        defer { kill(sentinel.process.processIdentifier, SIGKILL) }
        struct Shown: Decodable {
            var scope: String
            var why: String
            var zones: [String]
            var zonesWhy: String?
            var status: String
            var gauges: [String]
            var visitors: [String]
            var cameras: [String]
            var charts: [String]
            var chartStarts: [String: String]?
            var clipped: [String: [String]]
            var clicked: String?
            var visit: String?
            var stays: [String]?
            var rangeBucket: String?
            var stills: [Still]
            var chartNotes: [String]?
            var stream: [String]?
            var body: String
            /// The page's own requests the server refused for access (401 or 403), as "403 /api/visitors".
            var refused: [String]
        }
        struct Still: Decodable {
            var caption: String
            var width: Int
            var zones: [String]
        }
        // For the docs' picture, the page is taken once the overall mood shows a number.
        let shown = try await probePage(
            "dashboard_probe", url: "http://127.0.0.1:\(sentinel.port)/?access_token=\(token)",
            seconds: picture ? 150 : 90,
            folder: folder, keepAs: "SENTINEL_SCREENSHOT", as: Shown.self, extra: picture ? ["mood"] : [])
        #expect(shown.status == "live")
        // Overall, the camera, and each of its three zones.
        #expect(shown.gauges.count == 5, "\(shown.gauges)")
        #expect(
            shown.gauges.allSatisfy { $0.wholeMatch(of: /.+: (\d{1,3}|too few visitors|not measured here)/) != nil },
            "\(shown.gauges)")
        #expect(shown.gauges.first?.hasPrefix("overall: ") == true)
        // The staff counter measures no emotion: said so, not "too few visitors".
        #expect(shown.gauges.contains("showroom · counter: not measured here"), "\(shown.gauges)")
        // Why a zone can be withheld while its visitors are listed.
        #expect(
            shown.scope == "visitors"
                && shown.why.hasPrefix(
                    "Figures over fewer than 3 visits are withheld; this page, opened with the visitor token")
                && shown.why.split(separator: " ").count < 40, "\(shown.why)")
        // A withheld zone count says why in its own table, beside the visitors listed.
        #expect(
            !shown.zones.contains { $0.hasSuffix("fewer than 3") }
                || shown.zonesWhy
                    == "A zone with fewer than 3 visitors shows no number, so that no one in it can be singled out; \"Here now\" lists them by pseudonym, which only the visitor token may see.",
            "\(shown.zones) \(shown.zonesWhy ?? "")")
        // An empty chart says why under it, in words a person sees (not only in its accessibility label); with the
        // reason that counts in a box's first minutes: the bucket under way, which holds the visits, is not drawn yet.
        #expect(
            (shown.chartNotes ?? []).allSatisfy {
                $0.wholeMatch(
                    of:
                        /Empty: (each figure counts fewer than 3 visits, so it is withheld|no visits in this time)\. Only whole (5-minute|hour|day) buckets are drawn: visits since \d\d:\d\d show when it ends\./
                ) != nil
            }, "\(shown.chartNotes ?? [])")
        // The stream names the zone a visitor left on visitor.zoneExited (the stay's): one the visitor entered and had
        // not left (entering the next zone, after 0.3 s inside, can come before leaving the last, after 0.5 s out).
        let stream = Array((shown.stream ?? []).reversed())  // the page shows the newest first
        let exits = stream.filter { $0.contains(" visitor.zoneExited ") }
        #expect(!exits.isEmpty, "\(stream)")
        var inside: [String: Set<String>] = [:]
        for line in stream {
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count > 3 else { continue }
            let (type, visitor, zone) = (fields[1], fields[2], fields[3])
            if type == "visitor.zoneEntered" { inside[visitor, default: []].insert(zone) }
            guard type == "visitor.zoneExited" else { continue }
            // The stream shows what arrived while the page was open: an exit may close a stay entered before.
            let entered = stream.prefix { $0 != line }.contains {
                $0.contains(" visitor.zoneEntered \(visitor) ") && $0.hasSuffix(" \(zone)")
            }
            #expect(
                ["entrance", "display", "counter"].contains(zone)
                    && (!entered || inside[visitor, default: []].contains(zone)), "\(line) in \(stream)")
            inside[visitor, default: []].remove(zone)
        }
        #expect(shown.zones.count == 3, "\(shown.zones)")
        #expect(!shown.visitors.isEmpty)
        #expect(
            shown.visitors.allSatisfy {
                $0.wholeMatch(
                    of:
                        /[a-z2-7]{16} showroom (entrance|display|counter|–) .+ s (not sure yet|not measured here|\w+ \((about \d+|over 90) %\))/
                )
                    != nil
            }, "\(shown.visitors)")
        // Running, or behind when this machine cannot analyse every frame (dropped frames are counted and shown).
        #expect(
            shown.cameras.first?.wholeMatch(of: /showroom (running|behind) [\d.]+ \d+ \d+ [\d.]+ s/) != nil,
            "\(shown.cameras)")
        #expect(shown.charts.map { String($0.prefix { $0 != ":" }) } == ["occupancy", "dwell", "today"])
        // No card cut off at its edge (the emotion column was), and today's visits drawn from the bucket before the
        // first visit, not from midnight: the visits began a minute ago.
        #expect(
            shown.clipped.count == 6 && shown.clipped.values.allSatisfy(\.isEmpty),
            "cards cut off at these widths: \(shown.clipped)")
        let midnight = Calendar.current.startOfDay(for: Date())
        if Date().timeIntervalSince(midnight) > 1_800 {
            #expect(
                shown.chartStarts?["today"].map { $0 != "" && $0 != "00:00" } == true, "\(shown.chartStarts ?? [:])")
        }
        // What the camera sees, faces masked (the demo pipeline allows stills), its three zones drawn over it.
        let still = try #require(shown.stills.first, "\(shown.stills)")
        #expect(shown.stills.count == 1 && still.width > 0 && still.zones == ["entrance", "display", "counter"])
        #expect(
            still.caption.wholeMatch(of: /showroom at \d\d:\d\d:\d\d · \d+ regions? masked/) != nil, "\(still.caption)")
        // A visitor in a zone, clicked: their visit from /api/visitors/{faceId}, each zone with its times and dwell.
        let clicked = try #require(shown.clicked)
        #expect(
            shown.visit?.wholeMatch(of: /(\w+) at showroom: (here|left), .+ s in all since \d\d:\d\d:\d\d.*/)?.1
                == clicked[...],
            "\(clicked): \(shown.visit ?? "")")
        let stays = shown.stays ?? []
        #expect(!stays.isEmpty)
        #expect(
            stays.allSatisfy {
                $0.wholeMatch(
                    of: /(entrance|display|counter) \d\d:\d\d:\d\d (\d\d:\d\d:\d\d .+ s|still there .+ s so far)/)
                    != nil
            }, "\(stays)")
        // Yesterday and today: the visits chart redrawn per hour, its label naming the range.
        let yesterday = ISO8601DateFormatter.string(
            from: Date().addingTimeInterval(-86_400), timeZone: .current, formatOptions: [.withFullDate])
        #expect(shown.rangeBucket == "per hour", "\(shown.rangeBucket ?? "")")
        #expect(
            shown.charts.contains {
                $0.hasPrefix("today: visits \(yesterday) to ") && $0.hasSuffix("in whole hour buckets")
            },
            "\(shown.charts)")
        #expect(!shown.body.contains("NaN") && !shown.body.contains("undefined"))
        // The page's own fetches all carried the token: nothing was refused.
        #expect(shown.refused.isEmpty, "\(shown.refused)")

        // Opened with the aggregate token: aggregates only, no pseudonym, no count below k, nothing refused shown.
        let aggregates = try await probePage(
            "dashboard_probe", url: "http://127.0.0.1:\(sentinel.port)/?access_token=\(aggregateToken)", seconds: 60,
            folder: folder, keepAs: "SENTINEL_AGGREGATE_SCREENSHOT", as: Shown.self)
        #expect(aggregates.scope == "aggregates" && aggregates.status == "aggregates only", "\(aggregates.status)")
        #expect(aggregates.gauges.first?.hasPrefix("overall: ") == true, "\(aggregates.gauges)")
        #expect(
            aggregates.visitors.isEmpty && aggregates.cameras.isEmpty && aggregates.charts.isEmpty
                && aggregates.stills.isEmpty)
        #expect(
            aggregates.zones.allSatisfy { $0.wholeMatch(of: /showroom \w+ (fewer than 3|\d+)/) != nil },
            "\(aggregates.zones)")
        #expect(
            !aggregates.zones.contains { $0.hasSuffix("fewer than 3") }
                || aggregates.zonesWhy
                    == "A zone with fewer than 3 visitors shows no number, so that no one in it can be singled out.",
            "\(aggregates.zonesWhy ?? "")")
        #expect(aggregates.body.firstMatch(of: /[a-z2-7]{16}/) == nil, "no pseudonym: \(aggregates.body)")
        #expect(!aggregates.body.contains("403") && !aggregates.body.contains("NaN"), "\(aggregates.body)")
        // The page asks the aggregate token only for what it may read, but for the one request that tells it its scope.
        #expect(aggregates.refused == ["403 /api/visitors"], "\(aggregates.refused)")
    }
}
