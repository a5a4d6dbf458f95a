import Foundation
import Logging
import SentinelCore
import SentinelTestSupport
import SentinelVision
import Testing

@Suite("Live sources over a real network stream")
struct LiveSourceTests {
    /// Serves `folder` over HTTP on a free loopback port with Python's http.server; returns the port.
    func serve(_ folder: URL) throws -> (Process, Int) {
        let server = Process()
        server.executableURL = URL(fileURLWithPath: "/usr/bin/python3")
        server.arguments = ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", folder.path]
        let output = Pipe()
        server.standardOutput = output
        server.standardError = FileHandle.nullDevice
        try server.run()
        // First line: "Serving HTTP on 127.0.0.1 port 38123 (http://127.0.0.1:38123/) ..."
        var text = ""
        while !text.contains("\n") {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else { break }
            text += String(decoding: chunk, as: UTF8.self)
        }
        let words = text.split(separator: " ")
        let port = words.firstIndex(of: "port").flatMap { Int(words[$0 + 1]) }
        return (server, try #require(port, "http.server said: \(text)"))
    }

    @Test("a stream that stops delivering is reopened with backoff; index and time keep increasing")
    func reconnectsAfterStreamEnds() throws {
        let folder = try Fixtures.temporaryFolder()
        let writer = try VideoWriter(path: folder.appendingPathComponent("clip.avi").path, fps: 25, width: 160, height: 120)
        for i in 0..<10 {
            try writer.write(try Image(width: 160, height: 120, fill: Color(red: UInt8(i * 20), green: 100, blue: 50)))
        }
        writer.finish()
        let (server, port) = try serve(folder)
        defer { server.terminate() }
        let url = "http://127.0.0.1:\(port)/clip.avi"
        let source = try LiveSource(.url(url), backoff: Backoff(initial: .milliseconds(20), maximum: .milliseconds(100)), logger: Logger(label: "test"))
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
}
