import Foundation
import GRDB
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelLoopback
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelTestSupport
import Testing

@Suite("SSE stream", .timeLimit(.minutes(5)))
struct StreamTests {
    @Test("a client that disconnects mid-stream and resumes with Last-Event-ID gets every event once, in order")
    func resume() async throws {
        let server = try await TestServer()
        try server.publish(40)
        let first = try await server.stream(headers: [("Last-Event-ID", "0")]) { $0.ids.count >= 15 }
        let seen = first.ids.prefix(15)
        #expect(first.first?.retry == 3000)
        // While it is away, more happens.
        try server.publish(40, startingAt: 10)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 80 })
        let rest = try await server.stream(headers: [("Last-Event-ID", "\(seen.last!)")]) { $0.ids.last == 80 }
        let all = Array(seen) + rest.ids
        #expect(all == Array(1...80), "\(all)")
        // The same through the query parameter, for clients that cannot set headers; envelopes decode as documented.
        let viaQuery = try await server.stream("/events?lastEventId=70") { $0.ids.last == 80 }
        #expect(viaQuery.ids == Array(71...80))
        let envelope = try JSONDecoder.sentinel().decode(Envelope.self, from: Data(viaQuery.last!.data.utf8))
        #expect(envelope.id == 80 && envelope.streamId == "showroom" && envelope.payloadType == viaQuery.last!.event)
        #expect(envelope.sequenceNumber == 80)
        try await server.stop()
    }

    struct Envelope: Decodable {
        var id: Int64
        var sequenceNumber: Int64
        var streamId: String
        var payloadType: String
        var timestamp: Date
        var payload: VisitorEvent
    }

    @Test("an unknown or expired id is announced with stream.reset before the stream goes on")
    func reset() async throws {
        let server = try await TestServer()
        try server.publish(10)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 10 })
        let unknown = try await server.stream(headers: [("Last-Event-ID", "999")]) {
            $0.contains { $0.event == "stream.reset" }
        }
        #expect(unknown.last?.event == "stream.reset" && unknown.last!.data.contains("\"reason\":\"unknown\""))
        // Retention deletes the first events; a client that last saw one of them is told, then gets what is kept.
        let cutoff = server.origin.addingTimeInterval(4.5)
        _ = try await server.service.store.deleteRecords(olderThan: cutoff)
        let expired = try await server.stream(headers: [("Last-Event-ID", "2")]) { $0.ids.last == 10 }
        #expect(expired.first { $0.event != nil }?.event == "stream.reset")
        #expect(expired.first { $0.event == "stream.reset" }!.data.contains("\"reason\":\"expired\""))
        #expect(expired.ids == Array(6...10))
        try await server.stop()
    }

    @Test("filters by source, zone and type")
    func filters() async throws {
        let server = try await TestServer()
        try server.publish(6, zone: "display")
        try server.publish(6, zone: "counter", startingAt: 10)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 12 })
        let counter = try await server.stream("/events?lastEventId=0&zone=counter&type=visitor.updated") {
            $0.ids.last == 12
        }
        #expect(counter.ids == [10, 11, 12])
        try await server.stop()
    }

    @Test("an idle stream carries a comment heartbeat at the configured interval")
    func heartbeat() async throws {
        let server = try await TestServer(extra: "server: { heartbeatSeconds: 1 }")
        let start = ContinuousClock.now
        let messages = try await server.stream { $0.contains { $0.comment == "heartbeat" } }
        #expect(messages.first?.retry == 3000 && messages.last?.comment == "heartbeat")
        #expect(ContinuousClock.now - start >= .milliseconds(900))
        try await server.stop()
    }

    /// 6,000 events of about 2 KB, at up to 2,000 a second: far more than socket buffers hold. A client that stops
    /// reading fills its queue of 256 and is cut off; once it reads again it gets the last write and the cut-off
    /// message (a client that still does not read 10 s after the cut is closed instead). A client that reads as they
    /// come misses none.
    @Test("a client that stops reading is cut off with a final event while a fast one receives everything")
    func slowClient() async throws {
        let server = try await TestServer(extra: "server: { clientBufferEvents: 256 }")
        let total = 6000
        // Deadlines wide enough for a loaded machine (the live-camera tests may run beside it): this is about loss.
        // Stop conditions look at the last message only: a reader that re-parsed every id per chunk was itself too
        // slow to keep up once the server got faster.
        async let fast = server.stream(timeout: .seconds(200)) { $0.last?.id == "\(total)" }
        let port = server.port
        let slow = Task { () async throws -> [EventStreamParser.Message] in
            var messages: [EventStreamParser.Message] = []
            var parser = EventStreamParser()
            var paused = false
            try await LoopbackClient.get(port: port, path: "/events", timeout: .seconds(200)) { chunk in
                messages += parser.feed(chunk.readableBytesView)
                if !paused {
                    paused = true
                    // Not another byte until the server has cut a client off for being slow.
                    _ = try await server.wait(seconds: 180) {
                        String(decoding: try await server.get("/metrics").1, as: UTF8.self).split(separator: "\n")
                            .contains {
                                $0.hasPrefix("sentinel_events_dropped_total{reason=\"slow_client\"}")
                                    && Double($0.split(separator: " ").last ?? "") ?? 0 > 0
                            }
                    }
                }
                return messages.last?.event != "stream.cutoff" && messages.last?.id != "\(total)"
            }
            return messages
        }
        #expect(try await server.wait { server.service.broadcaster.subscriberCount == 2 })
        for burst in 0..<(total / 20) {
            try server.publish(20, startingAt: Double(burst * 20), padding: 2000)
            try await Task.sleep(for: .milliseconds(10))
        }
        let fastMessages = try await fast
        let fastIDs = fastMessages.ids
        #expect(
            fastIDs == Array(1...Int64(total)), "\(fastIDs.count) events, then \(fastMessages.suffix(1).map(\.data))")
        let slowMessages = try await slow.value
        #expect(slowMessages.last?.event == "stream.cutoff", "\(slowMessages.suffix(2))")
        #expect(slowMessages.ids.count < total)
        #expect(try await server.wait { server.service.broadcaster.subscriberCount == 0 })
        try await server.stop()
    }

}

