import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

extension SentinelClient {
    /// What the event stream hands over, in order.
    public enum StreamItem: Sendable, Equatable {
        /// A logged event (visitor or gauge), each once and in the log's order across reconnects.
        case event(EventEnvelope)
        /// The server could not resume after the last id (deleted by retention, or from another log): events may have
        /// been missed, and the notice says from where the stream continues. Reload state from the REST API.
        case reset(StreamNotice)
        /// The server closed this stream because the client read too slowly; it reconnects and resumes, nothing lost.
        case cutoff(StreamNotice)
        /// The stream is open (again), resuming after this id (nil: from now).
        case connected(resumingAfter: Int64?)
        /// The stream broke; the next attempt is in `retryIn`.
        case disconnected(reason: String, retryIn: Duration)
    }

    /// Which events to receive (the server's `source`, `zone`, `type` and, for a fleet, `site` parameters); nil
    /// takes all.
    public struct EventFilter: Sendable {
        public var sources: [String]?
        public var zones: [String]?
        public var types: [String]?
        public var sites: [String]?

        public init(
            sources: [String]? = nil, zones: [String]? = nil, types: [String]? = nil, sites: [String]? = nil
        ) {
            self.sources = sources
            self.zones = zones
            self.types = types
            self.sites = sites
        }

        var query: [(String, String)] {
            [("sourceId", sources), ("zone", zones), ("type", types), ("site", sites)].compactMap { name, values in
                values.map { (name, $0.joined(separator: ",")) }
            }
        }
    }

    /// The event stream (`GET /events`), after `lastEventID` (nil: from now). It reconnects by itself with the
    /// reconnect policy and the server's `retry:` hint, resumes with `Last-Event-ID`, and ends only when the task
    /// reading it is cancelled or the server refuses it for good (a 4xx such as 401, thrown as `Failure.http`).
    /// An app that goes to the background can cancel it and, back in the foreground, start again after the last
    /// `envelope.id` it saw.
    public func events(after lastEventID: Int64? = nil, filter: EventFilter = EventFilter())
        -> AsyncThrowingStream<StreamItem, any Error>
    {
        AsyncThrowingStream { continuation in
            let task = Task {
                do {
                    try await follow(after: lastEventID, filter: filter) { continuation.yield($0) }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error is CancellationError ? nil : error)
                }
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    private func follow(after start: Int64?, filter: EventFilter, yield: (StreamItem) -> Void) async throws {
        var lastID = start
        var hint: Duration?
        var failures = 0
        while true {
            try Task.checkCancellation()
            var reason: String
            var wait: Duration?
            do {
                let headers =
                    lastID.map { ["Last-Event-ID": "\($0)", "Accept": "text/event-stream"] } ?? [
                        "Accept": "text/event-stream"
                    ]
                var parser = EventStreamParser()
                var status = 0
                var errorBody = Data()
                for try await part in transport.send(request("/events", filter.query, headers: headers)) {
                    switch part {
                    case .head(let response):
                        status = response.statusCode
                        let type = response.value(forHTTPHeaderField: "Content-Type")
                        if status == 200 {
                            guard type?.lowercased().hasPrefix("text/event-stream") == true else {
                                throw Failure.notAnEventStream(contentType: type)
                            }
                            failures = 0
                            yield(.connected(resumingAfter: lastID))
                        } else if let seconds = response.value(forHTTPHeaderField: "Retry-After").flatMap(Int.init) {
                            wait = .seconds(seconds)
                        }
                    case .body(let data) where status != 200:
                        errorBody.append(data)
                    case .body(let data):
                        for message in parser.feed(data) {
                            if let retry = message.retry { hint = .milliseconds(retry) }
                            guard let item = try Self.item(message) else { continue }
                            if let id = message.id.flatMap(Int64.init) { lastID = id }
                            yield(item)
                        }
                    }
                }
                if status != 200 {
                    let failure = Self.failure(status: status, body: errorBody)
                    // Busy (503, with the subscriber limit reached), a gateway in between, or being rate limited: try
                    // again. Anything else (401, 400, 404) will not change by trying.
                    guard [429, 500, 502, 503, 504].contains(status) else { throw failure }
                    reason = failure.description
                } else {
                    reason = "the server closed the stream"
                }
            } catch let error as Failure {
                throw error
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                reason = error.localizedDescription
            }
            try Task.checkCancellation()
            failures += 1
            let delay = wait ?? reconnect.delay(failures: failures, hint: hint)
            yield(.disconnected(reason: reason, retryIn: delay))
            try await Task.sleep(for: delay)
        }
    }

    /// The item a message is, or nil for what a client does not act on (heartbeats, the retry hint, event types
    /// newer than this client).
    static func item(_ message: EventStreamParser.Message) throws -> StreamItem? {
        guard !message.data.isEmpty, let type = message.event else { return nil }
        let data = Data(message.data.utf8)
        switch type {
        case StreamNotice.resetType: return .reset(try JSONDecoder.sentinel().decode(StreamNotice.self, from: data))
        case StreamNotice.cutoffType: return .cutoff(try JSONDecoder.sentinel().decode(StreamNotice.self, from: data))
        default:
            guard type == EventEnvelope.gaugeType || VisitorEvent.Kind(rawValue: type) != nil else { return nil }
            return .event(try JSONDecoder.sentinel().decode(EventEnvelope.self, from: data))
        }
    }
}
