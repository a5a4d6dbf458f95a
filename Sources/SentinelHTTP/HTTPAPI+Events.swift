import Foundation
import HTTPTypes
import Hummingbird
package import HummingbirdCore
import Logging
import NIOCore
import SentinelConfig
import SentinelCore
import SentinelPrivacy
package import SentinelRuntime
import SentinelStore
import SentinelWire
import ServiceLifecycle

extension HTTPAPI {
    /// The stream's filter from the `sourceId`, `site`, `zone` and `type` query parameters, each value checked
    /// against what this server has (`catalogue`).
    package static func eventFilter(
        _ query: FlatDictionary<Substring, Substring>, catalogue: LiveState.Catalogue
    ) throws -> EventFilter {
        // A filter value that can never match is a mistake to report, not a stream that stays silent.
        func list(_ name: String, of valid: [String]) throws -> Set<String>? {
            guard let text = query[Substring(name)] else { return nil }
            let pieces = text.split(separator: ",", omittingEmptySubsequences: false).map(String.init)
            guard !pieces.contains("") else {
                throw HTTPError(
                    .badRequest,
                    message:
                        "\(name)=\(text) has an empty value: give one or more of \(valid.joined(separator: ", ")), separated by commas"
                )
            }
            let values = Set(pieces)
            guard !valid.isEmpty else {
                throw HTTPError(
                    .badRequest, message: "\(name)=\(text) names nothing here: this server has no \(name)")
            }
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
        let zones = catalogue.zones
        // A zone is written `name` (that zone at every camera) or `source/name` (at one camera).
        let zoneTexts =
            Array(Set(zones.map(\.id.name))).sorted().map { ($0, EventFilter.Zone.named($0)) }
            + zones.map { ($0.id.description, EventFilter.Zone.at($0.id)) }
        let zoneByText = Dictionary(zoneTexts) { first, _ in first }
        // A fleet's sources are `site/source`: `site=` keeps every source of those sites.
        let sites = Set(catalogue.sources.compactMap(SiteSource.site(of:)))
        var sources = try list("sourceId", of: catalogue.sources)
        if let wanted = try list("site", of: sites.sorted()) {
            let ofSites = catalogue.sources.filter { SiteSource.site(of: $0).map(wanted.contains) == true }
            sources = Set(ofSites).intersection(sources ?? Set(ofSites))
        }
        return EventFilter(
            sources: sources,
            zones: try list("zone", of: zoneTexts.map(\.0)).map { Set($0.compactMap { zoneByText[$0] }) },
            types: try list("type", of: LoggedEvent.Kind.all.map(\.rawValue)).map {
                Set($0.compactMap(LoggedEvent.Kind.init))
            })
    }

    func events(_ request: Request, on channel: any Channel) throws -> Response {
        let query = request.uri.queryParameters
        try APIQuery.accept(query, of: "/events")
        let filter = try Self.eventFilter(query, catalogue: live.catalogue)
        let headers: HTTPFields = [
            .contentType: "text/event-stream; charset=utf-8", .cacheControl: "no-cache",
            .accelBuffering: "no",
        ]
        // A HEAD: what a stream would start with, without one.
        guard request.method != .head else { return Response(status: .ok, headers: headers) }
        let resume = request.headers[.lastEventID] ?? query["lastEventId"].map(String.init)
        // Subscribe before reading the store: whatever is committed after the read arrives through the subscription.
        guard
            let subscription = broadcaster.subscribe(
                filter, capacity: settings.clientBufferEvents, capacityBytes: settings.clientBufferBytes,
                limit: settings.maxSubscribers, close: { channel.close(promise: nil) })
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
            // The stream's task runs on its connection's event loop: a write is then made there and then, where
            // from Swift's pool each write would hop to that thread (measured, `sentinel-bench sse` at 1,000
            // subscribers x 50 events/s: 0.72x nchan's deliveries, p99 3.9 s, from the pool).
            try await withTaskExecutorPreference(EventLoopTaskExecutor(channel.eventLoop)) {
                // A client that goes away ends its stream at once, not at the next write.
                try await request.body.consumeWithInboundCloseHandler { _ in
                    try await Self.stream(
                        subscription, of: broadcaster, resume: resume, filter: filter, store: store,
                        settings: settings, logger: logger, to: &writer)
                } onInboundClosed: {
                    subscription.finish()
                }
                try await writer.finish(nil)
            }
        }
        return Response(status: .ok, headers: headers, body: body)
    }

