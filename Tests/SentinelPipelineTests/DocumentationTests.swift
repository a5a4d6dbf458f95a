import Foundation
import SentinelCore
import SentinelTestSupport
import Testing

/// What the README and the help say, held to what the code and the Makefile do.
@Suite("The README and the help agree with the code", .ownThread)
struct DocumentationTests {
    static func text(_ path: String) throws -> String {
        try String(contentsOf: Fixtures.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test("the README's Debian package lists are the Makefile's DEMO_PACKAGES and TEST_PACKAGES, in the same order")
    func packageList() throws {
        let makefile = try Self.text("Makefile").replacingOccurrences(of: "\\\n", with: " ")
        let readme = try Self.text("README.md")
        for name in ["DEMO_PACKAGES", "TEST_PACKAGES"] {
            let assignment = try #require(makefile.split(separator: "\n").first { $0.hasPrefix("\(name) :=") })
            let packages = assignment.dropFirst("\(name) :=".count).split(whereSeparator: \.isWhitespace)
            let intro = try #require(readme.range(of: "`\(name)`"), "README names \(name)")
            let after = readme[intro.upperBound...]
            let open = try #require(after.range(of: ": `"))
            let close = try #require(after[open.upperBound...].firstIndex(of: "`"))
            let listed = after[open.upperBound..<close].split(whereSeparator: \.isWhitespace)
            #expect(listed == packages, "README: \(listed)\nMakefile: \(packages)")
        }
    }

    @Test("sentinel run --help names every path of the API document, and the dashboard")
    func runHelpListsEveryEndpoint() async throws {
        let document = try JSONSerialization.jsonObject(
            with: Data(contentsOf: Fixtures.root.appendingPathComponent("Sources/SentinelHTTP/openapi.json")))
        let paths = try #require(((document as? [String: Any])?["paths"] as? [String: Any])?.keys)
        let help = try await Fixtures.run(Fixtures.sentinel, ["run", "--help"]).output
            .replacingOccurrences(of: "\n", with: " ")
        for path in paths { #expect(help.contains(path), "\(path) is not in run --help") }
        #expect(help.contains("dashboard at /"))
    }

    @Test("the README's EventSource snippet listens to every type the stream carries (onmessage hears none)")
    func eventSourceSnippet() throws {
        let readme = try Self.text("README.md")
        let start = try #require(readme.range(of: "const source = new EventSource("))
        let snippet = readme[start.lowerBound...].prefix { $0 != "`" }
        let types =
            VisitorEvent.Kind.allCases.map(\.rawValue)
            + [EventEnvelope.gaugeType, StreamNotice.resetType, StreamNotice.cutoffType]
        for type in types { #expect(snippet.contains("\"\(type)\""), "\(type) is not listened to") }
        #expect(snippet.contains("addEventListener"))
    }
}
