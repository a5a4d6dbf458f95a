import Foundation
import SentinelClient
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A transport an app's tests would write: it answers each request with the next scripted response and keeps the
/// requests it was sent. (A lock, not Synchronization's Mutex, which needs macOS 15 where the package supports 14.)
final class ScriptedTransport: SentinelTransport, @unchecked Sendable {
    struct Response: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [Data]
    }

    private let lock = NSLock()
    private var responses: [Response]
    private var sentRequests: [URLRequest] = []

    init(_ responses: [Response]) { self.responses = responses }

    var requests: [URLRequest] { lock.withLock { sentRequests } }

    func send(_ request: URLRequest) -> AsyncThrowingStream<TransportPart, any Error> {
        let next = lock.withLock {
            sentRequests.append(request)
            return responses.isEmpty ? nil : responses.removeFirst()
        }
        return AsyncThrowingStream { continuation in
            guard let next, let url = request.url,
                let head = HTTPURLResponse(
                    url: url, statusCode: next.status, httpVersion: "HTTP/1.1", headerFields: next.headers)
            else {
                continuation.finish(throwing: URLError(.cannotConnectToHost))
                return
            }
            continuation.yield(.head(head))
            for piece in next.body { continuation.yield(.body(piece)) }
            continuation.finish()
        }
    }
}

let start = Date(timeIntervalSince1970: 1_790_000_000)

func visitorEvent(_ type: VisitorEvent.Kind, _ faceId: String, at seconds: Double) -> VisitorEvent {
    VisitorEvent(
        type: type, time: start.addingTimeInterval(seconds),
        visitor: VisitorRecord(
            faceId: faceId, sourceId: "entrance", zone: "counter", state: .active,
            zones: [.init(zone: "counter", dwellSeconds: seconds)], dwellSeconds: seconds, firstSeen: start,
            lastSeen: start.addingTimeInterval(seconds), emotion: .known(.happy), emotionConfidence: 0.8, valence: 0.6),
        stay: type == .zoneEntered ? .init(zone: "counter", enteredAt: start) : nil)
}

func envelope(_ id: Int64, _ event: VisitorEvent) -> EventEnvelope {
    EventEnvelope(
        id: id, sequenceNumber: id, streamId: event.visitor.sourceId, timestamp: event.time, payload: .visitor(event))
}

/// An SSE message as the server writes it.
func message(_ envelope: EventEnvelope) throws -> Data {
    let json = String(decoding: try JSONEncoder.sentinel().encode(envelope), as: UTF8.self)
    return Data("id: \(envelope.id)\nevent: \(envelope.payloadType)\ndata: \(json)\n\n".utf8)
}

let eventStream = ["Content-Type": "text/event-stream"]

