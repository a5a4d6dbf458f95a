import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import Logging
import SentinelAggregates
import SentinelCore
import SentinelPipeline
import SentinelPrivacy
import SentinelStore
import ServiceLifecycle

/// The HTTP surface of `sentinel run`: `/events` (SSE), the REST API, `/healthz`, `/metrics` and `/openapi.json`.
public struct HTTPAPI: Sendable {
    let settings: ServerSettings
    let store: EventStore
    let live: LiveState
    let hub: Hub
    let broadcaster: Broadcaster
    let telemetry: Telemetry
    let tokens: AccessTokens
    let logger: Logger

    public init(
        settings: ServerSettings, store: EventStore, live: LiveState, hub: Hub, broadcaster: Broadcaster,
        telemetry: Telemetry, tokens: AccessTokens,
        logger: Logger
    ) {
        self.settings = settings
        self.store = store
        self.live = live
        self.hub = hub
        self.broadcaster = broadcaster
        self.telemetry = telemetry
        self.tokens = tokens
        self.logger = logger
    }

    /// A zone as the API lists it.
    public struct Zone: Sendable {
        public var id: ZoneID
        /// False where emotion is not measured (staff areas).
        public var emotion: Bool
        /// The polygon as the pipeline file writes it, `[x, y]` points in `units` (`normalized` fractions of the frame
        /// or `pixels`); nil where it is not known (a fleet learns zones from events).
        public var polygon: [[Double]]?
        public var units: PolygonUnits?

        public init(id: ZoneID, emotion: Bool, polygon: Polygon? = nil, units: PolygonUnits = .normalized) {
            self.id = id
            self.emotion = emotion
            self.polygon = polygon?.vertices.map { [$0.x, $0.y] }
            self.units = polygon == nil ? nil : units
        }
    }

    /// The HTTP server answering this API, with the server settings' limits; `onListening` gets the bound port.
    func application(onListening: @escaping @Sendable (Int) async -> Void) -> some Service {
        Application(
            router: router(),
            server: .http1(
                configuration: .init(
                    idleTimeout: .nanoseconds(Int64(settings.idleTimeoutSeconds * 1e9)),
                    httpDecoderConfiguration: .init(
                        maxHeaderFieldSize: 8 * 1_024, maxHeaderListSize: 16 * 1_024, maxHeaderFieldCount: 64))),
            configuration: .init(
                address: .hostname(settings.host, port: settings.port), serverName: "sentinel",
                availableConnectionsDelegate: MaximumAvailableConnections(settings.maxConnections, logger: logger)),
            onServerRunning: { [port = settings.port] channel in await onListening(channel.localAddress?.port ?? port)
            },
            logger: logger)
    }