    /// Writes the retry hint, what the client missed (from the store), then live events and heartbeats until the
    /// subscription ends; a client cut off (its queue full, or the slowest when the server's streams reach their
    /// limit) gets a last `stream.cutoff` message saying why.
    ///
    /// What the stream holds is counted against the server's limit: a page read from the store, what it took from its
    /// queue, and the last write until the next one is taken (the connection may still buffer it: a write is taken
    /// only once the connection has room).
    static func stream(
        _ subscription: Broadcaster.Subscription, of broadcaster: Broadcaster, resume: String?, filter: EventFilter,
        store: any EventLog, settings: ServerSettings, logger: Logger, to writer: inout any ResponseBodyWriter
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
            var lastWrite = 0
            func written(_ bytes: Int) {
                broadcaster.release(lastWrite, for: subscription)
                lastWrite = bytes
            }
            // The first bytes (the head and the retry hint) go before anything waits on the store: a client never
            // waits for the store's readers to learn that its stream is open.
            try await writer.write(ByteBuffer(string: ServerSentEvents.retry(milliseconds: settings.retryMilliseconds)))
            logger.debug("SSE stream opened", metadata: ["resume": "\(resume ?? "")"])
            if let resume {
                let (notice, start) = try await resumePoint(resume, store: store)
                if let notice { try await writer.write(ByteBuffer(string: notice)) }
                lastSent = try await replay(
                    after: start, filter: filter, store: store,
                    hold: { broadcaster.hold($0, for: subscription) }, written: written, writer: &writer)
            }
            defer { logger.debug("SSE stream ended", metadata: ["lastEventId": "\(lastSent)"]) }
            // Whatever the client has queued goes in one write, each commit's buffer as the broadcaster made it.
            while let items = await subscription.next() {
                var buffers: [ByteBuffer] = []
                var taken = 0
                for item in items {
                    switch item {
                    case .messages(let messages):
                        taken += messages.text.readableBytes
                        if messages.events[0].id > lastSent {
                            buffers.append(messages.text)
                        } else {
                            // Committed while the store was replayed to this client: only what it has not had.
                            let rest = messages.events.filter { $0.id > lastSent }
                            if !rest.isEmpty {
                                buffers.append(ByteBuffer(string: rest.map(ServerSentEvents.message).joined()))
                            }
                        }
                        lastSent = max(lastSent, messages.events[messages.events.count - 1].id)
                    case .heartbeat:
                        buffers.append(ByteBuffer(string: ServerSentEvents.heartbeat))
                    }
                }
                if !buffers.isEmpty { try await writer.write(contentsOf: buffers) }
                written(taken)
            }
            if let reason = subscription.cutOff {
                logger.warning(
                    "SSE client cut off", metadata: ["lastEventId": "\(lastSent)", "reason": "\(reason)"])
                try await writer.write(
                    ByteBuffer(
                        string: ServerSentEvents.control(
                            StreamNotice.cutoffType, StreamNotice(reason: reason, lastEventId: lastSent))))
            }
        }
    }

    /// Where a resuming client continues, and the `stream.reset` notice when its id is not in the log.
    static func resumePoint(_ requested: String, store: any EventLog) async throws -> (notice: String?, after: Int64) {
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

    /// The most a replay page reads (and at least one event): a resuming client is sent the log a page at a time.
    package static let replayPageBytes = 64 << 10

    /// Sends the logged events after `id` that match `filter`, a page at a time, each page's messages counted with
    /// `hold` from when they are made until the next write is taken; returns the last id sent, early when `hold`
    /// refuses a page (the client is cut off).
    static func replay(
        after id: Int64, filter: EventFilter, store: any EventLog, hold: @escaping @Sendable (Int) -> Bool,
        written: (Int) -> Void, writer: inout any ResponseBodyWriter
    ) async throws -> Int64 {
        /// A page's messages, the last id it read (nil at the end of the log) and the bytes counted for it.
        typealias Page = (text: ByteBuffer, last: Int64?, bytes: Int)
        // The next page is read while this one is written. Its events are let go once their messages are made.
        @Sendable func page(after id: Int64) async throws -> Page? {
            let events = try await store.events(after: id, limit: 1_000, bytes: replayPageBytes)
            var text = ByteBuffer()
            text.reserveCapacity(events.reduce(0) { $0 + $1.payload.count + 256 })
            for event in events where filter.matches(event) { text.writeString(ServerSentEvents.message(for: event)) }
            return hold(text.capacity) ? (text, events.last?.id, text.capacity) : nil
        }
        var sent = id
        guard var current = try await page(after: id) else { return sent }
        while let last = current.last {
            async let next = page(after: last)
            if current.text.readableBytes > 0 { try await writer.write(current.text) }
            written(current.bytes)
            sent = last
            guard let following = try await next else { return sent }
            current = following
        }
        written(current.bytes)
        return sent
    }
}

/// Runs the jobs of the tasks that prefer it on one event loop.
final class EventLoopTaskExecutor: TaskExecutor {
    let eventLoop: any EventLoop
    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let executor = asUnownedTaskExecutor()
        eventLoop.execute { job.runSynchronously(on: executor) }
    }
}