@Suite("Query parameters")
struct QueryParameterTests {
    @Test("every endpoint's query parameters are those the OpenAPI document lists for it, no more and no fewer")
    func documented() throws {
        let document = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: Fixtures.root.appendingPathComponent("Sources/SentinelHTTP/openapi.json")))
                as? [String: Any])
        let paths = try #require(document["paths"] as? [String: [String: Any]])
        var documented: [String: Set<String>] = [:]
        for (path, item) in paths {
            let parameters = (item["get"] as? [String: Any])?["parameters"] as? [[String: Any]] ?? []
            let names = parameters.filter { $0["in"] as? String == "query" }.compactMap { $0["name"] as? String }
            if !names.isEmpty { documented[path] = Set(names) }
        }
        #expect(documented == APIQuery.parameters.mapValues(Set.init))
    }
}

@Suite("SSE wire format")
struct WireFormatTests {
    @Test("a message's data line is one line of JSON whose strings read back exactly, whatever they hold")
    func escaping() throws {
        let awkward = "a\"b\\c\nd\re\tf\u{1}g\u{1f}h é ✓ 🙂"
        let event = LoggedEvent(
            id: 7, sequenceNumber: 3, streamId: awkward, type: .gauge, time: Date(timeIntervalSince1970: 1.5),
            zone: nil, payload: Data(#"{"k":1}"#.utf8))
        let message = ServerSentEvents.message(for: event)
        let data = try #require(message.split(separator: "\n").first { $0.hasPrefix("data: ") }?.dropFirst(6))
        let object = try #require(try JSONSerialization.jsonObject(with: Data(data.utf8)) as? [String: Any])
        #expect(object["streamId"] as? String == awkward)
        #expect(object["payloadType"] as? String == "sentiment.gauge")
        #expect(object["id"] as? Int == 7 && object["sequenceNumber"] as? Int == 3)
        #expect((object["payload"] as? [String: Int]) == ["k": 1])
    }
}

@Suite("REST API", .timeLimit(.minutes(2)))
struct APITests {
    @Test("a filter naming nothing, an unknown parameter or an unknown path is an error that says so, in JSON")
    func unknownValuesAreErrors() async throws {
        let server = try await TestServer()
        let cases: [(path: String, status: Int, says: String)] = [
            ("/events?zone=nope", 400, "zone=nope is not one of counter, display, showroom/display, showroom/counter"),
            ("/events?type=bogus", 400, "type=bogus is not one of visitor.entered"),
            ("/events?sourceId=cam9", 400, "sourceId=cam9 is not one of showroom"),
            ("/events?source=showroom", 400, "source is not a parameter of /events; it takes sourceId"),
            (
                "/api/visitors?zone=nope", 400,
                "zone is not a parameter of /api/visitors; it takes from, to, limit, cursor"
            ),
            ("/api/visitors?state=bogus", 400, "state is not a parameter"),
            ("/nope", 404, "no such path: /nope"),
        ]
        for request in cases {
            let (head, body) = try await server.get(request.path)
            let error = try? JSONDecoder().decode([String: String].self, from: body)
            #expect(head.status == request.status, "\(request.path): \(head.status)")
            #expect(
                error?["error"]?.contains(request.says) == true,
                "\(request.path): \(String(decoding: body, as: UTF8.self))")
        }
        try await server.stop()
    }

    @Test("the dashboard may be framed by a page of its own origin only: frame-ancestors 'self' and X-Frame-Options")
    func framing() async throws {
        let server = try await TestServer()
        let (head, page) = try await LoopbackClient.fetch(port: server.port, path: "/")
        #expect(head.status == 200 && String(decoding: page, as: UTF8.self).contains("<html"))
        #expect(head.header("Content-Security-Policy") == "frame-ancestors 'self'")
        #expect(head.header("X-Frame-Options") == "SAMEORIGIN")
        try await server.stop()
    }

    @Test("HEAD answers as GET would, without a body (a 400 and a 404 too), and opens no SSE stream")
    func head() async throws {
        let server = try await TestServer()
        let cases: [(path: String, status: Int, type: String)] = [
            ("/openapi.json", 200, "application/json"), ("/healthz", 200, "application/json"),
            ("/events", 200, "text/event-stream"), ("/events?zone=nope", 400, "application/json"),
            ("/nope", 404, "application/json"), ("/", 200, "text/html"),
        ]
        for request in cases {
            // A HEAD, then a GET on the same connection: a body after the HEAD's headers would be read as the start
            // of the second answer.
            let connection = try RawConnection(port: server.port)
            connection.send(
                "HEAD \(request.path) HTTP/1.1\r\nHost: localhost\r\n\r\n"
                    + "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
            var received = Data()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let (data, closed) = await connection.received(seconds: 0.2)
                received += data
                if closed { break }
            }
            let text = String(decoding: received, as: UTF8.self)
            let answers = text.components(separatedBy: "HTTP/1.1 ").dropFirst()
            #expect(answers.count == 2, "\(request.path): \(text.prefix(800).debugDescription)")
            let head = answers.first ?? ""
            #expect(head.hasPrefix("\(request.status) "), "\(request.path): \(head.debugDescription)")
            #expect(head.lowercased().contains("content-type: \(request.type)"), "\(request.path): \(head)")
            #expect(head.hasSuffix("\r\n\r\n"), "\(request.path): a body after the headers: \(head.debugDescription)")
            #expect(answers.last?.hasPrefix("200 ") == true, "\(request.path): \(text.debugDescription)")
        }
        // The length a GET would have.
        let (_, document) = try await server.get("/openapi.json")
        let connection = try RawConnection(port: server.port)
        connection.send("HEAD /openapi.json HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        let (headers, _) = await connection.received(seconds: 5)
        #expect(String(decoding: headers, as: UTF8.self).lowercased().contains("content-length: \(document.count)\r\n"))
        #expect(server.service.broadcaster.subscriberCount == 0)
        try await server.stop()
    }

    @Test("every endpoint answers as openapi.json documents (python3-jsonschema), and it is served")
    func endpointsMatchDocument() async throws {
        let server = try await TestServer()
        try server.publish(12, visitors: 4)
        server.service.hub.tick(time: server.origin.addingTimeInterval(2))
        #expect(try await server.wait { try await server.service.store.logBounds().last == 13 })
        let faceId = try #require(
            try JSONDecoder.sentinel().decode(Visitors.self, from: try await server.get("/api/visitors").1).visitors
                .first?.faceId)
        let requests: [(template: String, path: String, status: Int)] = [
            ("/api/visitors", "/api/visitors", 200),
            ("/api/visitors", "/api/visitors?from=2026-01-01T00:00:00Z&limit=2", 200),
            ("/api/visitors", "/api/visitors?from=yesterday", 400),
            ("/api/visitors/{faceId}", "/api/visitors/\(faceId)", 200),
            ("/api/visitors/{faceId}", "/api/visitors/nosuchvisitor", 404),
            ("/api/sentiment", "/api/sentiment?minutes=120", 200),
            ("/api/sentiment", "/api/sentiment?minutes=100000000", 400),
            ("/api/zones", "/api/zones", 200),
            ("/api/reports", "/api/reports?bucket=5m&from=\(ISO8601.string(from: server.origin))", 200),
            ("/api/reports", "/api/reports?bucket=fortnight", 400),
            ("/healthz", "/healthz", 200),
        ]
        var checked: [[String: Any]] = []
        for request in requests {
            let (head, body) = try await server.get(request.path)
            #expect(
                head.status == request.status,
                "\(request.path): \(head.status) \(String(decoding: body, as: UTF8.self))")
            checked.append([
                "path": request.template, "status": head.status, "body": try JSONSerialization.jsonObject(with: body),
            ])
        }
        // The stream's messages: every data is an Envelope (visitor events and a gauge reading), a reset a StreamNotice.
        let messages = try await server.stream("/events?lastEventId=0") { $0.ids.last == 13 }.filter { $0.event != nil }
        let reset = try await server.stream("/events?lastEventId=999999") { $0.contains { $0.event != nil } }
            .filter { $0.event != nil }
        #expect(Set(messages.compactMap(\.event)).isSuperset(of: ["visitor.entered", "sentiment.gauge"]))
        #expect(reset.first?.event == "stream.reset")
        #expect(reset.first?.data.contains("\"resumeAfter\":13") == true, "ids are numbers: \(reset.first?.data ?? "")")
        for (message, component) in messages.map({ ($0, "Envelope") }) + reset.prefix(1).map({ ($0, "StreamNotice") }) {
            checked.append([
                "component": component, "body": try JSONSerialization.jsonObject(with: Data(message.data.utf8)),
            ])
        }
        let file = server.folder.appendingPathComponent("responses.json")
        try JSONSerialization.data(withJSONObject: checked).write(to: file)
        let (status, text, _) = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                Fixtures.root.appendingPathComponent("Schemas/validate_openapi.py").path,
                Fixtures.root.appendingPathComponent("Sources/SentinelHTTP/openapi.json").path, file.path,
            ])
        #expect(status == 0, "\(text)")
        #expect(text.contains("\(checked.count) responses, 0 problems"))
        // History pages through every visit once.
        let page1 = try JSONDecoder.sentinel().decode(
            Visitors.self, from: try await server.get("/api/visitors?from=2020-01-01T00:00:00Z&limit=3").1)
        let page2 = try JSONDecoder.sentinel().decode(
            Visitors.self,
            from: try await server.get("/api/visitors?from=2020-01-01T00:00:00Z&limit=3&cursor=\(page1.nextCursor!)").1)
        #expect(page1.visitors.count == 3 && page2.visitors.count == 1 && page2.nextCursor == nil)
        // Those present page the same way, by their own cursor; the other kind's is refused.
        let here1 = try JSONDecoder.sentinel().decode(
            Visitors.self, from: try await server.get("/api/visitors?limit=3").1)
        let here2 = try JSONDecoder.sentinel().decode(
            Visitors.self, from: try await server.get("/api/visitors?limit=3&cursor=\(here1.nextCursor!)").1)
        #expect(here1.visitors.count == 3 && here2.visitors.count == 1 && here2.nextCursor == nil)
        #expect(Set((here1.visitors + here2.visitors).map(\.faceId)).count == 4)
        #expect(try await server.get("/api/visitors?cursor=\(page1.nextCursor!)").0.status == 400)
        // Four visitors in one zone: counts are published; the gauge has four votes.
        let zones = String(decoding: try await server.get("/api/zones").1, as: UTF8.self)
        #expect(
            zones.contains(
                "{\"emotion\":true,\"name\":\"display\",\"polygon\":[[0,0],[0.5,0],[0.5,1],[0,1]],\"sourceId\":\"showroom\",\"units\":\"normalized\",\"visitors\":{\"value\":4,\"visitors\":4}}"
            ), "each zone with its source and its polygon as the pipeline writes it: \(zones)")
        let served = try await server.get("/openapi.json").1
        #expect(
            served
                == (try Data(contentsOf: Fixtures.root.appendingPathComponent("Sources/SentinelHTTP/openapi.json"))))
        // The writer counts a batch as published after its other figures: once it says 13, they are all there.
        var metrics = ""
        #expect(
            try await server.wait {
                metrics = String(decoding: try await server.get("/metrics").1, as: UTF8.self)
                return metrics.contains("sentinel_events_published_total 13")
            })
        // The showroom's figures, k-suppressed as the API publishes them (nobody in the counter: NaN, not 0).
        for line in [
            "sentinel_visits_started_total 4", "sentinel_visitors_present 4.0",
            "sentinel_zone_visitors_present{source_id=\"showroom\",zone=\"display\"} 4.0",
            "sentinel_zone_visitors_present{source_id=\"showroom\",zone=\"counter\"} nan",
            "sentinel_mood_score ", "sentinel_zone_mood_score{source_id=\"showroom\",zone=\"display\"} ",
        ] {
            #expect(metrics.contains(line), "\(line) in \(metrics)")
        }
        #expect(metrics.contains("sentinel_stage_duration_seconds_bucket{stage=\"store\""))
        // Prometheus' own Python client parses it, and every family has its # HELP and # TYPE.
        let metricsFile = server.folder.appendingPathComponent("metrics.txt")
        try Data(metrics.utf8).write(to: metricsFile)
        let (parsed, report, _) = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                """
                import sys
                from prometheus_client.parser import text_string_to_metric_families
                families = list(text_string_to_metric_families(open(sys.argv[1]).read()))
                bare = [f.name for f in families if not f.documentation or f.type == "unknown"]
                print(len(families), "families; without help or type:", bare)
                sys.exit(1 if bare or not families else 0)
                """,
                metricsFile.path,
            ])
        #expect(parsed == 0, "\(report)")
        // And Prometheus' own linter (Debian's prometheus): names, label names, help and types as Prometheus wants
        // them; it exits 3 on camelCase label names (sourceId before).
        let lint = try await Fixtures.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "promtool check metrics < \"$0\" 2>&1", metricsFile.path],
            timeout: 60)
        #expect(lint.status == 0 && lint.output.isEmpty, "promtool check metrics: \(lint.status) \(lint.output)")
        try await server.stop()
    }

    struct Visitors: Decodable {
        var visitors: [VisitorRecord]
        var nextCursor: String?
    }

    @Test("nothing published carries a box, detector score, media time or internal id")
    func noLeaks() async throws {
        let server = try await TestServer()
        try server.publish(9)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 9 })
        var texts = [String(decoding: try await server.get("/api/visitors").1, as: UTF8.self)]
        texts += try await server.stream("/events?lastEventId=0") { $0.ids.last == 9 }.map(\.data)
        let faceId = try JSONDecoder.sentinel().decode(Visitors.self, from: Data(texts[0].utf8)).visitors[0].faceId
        texts.append(String(decoding: try await server.get("/api/visitors/\(faceId)").1, as: UTF8.self))
        for text in texts {
            for secret in ["\"box\"", "detectionScore", "mediaTime", "showroom#", "emotionDistribution"] {
                #expect(!text.contains(secret), "\(secret) in \(text)")
            }
        }
        try await server.stop()
    }
}