    public func router() -> Router<APIContext> {
        let router = Router(context: APIContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: HeadWithoutBody())
        router.add(middleware: CORSAllowlist(origins: Set(settings.corsOrigins)))
        router.add(middleware: JSONErrors())
        router.add(middleware: ReadOnlyRequests())
        router.add(middleware: BearerAuthentication(tokens: tokens))
        router.get("/events") { request, _ in try events(request) }
        router.get("/api/visitors") { request, _ in try await visitors(request) }
        router.get("/api/visitors/{faceId}") { _, context in try await visitor(context.parameters.require("faceId")) }
        router.get("/api/sentiment") { request, _ in try await sentiment(request) }
        router.get("/api/zones") { _, _ in zoneCounts() }
        router.get("/api/reports") { request, _ in try await reports(request) }
        router.get("/api/still") { request, _ in try await still(request) }
        router.get("/javascript/{package}/{file}") { _, context in
            try WebLibrary.file(
                package: context.parameters.require("package"), name: context.parameters.require("file"))
        }
        router.get("/healthz") { _, context in await health(detailed: context.scope == .visitors) }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: telemetry.exposition())))
        }
        router.get("/openapi.json") { _, _ in try APIResponse.json(Data(contentsOf: Resource.url("openapi.json"))) }
        router.get("/") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/html; charset=utf-8"],
                body: .init(byteBuffer: ByteBuffer(bytes: try Data(contentsOf: Resource.url("dashboard.html")))))
        }
        return router
    }

    // MARK: SSE

    func events(_ request: Request) throws -> Response {
        let query = request.uri.queryParameters
        try APIQuery.accept(
            ["sourceId", "site", "zone", "type", "lastEventId", "access_token"], in: query, of: "/events")
        // A filter value that can never match is a mistake to report, not a stream that stays silent.
        func list(_ name: String, of valid: [String]) throws -> Set<String>? {
            guard let text = query[Substring(name)] else { return nil }
            let values = Set(text.split(separator: ",").map(String.init))
            let unknown = values.subtracting(valid)
            guard unknown.isEmpty else {
                throw HTTPError(
                    .badRequest,
                    message:
                        "\(name)=\(unknown.sorted().joined(separator: ",")) is not one of \(valid.joined(separator: ", "))"
                )
            }
            return values
        }
        let catalogue = live.catalogue
        let zones = catalogue.zones
        let zoneNames = Array(Set(zones.map(\.id.name))).sorted() + zones.map { "\($0.id.sourceId)/\($0.id.name)" }
        // A fleet's sources are `site/source`: `site=` keeps every source of those sites.
        let sites = Set(catalogue.sources.filter { $0.contains("/") }.map { String($0.prefix { $0 != "/" }) })
        var sources = try list("sourceId", of: catalogue.sources)
        if let wanted = try list("site", of: sites.sorted()) {
            let ofSites = catalogue.sources.filter { wanted.contains(String($0.prefix { $0 != "/" })) }
            sources = Set(ofSites).intersection(sources ?? Set(ofSites))
        }
        let filter = EventFilter(
            sources: sources,
            zones: try list("zone", of: zoneNames),
            types: try list("type", of: VisitorEvent.Kind.allCases.map(\.rawValue) + [EventEnvelope.gaugeType]))
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache",
            HTTPField.Name("X-Accel-Buffering")!: "no",
        ]
        // A HEAD: what a stream would start with, without one.
        guard request.method != .head else { return Response(status: .ok, headers: headers) }
        let resume = request.headers[HTTPField.Name("Last-Event-ID")!] ?? query["lastEventId"].map(String.init)
        // Subscribe before reading the store: whatever is committed after the read arrives through the subscription.
        guard
            let subscription = broadcaster.subscribe(
                filter, capacity: settings.clientBufferEvents, limit: settings.maxSubscribers)
        else {
            throw HTTPError(
                .serviceUnavailable, headers: [.retryAfter: "\((settings.retryMilliseconds + 999) / 1_000)"],
                message:
                    "\(settings.maxSubscribers) SSE clients are connected, the most server.maxSubscribers allows; retry later"
            )
        }
        let store = store
        let broadcaster = broadcaster
        let settings = settings
        let logger = logger
        let body = ResponseBody { writer in
            defer { broadcaster.unsubscribe(subscription) }
            // A client that goes away ends its stream at once, not at the next write.
            try await request.body.consumeWithInboundCloseHandler { _ in
                try await Self.stream(
                    subscription, resume: resume, filter: filter, store: store, settings: settings, logger: logger,
                    to: &writer)
            } onInboundClosed: {
                subscription.finish()
            }
            try await writer.finish(nil)
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// Writes the retry hint, what the client missed (from the store), then live events and heartbeats until the
    /// subscription ends; a client cut off for being slow gets a last `stream.cutoff` message saying why.
    static func stream(
        _ subscription: Broadcaster.Subscription, resume: String?, filter: EventFilter, store: EventStore,
        settings: ServerSettings, logger: Logger, to writer: inout any ResponseBodyWriter
    ) async throws {
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while true {
                    try await Task.sleep(for: .seconds(settings.heartbeatSeconds))
                    subscription.heartbeat()
                }
            }
            defer { group.cancelAll() }
            var lastSent: Int64 = 0
            // The first bytes (the head and the retry hint) go before anything waits on the store: a client never
            // waits for the store's readers to learn that its stream is open.
            try await writer.write(ByteBuffer(string: ServerSentEvents.retry(milliseconds: settings.retryMilliseconds)))
            logger.debug("SSE stream opened", metadata: ["resume": "\(resume ?? "")"])
            if let resume {
                let (notice, start) = try await resumePoint(resume, store: store)
                if let notice { try await writer.write(ByteBuffer(string: notice)) }
                lastSent = try await replay(after: start, filter: filter, store: store, writer: &writer)
            }
            defer { logger.debug("SSE stream ended", metadata: ["lastEventId": "\(lastSent)"]) }
            // Whatever the client has queued goes in one write.
            while let items = await subscription.next() {
                var text = ""
                for item in items {
                    switch item {
                    case .event(let event, let message):
                        guard event.id > lastSent else { continue }
                        text += message
                        lastSent = event.id
                    case .heartbeat:
                        text += ServerSentEvents.heartbeat
                    }
                }
                if !text.isEmpty { try await writer.write(ByteBuffer(string: text)) }
            }
            if subscription.droppedMessages > 0 {
                logger.warning("SSE client cut off: too slow", metadata: ["lastEventId": "\(lastSent)"])
                try await writer.write(
                    ByteBuffer(
                        string: ServerSentEvents.control(
                            StreamNotice.cutoffType,
                            StreamNotice(
                                reason: "slow consumer: more than \(settings.clientBufferEvents) messages queued",
                                lastEventId: lastSent))))
            }
        }
    }

    /// Where a resuming client continues, and the `stream.reset` notice when its id is not in the log.
    static func resumePoint(_ requested: String, store: EventStore) async throws -> (notice: String?, after: Int64) {
        let bounds = try await store.logBounds()
        if let id = Int64(requested), id >= bounds.floor, id <= bounds.last { return (nil, id) }
        let expired = Int64(requested).map { $0 >= 0 && $0 < bounds.floor } ?? false
        let start = expired ? bounds.floor : bounds.last
        let notice = ServerSentEvents.control(
            StreamNotice.resetType,
            StreamNotice(
                reason: expired ? "expired" : "unknown",
                message: expired
                    ? "events up to \(bounds.floor) were deleted by retention; continuing from the oldest kept"
                    : "no event \(requested) in this log; continuing with new events",
                requestedId: requested, resumeAfter: start))
        return (notice, start)
    }

    /// Sends the logged events after `id` that match `filter`; returns the last id read.
    static func replay(after id: Int64, filter: EventFilter, store: EventStore, writer: inout any ResponseBodyWriter)
        async throws -> Int64
    {
        // The next page is read while this one is written.
        let size = 1_000
        var cursor = id
        var page = try await store.events(after: id, limit: size)
        while true {
            cursor = page.last?.id ?? cursor
            guard page.count == size else {
                try await write(page)
                return cursor
            }
            let after = cursor
            async let next = store.events(after: after, limit: size)
            try await write(page)
            page = try await next
        }
        func write(_ page: [LoggedEvent]) async throws {
            let text = page.filter(filter.matches).map(ServerSentEvents.message).joined()
            if !text.isEmpty { try await writer.write(ByteBuffer(string: text)) }
        }
    }

    // MARK: REST

    func visitors(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        try APIQuery.accept(["from", "to", "limit", "cursor"], in: query, of: "/api/visitors")
        guard query["from"] != nil || query["to"] != nil else {
            let present = try live.now.occupancy.visitors.map { try JSONEncoder.sentinel().encode($0) }
            return APIResponse.object([("visitors", APIResponse.array(present))])
        }
        let from = try APIQuery.date("from", in: query) ?? .distantPast
        let to = try APIQuery.date("to", in: query) ?? .distantFuture
        let limit =
            try query["limit"].map { text in
                guard let n = Int(text), (1...1000).contains(n) else {
                    throw HTTPError(.badRequest, message: "limit=\(text) must be 1 to 1000")
                }
                return n
            } ?? 100
        let cursor = try query["cursor"].map { text in
            guard let cursor = EventStore.VisitCursor(String(text)) else {
                throw HTTPError(.badRequest, message: "cursor=\(text) is not a cursor this API returned")
            }
            return cursor
        }
        let page = try await store.visits(from: from, to: to, after: cursor, limit: limit)
        return APIResponse.object(
            (page.next.map { [("nextCursor", Data("\"\($0)\"".utf8))] } ?? [])
                + [("visitors", APIResponse.array(page.records))])
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
        try APIQuery.accept(["sourceId"], in: query, of: "/api/still")
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
                HTTPField.Name("X-Faces-Masked")!: "\(still.snapshot.masked)",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: still.snapshot.jpeg)))
    }

    func sentiment(_ request: Request) async throws -> Response {
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
        try APIQuery.accept(["from", "to", "bucket", "sourceId", "zone", "format"], in: query, of: "/api/reports")
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
        let builder = ReportBuilder(minGroupSize: live.now.occupancy.minGroupSize)
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
                    ["zone", start, end, csvField(zone.sourceId), csvField(zone.zone), "", count(zone.visitors)]
                        + ["", "", ""] + empty)
            }
        }
        for zone in report.zones {
            row(
                ["summary", ISO8601.string(from: report.from), ISO8601.string(from: report.to)]
                    + [csvField(zone.sourceId), csvField(zone.zone), "", count(zone.visitors), ""]
                    + [seconds(zone.meanDwellSeconds), seconds(zone.medianDwellSeconds)]
                    + zone.dwellHistogram.map(count))
        }
        return lines.joined(separator: "\r\n") + "\r\n"
    }

    /// A CSV field (RFC 4180): quoted when it holds a comma, quote or line break.
    static func csvField(_ text: String) -> String {
        text.contains(where: { ",\"\r\n".contains($0) })
            ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
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
                    minGroupSize: live.now.occupancy.minGroupSize)))
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

