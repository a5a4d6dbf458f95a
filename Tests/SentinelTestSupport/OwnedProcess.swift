public import Foundation

/// A helper process that a test starts and owns. The child is given a pipe as standard input and exits when it closes,
/// so it ends with the test process even when that is killed (no servers left running after a suite).
public final class OwnedProcess: @unchecked Sendable {
    public let process = Process()
    private let input = Pipe()
    /// The first line the child printed on standard output.
    public let firstLine: String

    /// Starts `executable` and awaits its first line of output (the child prints one once it is ready), unless
    /// `waitForOutput` is false.
    public init(_ executable: String, _ arguments: [String], waitForOutput: Bool = true) async throws {
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardInput = input
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        let reading = output.fileHandleForReading
        let text = await Fixtures.onOwnThread {
            var text = ""
            while waitForOutput && !text.contains("\n") {
                let chunk = reading.availableData
                guard !chunk.isEmpty else { break }
                text += String(decoding: chunk, as: UTF8.self)
            }
            return text
        }
        firstLine = String(text.prefix { $0 != "\n" })
    }

    /// Starts one of the test servers' Python scripts, which prints `PORT <n>` once it listens; returns it and the
    /// port.
    public static func server(_ script: String, _ arguments: [String]) async throws -> (OwnedProcess, port: Int) {
        let server = try await OwnedProcess("/usr/bin/python3", [script] + arguments)
        guard let port = server.firstLine.firstMatch(of: /^PORT (\d+)$/).flatMap({ Int($0.1) }) else {
            server.kill()
            throw TestSupportError(
                "\(URL(fileURLWithPath: script).lastPathComponent) did not start: \(server.firstLine)")
        }
        return (server, port)
    }

    /// Closes the child's standard input, its cue to end gracefully, and waits for it (briefly: from a `defer` too).
    public func finish() {
        try? input.fileHandleForWriting.close()
        process.waitUntilExit()
    }

    /// Closes the child's standard input and awaits its end at most `seconds`; false if it is still running.
    public func finish(within seconds: Double) async -> Bool {
        try? input.fileHandleForWriting.close()
        return await process.ended(within: seconds)
    }