@Suite("Access", .timeLimit(.minutes(2)))
struct AccessTests {
    @Test("a token file every user can read is refused with the command that fixes it; group read is allowed")
    func tokenFileMode() throws {
        let file = try Fixtures.temporaryFolder().appendingPathComponent("token").path
        try Data("s3cret-token-0123456789\n".utf8).write(to: URL(fileURLWithPath: file))
        chmod(file, 0o644)
        let error = try #require(throws: CommandError.self) { try AccessToken.load(file: file, environment: "") }
        #expect(error.description.contains("readable by every user (mode 644): run chmod o-r \(file)"))
        chmod(file, 0o640)
        #expect(try AccessToken.load(file: file, environment: "") == "s3cret-token-0123456789")
    }

    @Test(
        "beyond localhost a bearer token is required, from the header or, on /events and the dashboard page, the query; /healthz stays open but says only up or down without the token"
    )
    func bearer() async throws {
        let folder = try Fixtures.temporaryFolder()
        let tokenFile = folder.appendingPathComponent("token")
        let token = "s3cret-token-0123456789"
        try (token + "\n").write(to: tokenFile, atomically: true, encoding: .utf8)
        chmod(tokenFile.path, 0o600)
        let refused = await #expect(throws: ConfigError.self) {
            try await TestServer(extra: "server: { tokenEnvironment: SENTINEL_TEST_NO_SUCH_VARIABLE }", host: "0.0.0.0")
        }
        #expect(refused?.description.contains("server.host: 0.0.0.0 accepts connections from other machines") == true)
        let server = try await TestServer(
            extra: "server: { tokenFile: \(tokenFile.path), corsOrigins: [\"https://dash.example.com\"] }",
            host: "0.0.0.0")
        #expect(try await server.get("/api/zones").0.status == 401)
        #expect(
            try await server.get("/api/zones", headers: [("Authorization", "Bearer wrong-token-0123456789")]).0.status
                == 401)
        #expect(try await server.get("/events").0.status == 401)
        #expect(try await server.get("/api/zones?access_token=\(token)").0.status == 401)
        // The dashboard opened from a link with the token (its script sends the header for what it fetches).
        #expect(try await server.get("/").0.status == 401)
        #expect(try await server.get("/?access_token=\(token)").0.status == 200)
        #expect(try await server.get("/?access_token=wrong-token-0123456789").0.status == 401)
        #expect(try await server.get("/api/zones", headers: [("Authorization", "Bearer \(token)")]).0.status == 200)
        // /healthz: up or down for a probe with no token (or a wrong one); the details with the token.
        for headers in [[], [("Authorization", "Bearer wrong-token-0123456789")]] {
            let (head, body) = try await server.get("/healthz", headers: headers)
            #expect([200, 503].contains(head.status))
            let object = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
            #expect(Array(object.keys) == ["status"], "\(object)")
        }
        let (_, detailed) = try await server.get("/healthz", headers: [("Authorization", "Bearer \(token)")])
        #expect(String(decoding: detailed, as: UTF8.self).contains("\"database\""))
        try server.publish(3)
        let messages = try await server.stream("/events?lastEventId=0&access_token=\(token)") { $0.ids.last == 3 }
        #expect(messages.ids == [1, 2, 3])
        // CORS: the listed dashboard origin is answered, another is not.
        let allowed = try await server.get(
            "/api/zones", headers: [("Authorization", "Bearer \(token)"), ("Origin", "https://dash.example.com")]
        ).0
        #expect(allowed.header("Access-Control-Allow-Origin") == "https://dash.example.com")
        let other = try await server.get(
            "/api/zones", headers: [("Authorization", "Bearer \(token)"), ("Origin", "https://evil.example.com")]
        ).0
        #expect(other.header("Access-Control-Allow-Origin") == nil)
        try await server.stop()
    }
}