/// The checks every REST endpoint makes of its query string, with the same messages.
enum APIQuery {
    /// Refuses a parameter the endpoint does not take: a typo is reported, not ignored.
    static func accept(_ names: [String], in query: FlatDictionary<Substring, Substring>, of path: String) throws {
        if let unknown = query.map({ String($0.key) }).first(where: { !names.contains($0) }) {
            throw HTTPError(
                .badRequest,
                message: "\(unknown) is not a parameter of \(path); it takes \(names.joined(separator: ", "))")
        }
    }

    /// The ISO-8601 date in parameter `name`, nil when it is absent.
    static func date(_ name: String, in query: FlatDictionary<Substring, Substring>) throws -> Date? {
        guard let text = query[Substring(name)] else { return nil }
        guard let date = ISO8601.date(from: String(text)) else {
            throw HTTPError(
                .badRequest, message: "\(name)=\(text) is not an ISO-8601 date such as 2026-11-21T10:00:00Z")
        }
        return date
    }
}

/// JSON responses and errors.
enum APIResponse {
    static func json(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    static func encode(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        json(try JSONEncoder.sentinel().encode(value), status: status)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json((try? JSONEncoder.sentinel().encode(APIErrorBody(error: message))) ?? Data(), status: status)
    }

    /// A JSON object from values that are JSON already (stored records and readings are kept as the API publishes
    /// them, so they are sent as they are rather than decoded and encoded again). Keys are given in sorted order,
    /// as the encoder writes every other response.
    static func object(_ fields: [(String, Data)]) -> Response {
        var body = Data("{".utf8)
        for (i, (key, value)) in fields.enumerated() {
            body += Data("\(i == 0 ? "" : ",")\"\(key)\":".utf8) + value
        }
        return json(body + Data("}".utf8))
    }

    /// A JSON array of values that are JSON already.
    static func array(_ values: [Data]) -> Data {
        Data("[".utf8) + Data(values.joined(separator: Data(",".utf8))) + Data("]".utf8)
    }
}

/// Every failure in the API's JSON shape, `{"error": "..."}`, with its status and headers: handlers and middleware
/// throw Hummingbird's `HTTPError`; a path no route serves gets a message that points at the API's description.
struct JSONErrors<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            let message =
                error.status == .notFound && error.body == nil
                ? "no such path: \(request.uri.path) (the API is described at /openapi.json)" : error.body ?? ""
            var response = APIResponse.error(error.status, message)
            response.headers.append(contentsOf: error.headers)
            return response
        }
    }
}

