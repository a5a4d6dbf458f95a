import Foundation
import SentinelTestSupport
import Testing

/// Malformed media, pipeline and fleet files, run through the real binary as a user would hand them over: each must end with
/// its expected status and message, never a crash signal or a hang.
/// Each case has 30 s; a folder of them runs one after another, 25 s alone and 280-360 s beside the rest of the suite
/// on two cores (it hit a 5-minute limit in CI): the suite's limit is ten minutes.
@Suite("Fuzz corpus: media, pipeline and fleet files", .ownThread, .timeLimit(.minutes(10)))
struct FileCorpusTests {
    /// Runs `arguments` (with FILE replaced by each case's path) and checks the outcome; `output` picks the stream
    /// that carries the message.
    func run(
        _ kind: String, _ arguments: [String], atLeast: Int = 50, output: (Fixtures.Outcome) -> String
    ) async throws {
        let cases = try Corpus.cases(kind)
        #expect(cases.count >= atLeast)
        for item in cases {
            let path = "Tests/Corpus/\(kind)/\(item.file.lastPathComponent)"
            let outcome = try await Fixtures.run(
                Fixtures.sentinel, arguments.map { $0 == "FILE" ? path : $0 }, timeout: 30)
            let expected = item.expected.replacingOccurrences(of: "FILE", with: path)
                .replacingOccurrences(of: "ROOT", with: Fixtures.root.path)
            let said = output(outcome)
            #expect(
                !outcome.signalled, "\(item): killed by signal \(outcome.status)\(outcome.timedOut ? " (hung)" : "")")
            #expect(
                Int(outcome.status) == item.status && (expected.isEmpty || said.contains(expected)),
                "\(item): exit \(outcome.status), expected \(item.status) and \(expected.debugDescription) in \(said.debugDescription)"
            )
        }
    }

    @Test("media: truncated, renamed, empty, tiny, huge, corrupt or padded files end replay cleanly and say why")
    func media() async throws {
        try await run("media", ["replay", "FILE", "--pace", "fastest", "-o", "/dev/null"]) { $0.errors }
    }

    @Test("pipelines: every malformed file gets its problem with file, line, column and field")
    func pipelines() async throws {
        try await run("pipelines", ["check", "FILE"]) { $0.output }
    }

    @Test("fleets: the fleet files the tests write are ok, and each malformed one gets its problem with file and line")
    func fleets() async throws {
        try await run("fleets", ["fleet", "FILE", "--check"], atLeast: 15) { $0.output + $0.errors }
    }
}
