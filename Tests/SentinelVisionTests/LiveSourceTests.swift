import Foundation
import Logging
import SentinelCore
import SentinelTestSupport
import SentinelVision
import Testing

@Suite("Live sources over a real network stream", .ownThread)
struct LiveSourceTests {
    /// Serves `folder` over HTTP on a free loopback port with Python's http.server, which exits when the test process
    /// does; returns the server and its port.
    func serve(_ folder: URL) async throws -> (OwnedProcess, Int) {
        let program = """
            import os, runpy, sys, threading
            threading.Thread(target=lambda: (sys.stdin.read(), os._exit(0)), daemon=True).start()
            sys.argv = ["http.server", "0", "--bind", "127.0.0.1", "--directory", sys.argv[1]]
            runpy.run_module("http.server", run_name="__main__")
            """
        let server = try await OwnedProcess("/usr/bin/python3", ["-u", "-c", program, folder.path])
        // "Serving HTTP on 127.0.0.1 port 38123 (http://127.0.0.1:38123/) ..."
        let port = server.firstLine.firstMatch(of: #/ port (\d+) /#).flatMap { Int($0.1) }
        return (server, try #require(port, "http.server said: \(server.firstLine)"))
    }

    @Test("a stream that stops delivering is reopened with backoff; index and time keep increasing")
    func reconnectsAfterStreamEnds() async throws {
        let folder = try Fixtures.temporaryFolder()
        let writer = try VideoWriter(
            path: folder.appendingPathComponent("clip.avi").path, fps: 25, width: 160, height: 120)
        for i in 0..<10 {
            try writer.write(try Image(width: 160, height: 120, fill: Color(red: UInt8(i * 20), green: 100, blue: 50)))
        }
        writer.finish()
        let (server, port) = try await serve(folder)
        defer { server.kill() }
        let url = "http://127.0.0.1:\(port)/clip.avi"
        let source = try LiveSource(
            .url(url), backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(100)),
            logger: Logger(label: "test"))
        var frames: [Frame] = []
        while frames.count < 25, let frame = try source.next() { frames.append(frame) }
        source.stop()
        #expect(frames.count == 25)
        // Ten frames a pass: the stream ended and was reopened at least twice.
        #expect(source.reconnects >= 2)
        #expect(frames.map(\.index) == Array(0..<25))
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.time < $1.time })
        #expect(try source.next() == nil)
    }

    @Test(
        "the camera stand-in started as docs/cameras.md says, with its standard input closed as in the background of a script: it serves until stopped, and the documented sentinel detect reads it"
    )
    func documentedCamera() async throws {
        let doc = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/cameras.md"), encoding: .utf8)
        let lines = doc.split(separator: "\n").map(String.init)
        let start = try #require(
            lines.first { $0.hasPrefix("/usr/bin/python3 Tests/SentinelTestSupport/rtsp_camera.py") })
        let detect = try #require(lines.first { $0.hasPrefix("sentinel detect rtsp://") })
        let words = start.split(separator: " ").map(String.init).filter { $0 != "&" }
        let camera = Process()
        camera.executableURL = URL(fileURLWithPath: words[0])
        camera.arguments = Array(words.dropFirst())
        camera.currentDirectoryURL = Fixtures.root
        camera.standardInput = FileHandle.nullDevice
        let said = Pipe()
        camera.standardOutput = said
        try camera.run()
        defer {
            kill(camera.processIdentifier, SIGKILL)
            camera.waitUntilExit()
        }
        // Listening once it says its port (the old stand-in said it too, then ended on its closed input).
        let first = String(decoding: said.fileHandleForReading.availableData, as: UTF8.self)
        #expect(first.hasPrefix("PORT 8554"), "\(first)")
        let outcome = try await Fixtures.run(
            Fixtures.sentinel, detect.split(separator: " ").dropFirst().map(String.init) + ["--max-frames", "10"],
            timeout: 120)
        #expect(outcome.status == 0, "\(outcome.errors)")
        // Serving still, after a client came and went: it runs until stopped.
        #expect(camera.isRunning)
        #expect(outcome.output.split(separator: "\n").filter { $0.hasPrefix("{") }.count == 10, "\(outcome.output)")
    }
}
