import Foundation
import SentinelAssembly
import SentinelClient
import SentinelCore
import SentinelLoopback
import SentinelRuntime
import SentinelStore
import SentinelTestSupport
import Testing

/// The README's vocabulary, held on every surface at once: what one running service writes to REST, SSE, MQTT, CSV
/// and `/metrics`, and what its OpenAPI document and the events' JSON Schema declare.
@Suite("One vocabulary on every surface", .serialized, .timeLimit(.minutes(2)))
struct VocabularyTests {
    /// Every (key, value) in a JSON document, at any depth, with the path that leads to it.
    static func fields(_ json: Any, path: String = "") -> [(path: String, key: String, value: Any)] {
        switch json {
        case let object as [String: Any]:
            object.flatMap { key, value in [(path + "/" + key, key, value)] + fields(value, path: path + "/" + key) }
        case let array as [Any]: array.enumerated().flatMap { fields($1, path: "\(path)/\($0)") }
        default: []
        }
    }

    @Test(
        "a camera is sourceId everywhere (bodies, CSV, parameters, metric labels, OpenAPI, schema); ids are integers; durations are whole milliseconds; not measured is absent, never null or unknown; one set of dwell bins in reports, CSV and metrics"
    )
    func oneVocabulary() async throws {
        let broker = try await MQTTBroker()
        defer { broker.stop() }
        let subscriber = try Subscriber(broker)
        let server = try await TestServer(
            extra: """
                server: { \(try TestServer.tokenSettings()) }
                outputs:
                  mqtt: { url: "\(broker.url)", site: lab }
                """)
        let token = [("Authorization", "Bearer \(TestServer.tokens.visitors)")]
        // Visitors in an emotion zone and in one where emotion is not measured, with durations that are not whole
        // milliseconds, a zone stay that closes and a visit that ends.
        try server.publish(6, visitors: 3)
        let start = server.origin.addingTimeInterval(10)
        let staff = VisitorRecord(
            faceId: "showroom#1#0", sourceId: "showroom", zone: "counter", state: .active,
            zones: [.init(zone: "counter", dwellSeconds: 4.1234567)], dwellSeconds: 4.1234567, firstSeen: start,
            lastSeen: start.addingTimeInterval(4.1234567))
        try server.submit(VisitorEvent(type: .entered, time: start, visitor: staff))
        try server.submit(
            VisitorEvent(
                type: .zoneExited, time: start.addingTimeInterval(4.1234567), visitor: staff,
                stay: .init(
                    zone: "counter", enteredAt: start, exitedAt: start.addingTimeInterval(4.1234567),
                    dwellSeconds: 4.1234567)))
        var gone = staff
        gone.state = .exited
        try server.submit(
            VisitorEvent(type: .exited, time: start.addingTimeInterval(4.1234567), visitor: gone, reason: .lost))
        // The gauge's reading, as a tick of the clock makes it.
        server.service.hub.tick(time: start.addingTimeInterval(5))
        #expect(try await server.wait { try await server.service.store.logBounds().last >= 10 })
        let last = try await server.service.store.logBounds().last

        // What each surface says.
        var documents: [(surface: String, json: Any)] = []
        for path in [
            "/api/visitors", "/api/visitors?from=\(ISO8601.string(from: server.origin))", "/api/zones",
            "/api/sentiment?minutes=120", "/healthz",
            "/api/reports?bucket=hour&from=\(ISO8601.string(from: server.origin.addingTimeInterval(-3600)))",
        ] {
            let (head, body) = try await server.get(path, headers: token)
            #expect(head.status == 200, "\(path): \(String(decoding: body, as: UTF8.self))")
            documents.append((path, try JSONSerialization.jsonObject(with: body)))
        }
        let pages = try #require(documents[1].json as? [String: Any])["visitors"] as? [[String: Any]]
        let visit = try #require(pages?.first?["faceId"] as? String)
        let (_, detail) = try await server.get("/api/visitors/\(visit)", headers: token)
        documents.append(("/api/visitors/{faceId}", try JSONSerialization.jsonObject(with: detail)))
        let messages = try await server.stream("/events?lastEventId=0", headers: token) { $0.ids.last == last }
            .filter { $0.event != nil }
        #expect(messages.allSatisfy { $0.id.map { Int64($0) != nil } ?? false }, "SSE id: lines are integers")
        documents += try messages.map {
            ("SSE \($0.event ?? "")", try JSONSerialization.jsonObject(with: Data($0.data.utf8)))
        }
        #expect(try await server.wait(seconds: 30) { Set(subscriber.events.map(\.id)).isSuperset(of: Set(1...last)) })
        // Every MQTT message but availability (`online` / `offline`, plain text) is JSON.
        let mqtt = subscriber.payloads.filter { $0 != "online" && $0 != "offline" }
        documents += try mqtt.map { ("MQTT", try JSONSerialization.jsonObject(with: Data($0.utf8))) }
        #expect(documents.contains { $0.surface.hasPrefix("SSE sentiment.gauge") }, "a gauge reading among them")

        let published = documents.flatMap { document in Self.fields(document.json).map { (document.surface, $0) } }
        // A camera is sourceId: no other key names one.
        let cameraWords: Set<String> = ["source", "camera", "cameraId", "sourceName", "stream"]
        let otherNames = published.filter { cameraWords.contains($0.1.key) }.map { "\($0.0) \($0.1.path)" }
        #expect(otherNames.isEmpty, "\(otherNames)")
        let cameras = published.filter { $0.1.key == "sourceId" }
        #expect(Set(cameras.map(\.0)).isSuperset(of: ["/api/visitors", "/api/zones", "SSE visitor.entered", "MQTT"]))
        #expect(cameras.allSatisfy { $0.1.value as? String == "showroom" })
        // Ids are integers.
        let ids = published.filter { ["id", "sequenceNumber", "resumeAfter", "lastEventId"].contains($0.1.key) }
        #expect(
            !ids.isEmpty
                && ids.allSatisfy {
                    ($0.1.value as? NSNumber).map { Double(truncating: $0) == Double($0.int64Value) } ?? false
                })
        // Durations are whole milliseconds.
        let durations = published.filter { $0.1.key.hasSuffix("Seconds") }.compactMap { field in
            (field.1.value as? NSNumber).map { (field.0 + " " + field.1.path, $0.doubleValue) }
        }
        #expect(durations.contains { $0.1 == 4.123 }, "the odd duration, rounded: \(durations.prefix(20))")
        let unrounded = durations.filter { abs($0.1 * 1000 - ($0.1 * 1000).rounded()) > 1e-6 }
        #expect(unrounded.isEmpty, "\(unrounded)")
        // Not measured is absent: no null, no "unknown".
        let empty = published.filter { $0.1.value is NSNull || $0.1.value as? String == "unknown" }
        #expect(empty.isEmpty, "\(empty.map { "\($0.0) \($0.1.path)" })")
        let emotionFields = published.filter {
            ["emotion", "emotionConfidence", "valence"].contains($0.1.key) && $0.1.path.contains("visitor")
        }
        #expect(!emotionFields.isEmpty, "display visitors carry their emotion")

