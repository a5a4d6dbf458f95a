import Foundation
import SentinelLoopback
import SentinelTestSupport
import Testing

/// `make install` into a staged root, then the installed binary run as an operator would: from another directory,
/// with no SENTINEL_MODELS and no checkout to lean on.
@Suite("make install: the installed binary works from anywhere", .serialized, .timeLimit(.minutes(3)))
struct InstallTests {
    @Test(
        "installed into a DESTDIR: models setup fills the state directory, and the demo runs from another directory (events, dashboard, OpenAPI), SIGTERM exits 0; the systemd unit verifies"
    )
    func installedBinaryRunsTheDemo() async throws {
        let destdir = try Fixtures.temporaryFolder()
        let elsewhere = try Fixtures.temporaryFolder()
        let state = try Fixtures.temporaryFolder().appendingPathComponent("state")
        defer {
            for folder in [destdir, elsewhere, state.deletingLastPathComponent()] {
                try? FileManager.default.removeItem(at: folder)
            }
        }
        let make = try Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/make"),
            ["--no-print-directory", "install-files", "DESTDIR=\(destdir.path)", "BINARY=\(Fixtures.sentinel.path)"],
            timeout: 120)
        try #require(make.status == 0, "make install-files: \(make.errors)")
        let prefix = destdir.appendingPathComponent("usr/local")
        let binary = prefix.appendingPathComponent("bin/sentinel")
        for file in [
            "bin/sentinel", "share/sentinel/models/models.yml", "share/sentinel/models/convert_retinaface_to_onnx.py",
            "share/sentinel/web/dashboard.html", "share/sentinel/web/openapi.json",
            "share/sentinel/schemas/visitor-events.v1.json", "share/sentinel/pipelines/showroom.yml",
            "share/sentinel/recordings/showroom-640x480.mp4", "lib/systemd/system/sentinel.service",
        ] {
            #expect(FileManager.default.fileExists(atPath: prefix.appendingPathComponent(file).path), "\(file)")
        }
        // The state directory as systemd's StateDirectory= hands it over; the environment must not point elsewhere.
        let environment = ["STATE_DIRECTORY": state.path, "SENTINEL_MODELS": ""]
        func sentinel(_ arguments: [String]) throws -> Fixtures.Outcome {
            try Fixtures.run(binary, arguments, timeout: 120, in: elsewhere, environment: environment)
        }
        let setup = try sentinel(["models", "setup"])
        #expect(setup.status == 0, "\(setup.output) \(setup.errors)")
        let listed = try sentinel(["models"])
        #expect(
            listed.output.contains("retinaface") && listed.output.contains(state.appendingPathComponent("models").path),
            "\(listed.output)")
        #expect(
            FileManager.default.fileExists(
                atPath: state.appendingPathComponent("models/retinaface_mobilenet025.onnx").path))
        let version = try sentinel(["--version"])
        #expect(
            version.output.contains(prefix.appendingPathComponent("share/sentinel/models/models.yml").path),
            "\(version.output)")

        let database = state.appendingPathComponent("showroom.sqlite").path
        let demo = try RunningSentinel(
            executable: binary, arguments: ["run", "--port", "0"], folder: elsewhere, database: database,
            directory: elsewhere, environment: environment)
        try await demo.explained {
            let events = try await demo.events(timeout: .seconds(60)) { $0.contains { $0.event == "visitor.entered" } }
            #expect(events.contains { $0.event == "visitor.entered" })
            let page = try await LoopbackClient.fetch(port: demo.port, path: "/")
            #expect(page.0.status == 200 && String(decoding: page.1, as: UTF8.self).contains("<html"))
            let openapi = try await demo.json("/openapi.json")
            #expect(openapi["openapi"] as? String == "3.1.0")
        }
        kill(demo.process.processIdentifier, SIGTERM)
        #expect(try await demo.exitStatus(within: 5) == 0, "\(demo.log.suffix(2000))")
        #expect(FileManager.default.fileExists(atPath: database), "the demo's store is in the state directory")
        #expect(demo.log.contains("share/sentinel/pipelines/showroom.yml"), "\(demo.log.prefix(2000))")

        // The unit, with its commands pointing into the staged root, as systemd itself reads it.
        let analyze = URL(fileURLWithPath: "/usr/bin/systemd-analyze")
        if FileManager.default.isExecutableFile(atPath: analyze.path) {
            let unit = try String(
                contentsOf: prefix.appendingPathComponent("lib/systemd/system/sentinel.service"), encoding: .utf8)
            #expect(unit.contains("ExecStart=/usr/local/bin/sentinel run /etc/sentinel/sentinel.yml"))
            let staged = elsewhere.appendingPathComponent("sentinel.service")
            try unit.replacingOccurrences(of: "/usr/local/bin/sentinel", with: binary.path).write(
                to: staged, atomically: true, encoding: .utf8)
            let verified = try Fixtures.run(analyze, ["verify", staged.path], timeout: 60)
            #expect(verified.status == 0, "\(verified.output) \(verified.errors)")
        } else {
            print("systemd-analyze is not installed: the unit file was not verified")
        }
    }
}