@Suite("SentinelClient through its transport")
struct TransportTests {
    @Test("REST calls go through the transport with the token, decode the body, and an error body becomes Failure.http")
    func rest() async throws {
        let page = VisitorPage(visitors: [visitorEvent(.updated, "v-1", at: 3).visitor])
        let transport = ScriptedTransport([
            .init(
                status: 200, headers: ["Content-Type": "application/json"],
                body: [try JSONEncoder.sentinel().encode(page)]),
            .init(status: 401, headers: [:], body: [Data(#"{"error":"a token is required"}"#.utf8)]),
        ])
        let client = SentinelClient(
            url: URL(string: "http://box.local:8080/sentinel/")!, token: "t0k", transport: transport)
        #expect(try await client.presentVisitors() == page)
        await #expect(throws: SentinelClient.Failure.http(status: 401, message: "a token is required")) {
            try await client.zones()
        }
        let sent = transport.requests
        #expect(
            sent.map { $0.url?.absoluteString } == [
                "http://box.local:8080/sentinel/api/visitors?limit=1000", "http://box.local:8080/sentinel/api/zones",
            ])
        #expect(sent.allSatisfy { $0.value(forHTTPHeaderField: "Authorization") == "Bearer t0k" })
    }

    @Test(
        "the event stream: events split across pieces are decoded, a dropped stream reconnects with Last-Event-ID and resumes after the last id, a heartbeat is no item, and a 401 ends it"
    )
    func stream() async throws {
        let first = try message(envelope(1, visitorEvent(.entered, "v-1", at: 0)))
        let second = try message(envelope(2, visitorEvent(.zoneEntered, "v-1", at: 1)))
        let reading = GaugeReading(
            time: start.addingTimeInterval(2), overall: .value(.init(score: 70), visitors: 5), sources: [:], zones: [:],
            stale: false, windowSeconds: 60)
        let gauge = EventEnvelope(
            id: 3, sequenceNumber: 1, streamId: "sentiment", timestamp: reading.time, payload: .gauge(reading))
        let transport = ScriptedTransport([
            // A heartbeat between two events, the second cut in two mid-JSON.
            .init(
                status: 200, headers: eventStream,
                body: [first, Data(": heartbeat\n\n".utf8), second.prefix(40), second.dropFirst(40)]),
            .init(status: 200, headers: eventStream, body: [Data("retry: 5\n\n".utf8), try message(gauge)]),
            .init(status: 401, headers: [:], body: [Data(#"{"error":"the token was revoked"}"#.utf8)]),
        ])
        let client = SentinelClient(
            url: URL(string: "http://box.local:8080")!, token: "t0k",
            reconnect: .init(initialDelay: .milliseconds(10), maxDelay: .milliseconds(20), jitter: 0),
            transport: transport)
        var items: [SentinelClient.StreamItem] = []
        await #expect(throws: SentinelClient.Failure.http(status: 401, message: "the token was revoked")) {
            for try await item in client.events(filter: .init(zones: ["counter"])) { items.append(item) }
        }
        let events = items.compactMap { if case .event(let envelope) = $0 { envelope } else { nil } }
        try #require(events.map(\.id) == [1, 2, 3])
        #expect(events[2].payload == .gauge(reading))
        #expect(
            items.filter { if case .connected = $0 { true } else { false } } == [
                .connected(resumingAfter: nil), .connected(resumingAfter: 2),
            ])
        let sent = transport.requests
        #expect(sent.map { $0.value(forHTTPHeaderField: "Last-Event-ID") } == [nil, "2", "3"])
        #expect(sent.allSatisfy { $0.url?.absoluteString == "http://box.local:8080/events?zone=counter" })
        #expect(sent.allSatisfy { $0.value(forHTTPHeaderField: "Accept") == "text/event-stream" })
    }

    @Test("a 200 that is not an event stream (a proxy's page) is an error, not an empty stream")
    func notAnEventStream() async throws {
        let transport = ScriptedTransport([
            .init(status: 200, headers: ["Content-Type": "text/html"], body: [Data("<html>".utf8)])
        ])
        let client = SentinelClient(url: URL(string: "http://box.local:8080")!, transport: transport)
        await #expect(throws: SentinelClient.Failure.notAnEventStream(contentType: "text/html")) {
            for try await _ in client.events() {}
        }
    }

    @Test("an envelope encodes to what it decodes from: visitor events and gauge readings, with and without a site")
    func envelopeRoundTrip() throws {
        let reading = GaugeReading(
            time: start, overall: .suppressed, sources: ["entrance": .value(.init(score: 12), visitors: 4)],
            zones: ["entrance": ["counter": .suppressed]], stale: true, windowSeconds: 300)
        for original in [
            envelope(7, visitorEvent(.zoneEntered, "v-9", at: 4.25)),
            EventEnvelope(
                id: 8, sequenceNumber: 2, streamId: "lab/sentiment", timestamp: start, site: "lab",
                payload: .gauge(reading)),
        ] {
            let data = try JSONEncoder.sentinel().encode(original)
            #expect(try JSONDecoder.sentinel().decode(EventEnvelope.self, from: data) == original)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(
                Set(object.keys).isSubset(of: [
                    "id", "sequenceNumber", "streamId", "payloadType", "timestamp", "site", "payload",
                ]))
            #expect(object["payloadType"] as? String == original.payloadType)
        }
    }
}