        // CSV: the same names and bins.
        let report = try #require(documents[5].json as? [String: Any])
        let edges = try #require(report["dwellBinEdgesSeconds"] as? [Double])
        let (_, csvBody) = try await server.get(
            "/api/reports?bucket=hour&format=csv&from=\(ISO8601.string(from: server.origin.addingTimeInterval(-3600)))",
            headers: token)
        let header =
            String(decoding: csvBody, as: UTF8.self).split(separator: "\r\n").first.map {
                $0.split(separator: ",").map(String.init)
            } ?? []
        #expect(header.contains("sourceId") && !header.contains("source"))
        let bins = zip([0] + edges, edges.map(Optional.some) + [nil]).map { low, high in
            "dwell_\(Int(low))" + (high.map { "-\(Int($0))s" } ?? "s+")
        }
        #expect(header.filter { $0.hasPrefix("dwell_") } == bins, "\(header)")

        // /metrics: the camera label, and the dwell histogram's buckets are the reports' edges.
        let (_, metricsBody) = try await server.get("/metrics", headers: token)
        let metrics = String(decoding: metricsBody, as: UTF8.self)
        #expect(
            metrics.contains("{source_id=\"showroom\"") && !metrics.contains("{source=")
                && !metrics.contains(",source=")
        )
        let buckets = Set(
            metrics.split(separator: "\n").filter { $0.hasPrefix("sentinel_zone_dwell_seconds_bucket{") }.compactMap {
                line -> Double? in
                guard let le = line.range(of: "le=\"") else { return nil }
                return Double(line[le.upperBound...].prefix { $0 != "\"" })
            })
        #expect(buckets.filter(\.isFinite) == Set(edges), "\(buckets)")

        // The documents that declare the surfaces: the same names.
        let (_, openAPIBody) = try await server.get("/openapi.json", headers: token)
        let openAPI = try JSONSerialization.jsonObject(with: openAPIBody)
        let declared = Self.fields(openAPI)
        let parameters = declared.filter { $0.key == "name" && $0.path.contains("/parameters/") }.compactMap {
            $0.value as? String
        }
        #expect(parameters.contains("sourceId") && parameters.allSatisfy { !cameraWords.contains($0) }, "\(parameters)")
        let properties = declared.filter { $0.path.hasSuffix("/properties/" + $0.key) }.map(\.key)
        #expect(properties.contains("sourceId") && properties.allSatisfy { !cameraWords.contains($0) })
        let idTypes = declared.filter {
            ["id", "sequenceNumber", "resumeAfter", "lastEventId"].contains($0.key) && $0.path.contains("/properties/")
        }
        .compactMap { ($0.value as? [String: Any])?["type"] as? String }
        #expect(!idTypes.isEmpty && idTypes.allSatisfy { $0 == "integer" }, "\(idTypes)")
        let schema = try JSONSerialization.jsonObject(
            with: Data(contentsOf: Fixtures.root.appendingPathComponent("Schemas/visitor-events.v1.json")))
        let schemaProperties = Self.fields(schema).filter { $0.path.hasSuffix("/properties/" + $0.key) }.map(\.key)
        #expect(schemaProperties.contains("sourceId") && schemaProperties.allSatisfy { !cameraWords.contains($0) })
        try await server.stop()
    }
}
