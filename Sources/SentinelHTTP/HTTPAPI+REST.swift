import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import SentinelCore
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelWire
import ServiceLifecycle

extension HTTPAPI {
    func visitors(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        try APIQuery.accept(query, of: "/api/visitors")
        let limit =
            try query["limit"].map { text in
                guard let n = Int(text), (1...1000).contains(n) else {
                    throw HTTPError(.badRequest, message: "limit=\(text) must be 1 to 1000")
                }
                return n
            } ?? 100
        func cursor<Cursor>(_ read: (String) -> Cursor?) throws -> Cursor? {
            try query["cursor"].map { text in
                guard let cursor = read(String(text)) else {
                    throw HTTPError(.badRequest, message: "cursor=\(text) is not a cursor this API returned")
                }
                return cursor
            }
        }
        func page(_ records: [Data], next: String?) -> Response {
            APIResponse.object(
                (next.map { [("nextCursor", Data("\"\($0)\"".utf8))] } ?? []) + [
                    ("visitors", APIResponse.array(records))
                ])
        }
        // Present now (a fleet's may be tens of thousands), in order of arrival: the cursor is the last arrival given.
        guard query["from"] != nil || query["to"] != nil else {
            let after = try cursor {
                $0.hasPrefix("arrival-") ? Int($0.dropFirst(8)).flatMap { $0 >= 0 ? $0 : nil } : nil
            }
            let present = live.now.occupancy.visitors(after: after ?? 0, limit: limit)
            return page(
                try present.records.map { try JSONEncoder.sentinel().encode($0) },
                next: present.next.map { "arrival-\($0)" })
        }
        let from = try APIQuery.date("from", in: query) ?? .distantPast
        let to = try APIQuery.date("to", in: query) ?? .distantFuture
        let visits = try await store.visits(from: from, to: to, after: try cursor(VisitCursor.init), limit: limit)
        return page(visits.records, next: visits.next?.description)
    }

    func visitor(_ faceId: String) async throws -> Response {
        guard let visit = try await store.visit(faceId) else {
            throw HTTPError(
                .notFound, message: "no visitor \(faceId) (ids rotate, and visits older than retention are deleted)")
        }
        return try APIResponse.encode(
            VisitorDetail(
                visitor: try JSONDecoder.sentinel().decode(VisitorRecord.self, from: visit.record),
                exitReason: visit.exitReason, stays: visit.stays))
    }

