import Foundation
import SentinelAssembly
import SentinelClient
import SentinelLoopback
import SentinelPrivacy
import SentinelStore
import Testing

@Suite("Reports over the store")
struct ReportTests {
    @Test(
        "/api/reports: visits per bucket, visitors per zone, mean and median dwell, the dwell histogram and busiest hours, each under k suppressed; CSV with Accept: text/csv or ?format=csv, dwell and its bins' edges in it, suppressed apart from not applicable; bad parameters say which"
    )
    func report() async throws {
        let server = try await TestServer()
        // Six visitors in the display zone for 20, 25, ... 45 s, and two at the counter (fewer than k = 3), all
        // within the first two minutes of an hour two hours ago (local time, as the report counts).
        let builder = ReportBuilder(minGroupSize: 3)
        let base = builder.bucketStart(Date().addingTimeInterval(-7_200), .hour)
        func visit(_ i: Int, zone: String, dwell: Double) throws {
            let start = base.addingTimeInterval(Double(i) * 10)
            var record = VisitorRecord(
                faceId: "showroom#0#\(i)", sourceId: "showroom", zone: nil, state: .active, firstSeen: start,
                lastSeen: start, emotion: .known(.happy), emotionConfidence: 0.9, valence: 1)
            try server.submit(VisitorEvent(type: .entered, time: start, visitor: record))
            let entered = start.addingTimeInterval(1)
            record.zone = zone
            record.lastSeen = entered
            try server.submit(
                VisitorEvent(
                    type: .zoneEntered, time: entered, visitor: record, stay: .init(zone: zone, enteredAt: entered)))
            let exited = entered.addingTimeInterval(dwell)
            record.zone = nil
            record.lastSeen = exited
            record.dwellSeconds = dwell + 1
            try server.submit(
                VisitorEvent(
                    type: .zoneExited, time: exited, visitor: record,
                    stay: .init(zone: zone, enteredAt: entered, exitedAt: exited, dwellSeconds: dwell)))
            record.state = .exited
            try server.submit(VisitorEvent(type: .exited, time: exited, visitor: record, reason: .lost))
        }
        for i in 0..<6 { try visit(i, zone: "display", dwell: 20 + Double(i) * 5) }
        for i in 6..<8 { try visit(i, zone: "counter", dwell: 100) }
        #expect(try await server.wait { try await server.service.store.logBounds().last == 32 })

        let client = SentinelClient(url: URL(string: "http://127.0.0.1:\(server.port)")!)
        let report = try await client.report(
            from: base.addingTimeInterval(-600), to: base.addingTimeInterval(1_200), bucket: .fiveMinutes)
        #expect(report.periods.count == 6)
        #expect(report.periods.map(\.visits) == [.suppressed, .suppressed, .value(8, visitors: 8)] + [.suppressed] * 3)
        #expect(report.periods[2].zones.map(\.visitors) == [.value(6, visitors: 6), .suppressed])
        let display = try #require(report.zones.first { $0.zone == "display" })
        #expect(display.visitors == .value(6, visitors: 6))
        #expect(display.meanDwellSeconds == .value(32.5, visitors: 6))
        #expect(display.medianDwellSeconds == .value(32.5, visitors: 6))
        // 20, 25 | 30, 35, 40, 45 s: the 30-60 s bin alone has three or more.
        #expect(display.dwellHistogram == [.suppressed, .suppressed, .value(4, visitors: 4)] + [.suppressed] * 3)
        let counter = try #require(report.zones.first { $0.zone == "counter" })
        #expect(counter.visitors == .suppressed && counter.meanDwellSeconds == .suppressed)
        let hour = Calendar.current.component(.hour, from: base)
        #expect(report.busiestHours == [.init(hour: hour, visits: .value(8, visitors: 8))])

        // CSV by Accept or by ?format=csv (a link); a suppressed figure says so, an empty cell is not applicable to
        // its row or not measured (no mood was read in this period).
        let window =
            "/api/reports?from=\(ISO8601.string(from: base))&to=\(ISO8601.string(from: base.addingTimeInterval(300)))&bucket=5m"
        let start = ISO8601.string(from: base)
        let end = ISO8601.string(from: base.addingTimeInterval(300))
        let expected = [
            "row,start,end,sourceId,zone,visits,visitors,mood,meanDwellSeconds,medianDwellSeconds,"
                + "dwell_0-10s,dwell_10-30s,dwell_30-60s,dwell_60-120s,dwell_120-300s,dwell_300s+",
            "period,\(start),\(end),,,8,8,,,,,,,,,",
            "zone,\(start),\(end),showroom,display,,6,,,,,,,,,",
            "zone,\(start),\(end),showroom,counter,,suppressed,,,,,,,,,",
            "summary,\(start),\(end),showroom,display,,6,,32.5,32.5,suppressed,suppressed,4,suppressed,suppressed,suppressed",
            "summary,\(start),\(end),showroom,counter,,suppressed,,suppressed,suppressed,"
                + [String](repeating: "suppressed", count: 6).joined(separator: ","),
        ].map { $0 + "\r\n" }.joined()
        for (path, headers) in [(window, [("Accept", "text/csv")]), (window + "&format=csv", [])] {
            let csv = try await LoopbackClient.fetch(port: server.port, path: path, headers: headers)
            #expect(csv.0.header("Content-Type") == "text/csv; charset=utf-8")
            #expect(String(decoding: csv.1, as: UTF8.self) == expected, "\(path)")
        }
        let json = try JSONSerialization.jsonObject(with: try await server.get(window).1) as? [String: Any]
        #expect(json?["dwellBinEdgesSeconds"] as? [Double] == Report.dwellBins)
        #expect((json?["periods"] as? [[String: Any]])?.first?.keys.contains("mood") == false, "no reading: no mood")

        for (query, message) in [
            ("bucket=week", "bucket=week is not one of 5m, hour, day"),
            ("from=2026-01-01T00:00:00Z&to=2026-03-01T00:00:00Z&bucket=5m", "more than 2016 buckets"),
            ("zone=kitchen", "zone=kitchen is no zone"), ("sourceId=lobby", "sourceId=lobby is not one of showroom"),
            ("from=yesterday", "from=yesterday is not an ISO-8601 date"), ("limit=3", "limit is not a parameter"),
            ("format=xml", "format=xml is not one of csv, json"),
        ] {
            let (head, body) = try await server.get("/api/reports?\(query)")
            #expect(head.status == 400 && String(decoding: body, as: UTF8.self).contains(message), "\(query)")
        }
        try await server.stop()
    }
}

extension Array {
    fileprivate static func * (element: Array, count: Int) -> Array { Array((0..<count).flatMap { _ in element }) }
}