extension AccessTests {
    @Test(
        "with the aggregate token, a zone's count below k cannot be had from any endpoint, reports cannot be differenced (they are not in its scope) and /healthz counts nothing; the visitor token reads all"
    )
    func aggregateScope() async throws {
        let server = try await TestServer(
            extra: """
                server: { \(try TestServer.tokenSettings()) }
                privacy: { minGroupSize: 3 }
                """)
        // One visitor at the display, one at the counter: both zones, and the total, are below k.
        try server.publish(2, visitors: 1, zone: "display")
        try server.publish(2, visitors: 1, zone: "counter", startingAt: 10)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 4 })
        let asVisitors = [("Authorization", "Bearer \(TestServer.tokens.visitors)")]
        let present = try JSONDecoder.sentinel().decode(
            APITests.Visitors.self, from: try await server.get("/api/visitors", headers: asVisitors).1)
        let faceId = try #require(present.visitors.first?.faceId)
        #expect(present.visitors.count == 1)
        // Every path the API has, with the aggregate token: only k-protected figures and what says nothing of
        // visitors answer; nothing that answers holds a pseudonym or a count of one.
        let asAggregates = [("Authorization", "Bearer \(TestServer.tokens.aggregates)")]
        let paths: [(String, Int)] = [
            ("/api/zones", 200), ("/api/sentiment", 200), ("/healthz", 200), ("/openapi.json", 200), ("/", 200),
            ("/api/visitors", 403), ("/api/visitors?from=2020-01-01T00:00:00Z", 403), ("/api/visitors/\(faceId)", 403),
            ("/events", 403), ("/events?type=sentiment.gauge", 403), ("/metrics", 403), ("/nosuchpath", 403),
            ("/api/reports?bucket=hour", 403),
        ]
        for (path, status) in paths {
            let (head, body) = try await server.get(path, headers: asAggregates)
            let text = String(decoding: body, as: UTF8.self)
            #expect(head.status == status, "\(path): \(head.status) \(text)")
            #expect(
                !text.contains(faceId) && !text.contains("\"visitors\":1") && !text.contains("\"value\":1"), "\(path)")
        }
        // /healthz counts frames and events: the aggregate scope gets its status word only.
        let health = try JSONSerialization.jsonObject(with: try await server.get("/healthz", headers: asAggregates).1)
        #expect((health as? [String: Any]).map { Array($0.keys) } == ["status"], "\(health)")
        // The differencing attack: two report windows a second apart, around the one visit at the counter, would
        // tell its dwell and mood (each window alone being k-suppressed or not). Reports are not in the aggregate
        // scope, so neither answers; the visitor token, which may see one visitor anyway, gets both.
        let counterVisit = server.origin.addingTimeInterval(10)
        for end in [counterVisit, counterVisit.addingTimeInterval(1), counterVisit.addingTimeInterval(20)] {
            let path =
                "/api/reports?bucket=hour&from=\(ISO8601.string(from: server.origin.addingTimeInterval(-3600)))"
                + "&to=\(ISO8601.string(from: end))"
            #expect(try await server.get(path, headers: asAggregates).0.status == 403)
            #expect(try await server.get(path, headers: asVisitors).0.status == 200)
        }
        let zones = String(decoding: try await server.get("/api/zones", headers: asAggregates).1, as: UTF8.self)
        #expect(
            zones.contains("\"name\":\"counter\",")
                && zones.contains("\"units\":\"normalized\",\"visitors\":{\"suppressed\":true}"),
            "\(zones)")
        #expect(
            zones.contains("\"visitors\":{\"suppressed\":true}}")
                || zones.contains("\"visitors\":{\"suppressed\":true},"))
        try await server.stop()
    }
}