/// Debian's web libraries (`libjs-*`), served as Debian's web packages do from /usr/share/javascript: the dashboard's
/// charts come from `libjs-chart.js` (`/javascript/chart.js/Chart.min.js`), with no CDN and no copy in the project.
enum WebLibrary {
    static let root = URL(fileURLWithPath: "/usr/share/javascript")

    static func file(package: String, name: String) throws -> Response {
        // One folder and one file name, nothing that walks elsewhere.
        let safe = { (part: String) in
            !part.hasPrefix(".") && part.allSatisfy { $0.isLetter || $0.isNumber || "._-".contains($0) }
        }
        let url = root.appendingPathComponent(package).appendingPathComponent(name)
        guard safe(package), safe(name), let data = FileManager.default.contents(atPath: url.path) else {
            throw HTTPError(
                .notFound,
                message: "no \(package)/\(name) in /usr/share/javascript (the charts need Debian's libjs-chart.js)")
        }
        let type =
            name.hasSuffix(".js")
            ? "text/javascript; charset=utf-8" : name.hasSuffix(".css") ? "text/css" : "application/octet-stream"
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "max-age=86400"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Files shipped with the binary: the OpenAPI document and the dashboard page. Installed, they are in
/// `{prefix}/share/sentinel/web`; from a build, in the resource folder SwiftPM puts beside the executable. Not
/// `Bundle.module`: it falls back to the build's absolute path, so an installation would work only while the build
/// is there, and it stops the process when neither is found.
public enum Resource {
    static let folder =
        Installation.shareDirectory?.appendingPathComponent("web")
        ?? Installation.executable.deletingLastPathComponent().appendingPathComponent(
            "Sentinel_SentinelServer.resources")

    public static func url(_ name: String) -> URL { folder.appendingPathComponent(name) }
}
