import Foundation
import SentinelConfig
import SentinelCore
import SentinelModels
import SentinelTestSupport
import SentinelWire
import Testing

/// What the README and the help say, held to what the code and the Makefile do.
@Suite("The README and the help agree with the code", .ownThread)
struct DocumentationTests {
    static func text(_ path: String) throws -> String {
        try String(contentsOf: Fixtures.root.appendingPathComponent(path), encoding: .utf8)
    }

    @Test(
        "the docs' pictures of the dashboard and the zone editor show the pages as they are: each is stamped with its page's SHA-256 by make screenshot, which must be run again when a page changes"
    )
    func picturesAreCurrent() throws {
        for (picture, page) in [
            ("docs/dashboard.png", "Sources/SentinelHTTP/dashboard.html"),
            ("docs/zone-editor.png", "Sources/SentinelHTTP/zone-editor.html"),
        ] {
            let png = try Data(contentsOf: Fixtures.root.appendingPathComponent(picture))
            let key = Data("page-sha256\0".utf8)
            let stamp = try #require(png.range(of: key), "\(picture): no stamp; run make screenshot")
            let stamped = String(
                decoding: png[stamp.upperBound..<min(stamp.upperBound + 64, png.endIndex)], as: UTF8.self)
            let digest = try ModelStore.sha256(of: Fixtures.root.appendingPathComponent(page))
            #expect(stamped == digest, "\(picture) shows an older \(page): run make screenshot")
        }
        // The dashboard's picture also says what it shows (its probe writes it as it takes the picture): wherever the
        // docs show it, their alt text is that, not a mood the picture lacks.
        let png = try Data(contentsOf: Fixtures.root.appendingPathComponent("docs/dashboard.png"))
        let key = Data("Description\0".utf8)
        let start = try #require(png.range(of: key), "docs/dashboard.png: no description; run make screenshot")
        // A tEXt chunk's text ends where its 4-byte CRC begins: its length is the 4 bytes before "tEXt".
        let length = png[(start.lowerBound - 8)..<(start.lowerBound - 4)].reduce(0) { $0 << 8 | Int($1) }
        let description = String(
            decoding: png[start.upperBound..<(start.lowerBound + length)], as: UTF8.self)
        let pages =
            ["README.md"]
            + (try FileManager.default.contentsOfDirectory(atPath: Fixtures.root.path + "/docs"))
            .filter { $0.hasSuffix(".md") }.map { "docs/\($0)" }
        var shown = 0
        for page in pages {
            for match in try Self.text(page).matches(of: /!\[([^\]]*)\]\(([^)]*dashboard\.png)\)/) {
                shown += 1
                #expect(String(match.1) == description, "\(page): the alt text of \(match.2) should be: \(description)")
            }
        }
        #expect(shown >= 2)
    }

    @Test(
        "every page of docs/ begins by saying whom it is for; none cites the team's ../shared, which no user has; none is over 3,000 words, and with the README they are under 20,000"
    )
    func pagesForReaders() throws {
        let pages = try FileManager.default.contentsOfDirectory(atPath: Fixtures.root.path + "/docs")
            .filter { $0.hasSuffix(".md") }.sorted().map { "docs/\($0)" }
        var total = 0
        for page in ["README.md"] + pages {
            let text = try Self.text(page)
            let words = text.split(whereSeparator: \.isWhitespace).count
            total += words
            #expect(words <= 3_000, "\(page): \(words) words")
            #expect(!text.contains("../shared"), "\(page) cites ../shared: say where its data comes from instead")
            guard page != "README.md" else { continue }
            // The first paragraph after the title.
            let paragraph = text.components(separatedBy: "\n\n").dropFirst().first ?? ""
            #expect(paragraph.hasPrefix("For "), "\(page) begins with: \(paragraph.prefix(80))")
        }
        #expect(total < 20_000, "README and docs: \(total) words")
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

    @Test(
        "every --set example the help and the README show is taken on the demo pipeline (the help's zones[*].grace=1 was refused)"
    )
    func setExamples() async throws {
        let help = try await Fixtures.run(Fixtures.sentinel, ["replay", "--help"]).output
        let readme = try ["README.md", "docs/getting-started.md", "docs/tuning.md"].map(Self.text).joined()
        let pattern = try Regex(#"--set '?([A-Za-z][A-Za-z0-9_.\[\]*]*=[^' `)\s]+)"#)
        var examples = readme.matches(of: pattern).map { String($0.output[1].substring!) }
        // The help lists its examples in parentheses after "Any key".
        let keyValue = try Regex(#"([a-z][A-Za-z0-9_.\[\]*]*\.[A-Za-z]+=[A-Za-z0-9.]+)"#)
        let discussion = try #require(help.range(of: "Any key")).lowerBound
        examples += help[discussion...].replacingOccurrences(of: "\n", with: " ").matches(of: keyValue).map {
            String($0.output[1].substring!)
        }
        #expect(examples.count >= 5, "\(examples)")
        let text = try Self.text("Pipelines/showroom.yml")
        // The README shows tracker.minIoU=7 as a refusal, and key=value as the form.
        for example in examples where example != "key=value" && !example.hasPrefix("tracker.minIoU=7") {
            #expect(throws: Never.self, "--set \(example)") {
                _ = try PipelineDefinition.parse(text, file: "showroom.yml", overrides: [try ConfigOverride(example)])
            }
        }
    }

    @Test(
        "the README is a landing page of at most 250 lines, and its first camera's pipeline passes sentinel check as written"
    )
    func landingPage() async throws {
        let readme = try Self.text("README.md")
        #expect(readme.split(separator: "\n", omittingEmptySubsequences: false).count <= 250)
        let heading = try #require(readme.range(of: "## A first camera"))
        let open = try #require(readme[heading.upperBound...].range(of: "```yaml\n"))
        let close = try #require(readme[open.upperBound...].range(of: "```"))
        let file = try Fixtures.temporaryFolder().appendingPathComponent("showroom.yml")
        try String(readme[open.upperBound..<close.lowerBound]).write(to: file, atomically: true, encoding: .utf8)
        let check = try await Fixtures.run(Fixtures.sentinel, ["check", file.path])
        #expect(check.status == 0 && check.output.contains(": ok"), "\(check.output)\(check.errors)")
        // Every page the README links to is there.
        for link in readme.matches(of: try Regex(#"\]\((docs/[a-z-]+\.md)\)"#)) {
            let path = String(link.output[1].substring!)
            #expect(FileManager.default.fileExists(atPath: Fixtures.root.appendingPathComponent(path).path), "\(path)")
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
