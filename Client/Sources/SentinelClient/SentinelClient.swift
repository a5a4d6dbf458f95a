import Foundation
@_exported import SentinelWire

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A client of one Sentinel box (or fleet): its REST API and its event stream, for an app or a service.
///
/// ```swift
/// let sentinel = SentinelClient(url: URL(string: "http://showroom.local:8080")!, token: "…")
/// for try await item in sentinel.events() {
///     if case .event(let envelope) = item, case .visitor(let event) = envelope.payload { … }
/// }
/// ```
///
/// Every request goes through one transport, by default one URLSession (FoundationNetworking on Linux), so it builds
/// for iOS, macOS and Linux alike.
public struct SentinelClient: Sendable {
    public let url: URL
    public let token: String?
    public let reconnect: ReconnectPolicy
    public let transport: any SentinelTransport

    /// How the event stream waits before connecting again: the server's `retry:` hint (or `initialDelay` before
    /// one arrives) after a stream that was open, then doubling on each failed attempt up to `maxDelay`, with up to
    /// `jitter` of it added at random so that a box's many clients do not come back at once after a restart.
    public struct ReconnectPolicy: Sendable {
        public var initialDelay: Duration
        public var maxDelay: Duration
        public var jitter: Double

        public init(initialDelay: Duration = .seconds(1), maxDelay: Duration = .seconds(30), jitter: Double = 0.2) {
            self.initialDelay = initialDelay
            self.maxDelay = maxDelay
            self.jitter = jitter
        }

        /// The wait before attempt `failures` + 1 (`failures` in a row since the last open stream).
        func delay(failures: Int, hint: Duration?) -> Duration {
            let base = hint ?? initialDelay
            let grown = base * Double(1 << min(max(failures - 1, 0), 16))
            let capped = min(grown, max(maxDelay, base))
            return capped + capped * Double.random(in: 0...max(jitter, 0))
        }
    }

    /// A client of the box at `url`, with the token it was given (sent as `Authorization: Bearer`), through
    /// `transport` (by default a URLSession of its own; `SessionTransport(configuration:)` takes the app's settings).
    public init(
        url: URL, token: String? = nil, reconnect: ReconnectPolicy = ReconnectPolicy(),
        transport: any SentinelTransport = SessionTransport()
    ) {
        self.url = url
        self.token = token
        self.reconnect = reconnect
        self.transport = transport
    }

    /// What the API answered instead of the data asked for.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// An HTTP error, with the API's `{"error": ...}` message (401: no or a wrong token; 400: a bad parameter).
        case http(status: Int, message: String)
        /// `/events` answered 200 but not with text/event-stream (a proxy's page, say).
        case notAnEventStream(contentType: String?)

        public var description: String {
            switch self {
            case .http(let status, let message): "HTTP \(status): \(message)"
            case .notAnEventStream(let type): "not an event stream: Content-Type \(type ?? "missing")"
            }
        }
    }

    // MARK: REST

    /// Who is here now.
    /// The visitors present now, in order of arrival, a page (at most `limit`, 1 to 1000) at a time: pass the page's
    /// `nextCursor` as `cursor` for the next.
    public func presentVisitors(limit: Int = 1000, cursor: String? = nil) async throws -> VisitorPage {
        try await get("/api/visitors", [("limit", "\(limit)")] + (cursor.map { [("cursor", $0)] } ?? []))
    }

    /// The visits that started in `from..<to`, a page (at most `limit`, 1 to 1000) at a time: pass the page's
    /// `nextCursor` as `cursor` for the next.
    public func visits(from: Date, to: Date, limit: Int = 100, cursor: String? = nil) async throws -> VisitorPage {
        var query = [("from", ISO8601.string(from: from)), ("to", ISO8601.string(from: to)), ("limit", "\(limit)")]
        if let cursor { query.append(("cursor", cursor)) }
        return try await get("/api/visitors", query)
    }

    /// One visit with its zone stays.
    public func visitor(_ faceId: String) async throws -> VisitorDetail {
        try await get("/api/visitors/" + (faceId.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? ""))
    }

    /// The current mood and its readings over the last `minutes`.
    public func sentiment(minutes: Double = 60) async throws -> SentimentHistory {
        try await get("/api/sentiment", [("minutes", "\(minutes)")])
    }

    public func zones() async throws -> ZoneList { try await get("/api/zones") }

    /// Visits, visitors per zone, dwell and mood over `from..<to` in buckets, k-suppressed (`source` and `zone`
    /// narrow it; a zone is a name, at every camera, or `source/name`).
    public func report(
        from: Date, to: Date, bucket: Report.Bucket = .hour, source: String? = nil, zone: String? = nil
    ) async throws -> Report {
        var query = [
            ("from", ISO8601.string(from: from)), ("to", ISO8601.string(from: to)), ("bucket", bucket.rawValue),
        ]
        if let source { query.append(("sourceId", source)) }
        if let zone { query.append(("zone", zone)) }
        return try await get("/api/reports", query)
    }

    /// A running camera's latest frame as JPEG, every face masked: for the visitor token, from a pipeline that
    /// allows stills (`privacy.review.stills`); otherwise a `Failure` that says which of the two is missing.
    public func still(source: String) async throws -> Still {
        var head: HTTPURLResponse?
        var data = Data()
        for try await part in transport.send(request("/api/still", [("sourceId", source)])) {
            switch part {
            case .head(let response): head = response
            case .body(let piece): data.append(piece)
            }
        }
        guard let head, head.statusCode == 200 else { throw Self.failure(status: head?.statusCode ?? 0, body: data) }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return Still(
            jpeg: data, taken: head.value(forHTTPHeaderField: "Last-Modified").flatMap(formatter.date(from:)),
            regionsMasked: head.value(forHTTPHeaderField: "X-Faces-Masked").flatMap { Int($0) } ?? 0)
    }

    /// A camera's still: the JPEG, when its frame was taken, and how many regions were masked (a face is masked where
    /// it is detected and where the tracker expects it, so one face may be two regions).
    public struct Still: Sendable {
        public var jpeg: Data
        public var taken: Date?
        public var regionsMasked: Int
    }

    /// The service's state; answered also when it is degraded (HTTP 503), which `status` then says.
    public func health() async throws -> ServiceHealth { try await get("/healthz", accepting: [200, 503]) }

    func get<Body: Decodable>(_ path: String, _ query: [(String, String)] = [], accepting: Set<Int> = [200])
        async throws -> Body
    {
        var status = 0
        var data = Data()
        for try await part in transport.send(request(path, query)) {
            switch part {
            case .head(let response): status = response.statusCode
            case .body(let piece): data.append(piece)
            }
        }
        guard accepting.contains(status) else { throw Self.failure(status: status, body: data) }
        return try JSONDecoder.sentinel().decode(Body.self, from: data)
    }

    func request(_ path: String, _ query: [(String, String)], headers: [String: String] = [:]) -> URLRequest {
        var components = URLComponents(url: url, resolvingAgainstBaseURL: false)!
        components.path =
            components.path.hasSuffix("/") ? String(components.path.dropLast()) + path : components.path + path
        if !query.isEmpty { components.queryItems = query.map { URLQueryItem(name: $0.0, value: $0.1) } }
        var request = URLRequest(url: components.url!)
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    static func failure(status: Int, body: Data) -> Failure {
        let message =
            (try? JSONDecoder().decode(APIErrorBody.self, from: body).error)
            ?? String(decoding: body.prefix(500), as: UTF8.self)
        return .http(status: status, message: message)
    }
}