    /// Kills the child (SIGKILL, as a crash or a pulled cable would) and waits for it.
    public func kill() {
        if process.isRunning {
            Foundation.kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    deinit { kill() }
}

/// A camera stand-in: Debian's GStreamer RTSP server (`rtsp_camera.py`, through python3-gi) playing recordings in real
/// time, one mount per recording, on a loopback port. It can be killed and started again on the same port, as a
/// camera that reboots.
public final class RTSPCamera: @unchecked Sendable {
    public private(set) var port = 0
    private let mounts: [(name: String, file: String)]
    private let h264: Bool
    private let loop: Bool
    private let user: String?
    private var server: OwnedProcess?

    public static let script = Fixtures.root.appendingPathComponent("Tests/SentinelTestSupport/rtsp_camera.py").path

    /// Whether this machine has Debian's python3-gi and GStreamer RTSP server (`make test` installs them).
    public static let isAvailable: Bool = {
        let check = Process()
        check.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        check.arguments = [
            "-c", "import gi; gi.require_version('GstRtspServer', '1.0'); from gi.repository import GstRtspServer",
        ]
        check.standardOutput = FileHandle.nullDevice
        check.standardError = FileHandle.nullDevice
        guard (try? check.run()) != nil else { return false }
        check.waitUntilExit()
        return check.terminationStatus == 0
    }()

    /// With `h264`, the recordings are sent as most cameras send, encoded to H.264; with `loop`, each plays again when
    /// it ends, its stream never ending; with `user` ("name:password"), every mount asks for it (Basic).
    public init(
        _ mounts: [(name: String, file: String)], h264: Bool = false, loop: Bool = false, user: String? = nil
    ) async throws {
        self.mounts = mounts
        self.h264 = h264
        self.loop = loop
        self.user = user
        try await start()
    }

    /// Starts the server, on the port it had before if it ran already.
    public func start() async throws {
        (server, port) = try await OwnedProcess.server(
            Self.script,
            ["--port", "\(port)", "--exit-with-stdin"] + (h264 ? ["--h264"] : []) + (loop ? ["--loop"] : [])
                + (user.map { ["--user", $0] } ?? [])
                + mounts.map { "\($0.name)=\($0.file)" })
    }

    /// Kills the server: every client's stream stops at once.
    public func stop() {
        server?.kill()
        server = nil
    }

    /// The mount's URL, with `user` ("name:password") in it if given.
    public func url(_ mount: String, user: String? = nil) -> String {
        "rtsp://\(user.map { "\($0)@" } ?? "")127.0.0.1:\(port)/\(mount)"
    }
}

/// A broker stand-in: Debian's mosquitto (`mqtt_broker.py`) on a loopback port, with sessions persisted in a folder of
/// its own, so that it can be stopped and started again on the same port, as a broker that restarts.
public final class MQTTBroker: @unchecked Sendable {
    public private(set) var port = 0
    public let folder: URL
    private let users: [(name: String, password: String)]
    private let acl: String?
    private let shipped: Bool
    private let config: [String]
    private var server: OwnedProcess?

    public static let script = Fixtures.root.appendingPathComponent("Tests/SentinelTestSupport/mqtt_broker.py").path

    /// A broker that takes anyone, or only `users`, holding them to the ACL file `acl` if given; `shipped` adds the
    /// settings of docs/mosquitto/sentinel.conf, `config` further lines (a bridge, say).
    public init(
        users: [(name: String, password: String)] = [], acl: String? = nil, shipped: Bool = false,
        config: [String] = []
    ) async throws {
        folder = try Fixtures.temporaryFolder()
        self.users = users
        self.acl = acl
        self.shipped = shipped
        self.config = config
        try await start()
    }

    private var logFile: URL { folder.appendingPathComponent("mosquitto.log") }

    /// The broker's log so far.
    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Starts the broker, on the port it had before if it ran already.
    public func start() async throws {
        var arguments = ["--port", "\(port)", "--folder", folder.path, "--log", logFile.path]
        arguments += users.flatMap { ["--user", "\($0.name):\($0.password)"] }
        if let acl { arguments += ["--acl", acl] }
        if shipped {
            arguments += ["--shipped", Fixtures.root.appendingPathComponent("docs/mosquitto/sentinel.conf").path]
        }
        arguments += config.flatMap { ["--config", $0] }
        (server, port) = try await OwnedProcess.server(Self.script, arguments)
    }

    /// Stops the broker as an administrator would: it saves its sessions first.
    public func stop() {
        server?.finish()
        server = nil
    }

    public var url: String { "mqtt://127.0.0.1:\(port)" }
}

/// A database server stand-in: Debian's PostgreSQL (`postgres_server.py`), a throwaway cluster in a folder of its
/// own on a loopback port, user `sentinel` with trust authentication, stopped with the test.
public final class PostgresServer: @unchecked Sendable {
    public let port: Int
    public let folder: URL
    private let server: OwnedProcess

    public static let script = Fixtures.root.appendingPathComponent("Tests/SentinelTestSupport/postgres_server.py").path

    public init() async throws {
        folder = try Fixtures.temporaryFolder()
        (server, port) = try await OwnedProcess.server(Self.script, ["--folder", folder.path])
    }

    /// A database of its own on this server, for one store.
    public var url: String { "postgres://sentinel@127.0.0.1:\(port)/postgres" }

    /// Stops the server (a fast shutdown).
    public func stop() { server.finish() }

    deinit { stop() }
}

extension Process {
    /// Awaits the end of the process, at most `seconds` (polling, holding no thread); false if it is still running.
    public func ended(within seconds: Double = .infinity) async -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while isRunning, Date() < deadline, !Task.isCancelled { try? await Task.sleep(for: .milliseconds(50)) }
        return !isRunning
    }
}

public struct TestSupportError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}
