import Foundation
import SentinelAssembly
import SentinelClient
import SentinelCore
import SentinelStore
import SentinelTestSupport
import Testing

/// The API against its description, judged by the tools its users run rather than by Sentinel's own reader:
/// openapi-spec-validator on the served document, openapi-core on live requests and responses (PyPI, installed by
/// `make openapi-tools` into .build/openapi-tools).
@Suite("The API as openapi-spec-validator and openapi-core see it", .ownThread, .timeLimit(.minutes(3)))
struct OpenAPIContractTests {
    static let tools = Fixtures.root.appendingPathComponent(".build/openapi-tools")

    func check(_ server: TestServer, token: String?) async throws {
        try server.publish(12, visitors: 4)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 12 })
        let auth = token.map { [("Authorization", "Bearer \($0)")] } ?? []
        // A visitor from the history, which the store answers (who is present now follows it by the live state).
        let since = ISO8601.string(from: server.origin.addingTimeInterval(-60))
        var faceId: String?
        _ = try await server.wait {
            faceId = try JSONDecoder.sentinel().decode(
                APITests.Visitors.self, from: try await server.get("/api/visitors?from=\(since)", headers: auth).1
            ).visitors.first?.faceId
            return faceId != nil
        }
        let visitor = try #require(faceId, "no visitor in the history within 10 s")
        let from = ISO8601.string(from: server.origin.addingTimeInterval(-60))
        let requests: [[String: Any]] = [
            ["path": "/api/visitors", "query": ["from": from, "limit": "2"], "status": 200],
            ["path": "/api/visitors", "query": ["from": "yesterday"], "status": 400, "invalid": true],
            [
                "path": "/api/visitors/\(visitor)", "pattern": "/api/visitors/{faceId}", "view": ["faceId": visitor],
                "status": 200,
            ],
            [
                "path": "/api/visitors/nosuchvisitor", "pattern": "/api/visitors/{faceId}",
                "view": ["faceId": "nosuchvisitor"], "status": 404,
            ],
            ["path": "/api/sentiment", "query": ["minutes": "120"], "status": 200],
            ["path": "/api/zones", "status": 200],
            ["path": "/api/reports", "query": ["bucket": "5m", "from": from], "status": 200],
            ["path": "/api/reports", "query": ["bucket": "5m", "from": from, "format": "csv"], "status": 200],
            ["path": "/api/reports", "query": ["bucket": "fortnight"], "status": 400, "invalid": true],
            ["path": "/healthz", "status": 200],
        ]
        let file = server.folder.appendingPathComponent("contract-requests.json")
        try JSONSerialization.data(withJSONObject: requests).write(to: file)
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                Fixtures.root.appendingPathComponent("Tests/Peers/openapi_contract.py").path,
                "http://127.0.0.1:\(server.port)", token ?? "-", file.path,
            ], timeout: 120, environment: ["PYTHONPATH": Self.tools.path])
        #expect(outcome.status == 0, "\(outcome.output)\n\(outcome.errors)")
        #expect(outcome.output.contains("\(requests.count) requests, 0 problems"), "\(outcome.output)")
        try await server.stop()
    }

    @Test("on loopback without a token (the default), every request and answer is as documented: no token needed")
    func anonymous() async throws {
        try await check(try await TestServer(), token: nil)
    }

    @Test("with tokens configured, the visitor token's requests and answers are as documented")
    func withToken() async throws {
        try await check(
            try await TestServer(extra: "server: { \(try TestServer.tokenSettings()) }"),
            token: TestServer.tokens.visitors)
    }
}