@Suite("The store behind the service", .timeLimit(.minutes(2)))
struct StoreServiceTests {
    @Test(
        "while the database is locked, events wait in memory (beyond the bound the oldest are dropped and counted), /healthz says why, and the rest are stored once it recovers"
    )
    func lockedDatabase() async throws {
        let server = try await TestServer(extra: "store: { bufferEvents: 20 }")
        var configuration = Configuration()
        configuration.allowsUnsafeTransactions = true
        let other = try DatabaseQueue(path: server.databasePath, configuration: configuration)
        try await other.writeWithoutTransaction { try $0.execute(sql: "BEGIN IMMEDIATE") }
        try server.publish(30)
        var health = ""
        #expect(
            try await server.wait {
                health = String(decoding: try await server.get("/healthz").1, as: UTF8.self)
                return health.contains("\"writable\":false") && health.contains("\"buffered\":20")
            }, "\(health)")
        #expect(
            health.contains("is locked by another process") && health.contains("\"dropped\":10")
                && health.contains(server.databasePath))
        try await other.writeWithoutTransaction { try $0.execute(sql: "COMMIT") }
        #expect(try await server.wait { try await server.service.store.logBounds().last == 20 })
        // The newest 20 were kept, in order.
        let stored = try await server.service.store.events(after: 0, limit: 100)
        let decoder = JSONDecoder.sentinel()
        let times = try stored.map {
            try decoder.decode(VisitorEvent.self, from: $0.payload).time.timeIntervalSince(server.origin)
        }
        #expect(times == (10..<30).map(Double.init))
        let metrics = String(decoding: try await server.get("/metrics").1, as: UTF8.self)
        #expect(metrics.contains("sentinel_events_dropped_total{reason=\"store_buffer_full\"} 10"))
        let recovered = String(decoding: try await server.get("/healthz").1, as: UTF8.self)
        #expect(recovered.contains("\"writable\":true") && recovered.contains("\"buffered\":0"), "\(recovered)")
        try await server.stop()
    }

    @Test("after a crash, the visits it left open are published as exited (interrupted) and the mood comes back")
    func restartAfterCrash() async throws {
        // Three visitors present and voting; the service then stops without ending their visits, as kill -9 would
        // (no source is running to end them).
        let first = try await TestServer()
        try first.publish(3, startingAt: 3590)  // ten seconds ago: inside the gauge's five-minute window
        #expect(try await first.wait { try await first.service.store.logBounds().last == 3 })
        try await first.stop()
        let second = try await TestServer(folder: first.folder)
        #expect(try await second.wait { try await second.service.store.logBounds().last == 6 })
        let messages = try await second.stream("/events?lastEventId=3") { $0.ids.last == 6 }
        let exits = messages.filter { $0.event == "visitor.exited" }.map(\.data)
        #expect(exits.count == 3 && exits.allSatisfy { $0.contains("\"reason\":\"interrupted\"") }, "\(exits)")
        #expect(String(decoding: try await second.get("/api/visitors").1, as: UTF8.self) == "{\"visitors\":[]}")
        // The gauge's window is rebuilt from the log: three votes, so a figure, not "too few visitors".
        second.service.hub.tick(time: Date())
        #expect(
            try await second.wait {
                String(decoding: try await second.get("/api/sentiment").1, as: UTF8.self)
                    .contains("\"overall\":{\"value\":{\"label\":\"hot\",\"score\":90},\"visitors\":3}")
            })
        try await second.stop()
    }

    @Test("retention runs when the service starts and then on its clock, not only when events arrive")
    func retentionWithoutEvents() async throws {
        let folder = try Fixtures.temporaryFolder()
        // Written by an earlier run, which has ended.
        do {
            let store = try EventStore(path: TestServer.databasePath(in: folder))
            var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
            let old = Date().addingTimeInterval(-40 * 86_400)
            let visitor = VisitorRecord(
                faceId: "showroom#0#1", sourceId: "showroom", zone: nil, state: .active, firstSeen: old, lastSeen: old)
            let masked = try mask.mask(VisitorEvent(type: .entered, time: old, visitor: visitor))
            _ = try await store.append([.visitor(stored: masked.stored, published: masked.published)])
            #expect(try await store.logBounds() == (floor: 0, last: 1))
        }
        let server = try await TestServer(folder: folder)
        #expect(try await server.wait { try await server.service.store.events(after: 0, limit: 10).isEmpty })
        #expect(try await server.service.store.logBounds() == (floor: 1, last: 1))
        try await server.stop()
    }
}
