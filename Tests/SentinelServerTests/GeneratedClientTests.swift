import Foundation
import NIOCore
import OpenAPIRuntime
import OpenAPIURLSession
import SentinelAssembly
import SentinelLoopback
import SentinelRuntime
import SentinelStore
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// What an app team gets from the box's openapi.json: `Client` and the `Components` types are generated from it at
/// build time by swift-openapi-generator's plugin (openapi.json in this folder is a link to the served document),
/// so a document the generator cannot turn into compiling code fails the build, and one the server does not follow
/// fails here. The generated decoders refuse unknown fields where the document says `additionalProperties: false`.
@Suite("The client swift-openapi-generator makes from openapi.json, against the server", .timeLimit(.minutes(2)))
struct GeneratedClientTests {
    @Test(
        "it reads visitors, a visitor, zones, sentiment and health, and the event stream decodes into its Envelope cases"
    )
    func readsTheServer() async throws {
        let server = try await TestServer()
        // Three visitors in the display, ten seconds ago: inside the gauge's window.
        try server.publish(6, startingAt: 3590)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 6 })
        // The server writes times with milliseconds (RFC 3339 allows them; the runtime's default transcoder does not).
        let dates = Configuration(dateTranscoder: .iso8601WithFractionalSeconds)
        let client = Client(
            serverURL: URL(string: "http://127.0.0.1:\(server.port)")!, configuration: dates,
            transport: URLSessionTransport())

        let visitors = try await client.listVisitors().ok.body.json.visitors
        #expect(Set(visitors.map(\.faceId)).count == 3 && visitors.allSatisfy { $0.zone == "display" })
        let faceId = try #require(visitors.first?.faceId)
        let detail = try await client.getVisitor(path: .init(faceId: faceId)).ok.body.json
        #expect(detail.visitor.faceId == faceId && detail.visitor.emotion == .happy)
        let zones = try await client.listZones().ok.body.json.zones
        #expect(zones.map(\.name).sorted() == ["counter", "display"])
        // A figure or a suppressed one, told apart by type: three in the display, nobody (too few) elsewhere.
        for zone in zones {
            switch zone.visitors {
            case .CountedInt(let count): #expect(zone.name == "display" && count.value == 3, "\(zone)")
            case .Suppressed: #expect(zone.name != "display", "\(zone)")
            }
        }
        #expect(try await client.getHealth().ok.body.json.status == .ok)

        // The stream: read off the socket (URLSession does not stream on Linux), then decoded by the runtime's SSE
        // decoder into the generated envelope, as a streaming transport hands it over.
        var bytes: [UInt8] = []
        try await LoopbackClient.get(port: server.port, path: "/events?lastEventId=0") { chunk in
            bytes += chunk.readableBytesView
            // Until the sixth event has arrived whole.
            let text = String(decoding: bytes, as: UTF8.self)
            return text.range(of: "\nid: 6\n").map { !text[$0.upperBound...].contains("\n\n") } ?? true
        }
        let whole = String(decoding: bytes, as: UTF8.self)
        let end = try #require(whole.range(of: "\n\n", options: .backwards)).upperBound
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            try dates.dateTranscoder.decode(try decoder.singleValueContainer().decode(String.self))
        }
        var envelopes: [Components.Schemas.Envelope] = []
        for try await event in HTTPBody(String(whole[..<end])).asDecodedServerSentEventsWithJSONData(
            of: Components.Schemas.Envelope.self, decoder: decoder)
        {
            if let data = event.data { envelopes.append(data) }
        }
        let entered = envelopes.compactMap { if case .visitor_entered(let e) = $0 { e } else { nil } }
        let updated = envelopes.compactMap { if case .visitor_updated(let e) = $0 { e } else { nil } }
        #expect(entered.count == 3 && updated.count == 3, "\(envelopes)")
        #expect(entered.map(\.id) == [1, 2, 3] && entered.allSatisfy { $0.streamId == "showroom" })
        #expect(Set(entered.map(\.payload.visitor.faceId)) == Set(visitors.map(\.faceId)))

        // The mood, once the gauge has ticked: a level with its visitor count.
        server.service.hub.tick(time: Date())
        var overall: Components.Schemas.AggregateLevel?
        #expect(
            try await server.wait {
                overall = try await client.getSentiment().ok.body.json.current?.overall
                return overall != nil
            })
        guard case .CountedLevel(let level) = overall else {
            Issue.record("the mood of three visitors is not a figure: \(String(describing: overall))")
            return
        }
        #expect(level.visitors == 3 && level.value.label == .hot)
        try await server.stop()
    }
}