    /// A running camera's latest frame, every face masked (`Stills`); visitor scope, never cached.
    func still(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        try APIQuery.accept(query, of: "/api/still")
        let sources = live.catalogue.sources
        guard let id = query["sourceId"].map(String.init), sources.contains(id) else {
            throw HTTPError(.badRequest, message: "sourceId= names one of \(sources.joined(separator: ", "))")
        }
        let stills = live.stills
        guard stills.allowed else {
            throw HTTPError(
                .notFound,
                message:
                    "camera stills are off in this pipeline (privacy.review.stills: true turns them on; PRIVACY.md)")
        }
        guard stills.runs(id) else { throw HTTPError(.notFound, message: "source \(id) does not run in this process") }
        guard let still = await stills.still(of: id, timeout: .seconds(3)) else {
            let state = live.sourceHealth[id].map { " (\($0.state.rawValue))" } ?? ""
            throw HTTPError(.serviceUnavailable, message: "no frame from source \(id) in 3 s\(state)")
        }
        return Response(
            status: .ok,
            headers: [
                .contentType: "image/jpeg", .cacheControl: "no-store",
                .lastModified: Stills.httpDate(still.takenAt),
                .facesMasked: "\(still.snapshot.masked)",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: still.snapshot.jpeg)))
    }

    func sentiment(_ request: Request) async throws -> Response {
        try APIQuery.accept(request.uri.queryParameters, of: "/api/sentiment")
        let text = request.uri.queryParameters["minutes"]
        let minutes =
            try text.map { text in
                guard let m = Double(text), m > 0, m <= 7 * 24 * 60 else {
                    throw HTTPError(.badRequest, message: "minutes=\(text) must be more than 0 and at most 10080")
                }
                return m
            } ?? 60
        let series = try await store.gaugeReadings(since: Date().addingTimeInterval(-minutes * 60), limit: 1000)
        let current = try live.now.gauge.map { try JSONEncoder.sentinel().encode($0) }
        return APIResponse.object(
            (current.map { [("current", $0)] } ?? []) + [("series", APIResponse.array(series))])
    }

    /// At most this many periods in one report (a week of five-minute buckets).
    static let maxPeriods = 2_016

    func reports(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        try APIQuery.accept(query, of: "/api/reports")
        // CSV by `?format=csv` (a link in a browser cannot set Accept) or by `Accept: text/csv`.
        let csv: Bool
        switch query["format"] {
        case "csv": csv = true
        case "json": csv = false
        case nil: csv = request.headers[.accept]?.contains("text/csv") == true
        case let other?: throw HTTPError(.badRequest, message: "format=\(other) is not one of csv, json")
        }
        let bucket =
            try query["bucket"].map { text in
                guard let bucket = Report.Bucket(rawValue: String(text)) else {
                    throw HTTPError(
                        .badRequest,
                        message:
                            "bucket=\(text) is not one of \(Report.Bucket.allCases.map(\.rawValue).joined(separator: ", "))"
                    )
                }
                return bucket
            } ?? .hour
        let to = try APIQuery.date("to", in: query) ?? Date()
        let from = try APIQuery.date("from", in: query) ?? to.addingTimeInterval(-86_400)
        guard from < to else { throw HTTPError(.badRequest, message: "from must be before to") }
        let builder = aggregation.reports()
        guard to.timeIntervalSince(from) / bucket.seconds <= Double(Self.maxPeriods) else {
            throw HTTPError(
                .badRequest,
                message:
                    "from..to holds more than \(Self.maxPeriods) buckets of \(bucket.rawValue): a longer bucket or a shorter period"
            )
        }
        let catalogue = live.catalogue
        let source = query["sourceId"].map(String.init)
        if let source, !catalogue.sources.contains(source) {
            throw HTTPError(
                .badRequest, message: "sourceId=\(source) is not one of \(catalogue.sources.joined(separator: ", "))")
        }
        var zones = catalogue.zones.map(\.id).filter { source == nil || $0.sourceId == source }
        if let zone = query["zone"].map(String.init) {
            zones = zones.filter { $0.name == zone || "\($0.sourceId)/\($0.name)" == zone }
            guard !zones.isEmpty else {
                throw HTTPError(.badRequest, message: "zone=\(zone) is no zone\(source.map { " of \($0)" } ?? "")")
            }
        }
        let input = try await store.reportInput(from: from, to: to, source: source)
        let report = builder.report(
            from: from, to: to, bucket: bucket, zones: zones, visits: input.visits, stays: input.stays,
            moods: input.moods)
        guard csv else { return try APIResponse.encode(report) }
        return Response(
            status: .ok,
            headers: [
                .contentType: "text/csv; charset=utf-8",
                .contentDisposition: "attachment; filename=\"sentinel-report.csv\"",
            ],
            body: .init(byteBuffer: ByteBuffer(string: Self.csv(report))))
    }

    /// A report as CSV: a `period` row per bucket (visits, visitors, mood), a `zone` row per zone in it (visitors),
    /// and a `summary` row per zone over the whole report (visitors, mean and median dwell, the dwell histogram, a
    /// column per range named by its edges). A cell is a figure, `suppressed` (fewer than k visitors), or empty:
    /// not applicable to that row, or nothing measured.
    static func csv(_ report: Report) -> String {
        func cell<Value>(_ figure: Aggregate<Value>?, _ text: (Value) -> String) -> String {
            switch figure {
            case nil: ""
            case .suppressed?: "suppressed"
            case .value(let value, _)?: text(value)
            }
        }
        func count(_ figure: Aggregate<Int>?) -> String { cell(figure) { "\($0)" } }
        func seconds(_ figure: Aggregate<Double>?) -> String { cell(figure) { String(format: "%.1f", $0) } }
        let bins = Report.dwellBinNames.map { "dwell_\($0)" }
        let empty = [String](repeating: "", count: bins.count)
        var lines = [
            (["row", "start", "end", "sourceId", "zone", "visits", "visitors", "mood", "meanDwellSeconds"]
                + ["medianDwellSeconds"] + bins).joined(separator: ",")
        ]
        func row(_ fields: [String]) { lines.append(fields.joined(separator: ",")) }
        for period in report.periods {
            let start = ISO8601.string(from: period.start)
            let end = ISO8601.string(from: min(report.to, period.start.addingTimeInterval(report.bucket.seconds)))
            row(
                ["period", start, end, "", "", count(period.visits), count(period.visitors)]
                    + [cell(period.mood) { "\($0.score)" }, "", ""] + empty)
            for zone in period.zones {
                row(
                    ["zone", start, end, CSV.field(zone.sourceId), CSV.field(zone.zone), "", count(zone.visitors)]
                        + ["", "", ""] + empty)
            }
        }
        for zone in report.zones {
            row(
                ["summary", ISO8601.string(from: report.from), ISO8601.string(from: report.to)]
                    + [CSV.field(zone.sourceId), CSV.field(zone.zone), "", count(zone.visitors), ""]
                    + [seconds(zone.meanDwellSeconds), seconds(zone.medianDwellSeconds)]
                    + zone.dwellHistogram.map(count))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    func zoneCounts() -> Response {
        let zones = live.catalogue.zones
        let snapshot = live.now.occupancy.snapshot(zones: zones.map(\.id))
        let list = zones.map { zone in
            ZoneList.Zone(
                name: zone.id.name, sourceId: zone.id.sourceId, emotion: zone.emotion, polygon: zone.polygon,
                units: zone.units, visitors: snapshot.zones[zone.id] ?? .suppressed)
        }
        return
            (try? APIResponse.encode(
                ZoneList(
                    zones: list, visitors: snapshot.visitors, emotions: snapshot.emotions,
                    minGroupSize: aggregation.minGroupSize)))
            ?? APIResponse.error(.internalServerError, "")
    }

    /// Up or down (200 or 503) and a status word for anyone; with `detailed` (the visitor scope), each source,
    /// the database, MQTT and the fleet's sites.
    func health(detailed: Bool) async -> Response {
        let now = Date()
        var database = live.databaseHealth
        let hubCounts = hub.counts
        database.buffered = hubCounts.waiting
        database.dropped = hubCounts.dropped
        do {
            try await store.check()
        } catch {
            database.writable = false
            database.message = error.message
        }
        let sources = live.sourceHealth.sorted { $0.key < $1.key }.map { id, health in
            let age = health.lastFrameAt.map { now.timeIntervalSince($0) }
            let up = (health.state == .running || health.state == .behind) && (age ?? 0) < 10
            return ServiceHealth.Source(
                sourceId: id, state: health.state, up: up, lastFrameAgeSeconds: age.map { ($0 * 10).rounded() / 10 },
                fps: (health.fps * 10).rounded() / 10, frames: health.frames,
                lagSeconds: health.lagSeconds.wholeMilliseconds,
                reconnectAttempt: health.reconnectAttempt, nextRetryAt: health.nextRetryAt, message: health.message)
        }
        // Behind still serves (200): frames are dropped at the edge, counted, and dwell stays right. A fleet is
        // degraded while it cannot reach its broker; a site that is offline is that site's state, listed.
        var fleet = live.fleetHealth
        if var sites = fleet?.sites {
            for i in sites.indices {
                sites[i].lastEventAgeSeconds = sites[i].lastEventAt.map {
                    (now.timeIntervalSince($0) * 10).rounded() / 10
                }
            }
            fleet?.sites = sites
        }
        let healthy = database.writable && sources.allSatisfy(\.up) && fleet?.connected != false
        let status: ServiceHealth.Status =
            !healthy ? .degraded : sources.contains { $0.state == .behind } ? .behind : .ok
        let body =
            detailed
            ? ServiceHealth(status: status, sources: sources, database: database, mqtt: live.mqttHealth, fleet: fleet)
            : ServiceHealth(status: status, sources: nil, database: nil, mqtt: nil, fleet: nil)
        return (try? APIResponse.encode(body, status: healthy ? .ok : .serviceUnavailable))
            ?? APIResponse.error(.internalServerError, "")
    }
}
