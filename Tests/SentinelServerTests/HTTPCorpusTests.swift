import Foundation
import GRDB
import SentinelAssembly
import SentinelLoopback
import SentinelStore
import SentinelTestSupport
import Testing

@Suite("Fuzz corpus: HTTP requests and Last-Event-ID values", .timeLimit(.minutes(3)))
struct HTTPCorpusTests {
    @Test("every malformed request gets its expected status and message; the server and its store are unharmed")
    func corpus() async throws {
        let cases = try Corpus.cases("http")
        #expect(cases.count >= 50)
        // ADDRESS: one of this machine's own addresses, which a LAN's browsers may name (loopback where it has none).
        let address =
            Host.current().addresses.first { !$0.hasPrefix("127.") && !$0.contains(":") } ?? "127.0.0.1"
        let tokens = [
            "VISITOR": TestServer.tokens.visitors, "AGGREGATE": TestServer.tokens.aggregates, "ADDRESS": address,
        ]
        // The requests name the box "box", as a published name: server.hosts.
        let server = try await TestServer(extra: "server: { \(try TestServer.tokenSettings()), hosts: [box] }")
        try server.publish(10)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 10 })
        for item in cases {
            var request = try Data(contentsOf: item.file)
            for (name, token) in tokens {
                request = request.replacing(Data("@\(name)@".utf8), with: Data(token.utf8))
            }
            let connection = try RawConnection(port: server.port)
            connection.send(request)
            // Read until the expected text has arrived (an SSE stream never ends) or the server closes; a request that
            // must get no answer is given 2 s to get one. A loaded machine once took longer than 2 s to answer.
            var received = Data()
            let deadline = Date().addingTimeInterval(item.status == 0 ? 2 : 20)
            while Date() < deadline {
                let (data, closed) = await connection.received(seconds: 0.2)
                received += data
                let text = String(decoding: received, as: UTF8.self)
                if closed || (text.contains(item.expected) && text.contains("\r\n\r\n")) { break }
            }
            let text = String(decoding: received, as: UTF8.self)
            let status = text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
            // Status 0: no answer at all (the server waits for a request, until the idle timeout).
            let matches = item.status == 0 ? text.isEmpty : text.contains(item.expected)
            #expect(status == item.status && matches, "\(item): got \(status) \(text.prefix(600).debugDescription)")
        }
        // Still serving, and the store holds what it held.
        #expect(
            try await server.get("/healthz", headers: [("Authorization", "Bearer \(tokens["VISITOR"]!)")]).0.status
                == 200)
        #expect(try await server.service.store.logBounds().last == 10)
        try await server.stop()
        let database = try DatabaseQueue(path: server.databasePath)
        let check = try await database.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") }
        #expect(check == "ok")
    }
}
