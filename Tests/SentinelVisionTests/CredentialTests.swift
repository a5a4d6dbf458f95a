import Foundation
import Logging
import SentinelCore
import SentinelLoopback
import SentinelTestSupport
import SentinelVision
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A camera's user and password never leave the process: not in what people read, not to another host.
@Suite("Camera credentials", .enabled(if: RTSPCamera.isAvailable, "needs Debian's GStreamer RTSP server"))
struct CredentialTests {
    /// A password with every character that ends a URL's parts early: `/`, `@`, `%`, `:`, `?` and `#`.
    static let password = "p@ss/w%25rd:x?y#z"

    @Test(
        "a URL is shown without its user and password, whatever characters they hold, and without secret query values")
    func rendered() {
        let cases = [
            // The two: a `/` printed the password whole, an `@` left its tail.
            ("rtsp://admin:pa/ss%25word@10.0.0.5:554/stream", "rtsp://***@10.0.0.5:554/stream"),
            ("rtsp://admin:p@ssw0rd@10.0.0.5/live", "rtsp://***@10.0.0.5/live"),
            ("rtsp://admin:\(Self.password)@cam.local:8554/cam", "rtsp://***@cam.local:8554/cam"),
            ("rtsp://admin:s3cret@127.0.0.1:9/stream", "rtsp://***@127.0.0.1:9/stream"),
            ("rtsp://cam.local/stream", "rtsp://cam.local/stream"),
            (
                "http://cam.local/snap.cgi?User=admin&pwd=s3cret&res=1",
                "http://cam.local/snap.cgi?User=***&pwd=***&res=1"
            ),
            ("http://cam.local/x?token=abc#part", "http://cam.local/x?token=***#part"),
            // A `?` in the fragment starts no query (a camera's redirect so written trapped, found by fuzzing).
            ("rtsp://cam.local/x#a?b=c", "rtsp://cam.local/x#a?b=c"),
            // An `@` after the host hides what comes before it: too little shown, never a password.
            ("http://cam.local/x@y", "http://***@y"),
        ]
        for (url, shown) in cases {
            #expect(LiveEndpoint.url(url).description == shown, "\(url)")
        }
        // Any password of these characters, anywhere: none of it is shown.
        let alphabet = Array("ab/@%:?#=&25")
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<2_000 {
            let secret =
                "S" + String((0..<Int.random(in: 1...12, using: &generator)).map { _ in alphabet.randomElement()! })
                + "Q"
            let shown = LiveEndpoint.url("rtsp://u:\(secret)@h:554/p").description
            #expect(!shown.contains("S") && !shown.contains("Q"), "\(secret) -> \(shown)")
        }
    }

    @Test(
        "a password holding /, @, %, :, ? and # appears nowhere: not in check --probe, nor in run's log, /healthz or the API"
    )
    func nowhere() async throws {
        let camera = try await RTSPCamera([("cam", Fixtures.recording())], user: "admin:secret")
        defer { camera.stop() }
        let url = "rtsp://admin:\(Self.password)@127.0.0.1:\(camera.port)/cam"
        // Each part of the password a renderer might leave: split where URL parsers split.
        let pieces = ["p@ss", "ss/w", "w%25rd", "25rd:x", "rd:x?y", "y#z", Self.password]
        func leaks(_ text: String) -> [String] { pieces.filter { text.contains($0) } }

        let folder = try Fixtures.temporaryFolder()
        let pipeline = folder.appendingPathComponent("camera.yml")
        try "version: 1\nsources:\n  - id: door\n    input: '\(url)'\n".write(
            to: pipeline, atomically: true, encoding: .utf8)
        let probe = try await Fixtures.run(
            Fixtures.sentinel, ["check", "--probe", "--probe-seconds", "1", pipeline.path], timeout: 60)
        let said = probe.output + probe.errors
        #expect(said.contains("source door: rtsp://***@127.0.0.1:\(camera.port)/cam"), "\(said)")
        #expect(leaks(said).isEmpty, "\(said)")

        let run = try await RunningSentinel(
            pipeline: "version: 1\nsources:\n  - id: door\n    input: '\(url)'\n", arguments: ["--verbose"])
        defer { if run.process.isRunning { run.process.terminate() } }
        // Until the camera has been tried and failed twice: the retry lines and /healthz's message are written.
        var health: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            health = try await run.json("/healthz")
            let sources = health["sources"] as? [[String: Any]] ?? []
            if run.log.components(separatedBy: "live source open failed").count > 2,
                sources.contains(where: { $0["message"] is String })
            {
                break
            }
            try await Task.sleep(for: .milliseconds(200))
        }
        let healthText = String(decoding: try JSONSerialization.data(withJSONObject: health), as: UTF8.self)
        #expect(healthText.contains("message"), "\(healthText)")
        #expect(run.log.contains("live source open failed"), "\(run.log)")
        #expect(leaks(run.log).isEmpty, "\(run.log)")
        #expect(leaks(healthText).isEmpty, "\(healthText)")
        for path in ["/api/zones", "/api/visitors", "/metrics", "/"] {
            let (_, body) = try await LoopbackClient.fetch(port: run.port, path: path)
            #expect(leaks(String(decoding: body, as: UTF8.self)).isEmpty, "\(path)")
        }
        run.process.terminate()
        run.process.waitUntilExit()
    }

    @Test(
        "a camera that redirects to another host is not followed with the password: FFmpeg alone sends it there, Sentinel refuses and says where it was sent"
    )
    func redirect() async throws {
        let elsewhere = try AnsweringPort(rounds: 4, answer: Self.challenge)
        let camera = try AnsweringPort(rounds: 1, answer: Self.moved(to: "rtsp://127.0.0.1:\(elsewhere.port)/cam"))
        let url = "rtsp://admin:secret@127.0.0.1:\(camera.port)/cam"

        // The control: FFmpeg (through OpenCV, as Sentinel opens streams) follows the redirect and answers the other
        // host's challenge with the password in base64 ("admin:secret").
        let opencv = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", "import cv2, sys; cv2.VideoCapture(sys.argv[1], cv2.CAP_FFMPEG)", url], timeout: 60)
        #expect(!opencv.timedOut)
        #expect(elsewhere.received.contains("Authorization: Basic YWRtaW46c2VjcmV0"), "\(elsewhere.received)")
        elsewhere.reset()

        // Sentinel asks first, without the password, and refuses: nothing reaches the other host.
        let error = #expect(throws: VisionError.self) {
            try LiveSource(.url(url), logger: .init(label: "test"))
        }
        #expect(
            error?.message.contains("redirects to rtsp://127.0.0.1:\(elsewhere.port)/cam, another host") == true,
            "\(String(describing: error))")
        #expect(error?.message.contains("secret") == false)
        #expect(elsewhere.received.isEmpty, "\(elsewhere.received)")

        // A redirect on the same host and port is followed as before (the open then fails on this stand-in).
        let same = try AnsweringPort(rounds: 1, answer: Self.moved(to: "/other"))
        #expect(throws: Never.self) {
            try StreamDiagnosis("rtsp://admin:secret@127.0.0.1:\(same.port)/cam")?.preflight(describing: "the camera")
        }
        withExtendedLifetime((camera, same)) {}
    }
}

extension CredentialTests {
    /// An RTSP answer that moves the stream to `location`, as a camera that moved it.
    static func moved(to location: String) -> @Sendable (String) -> Data {
        { request in
            Data("RTSP/1.0 302 Moved Temporarily\r\nCSeq: \(cseq(request))\r\nLocation: \(location)\r\n\r\n".utf8)
        }
    }

    /// An RTSP answer asking for Basic: how a server learns a password, in base64, from a client that has one.
    static let challenge: @Sendable (String) -> Data = { request in
        Data(
            "RTSP/1.0 401 Unauthorized\r\nCSeq: \(cseq(request))\r\nWWW-Authenticate: Basic realm=\"camera\"\r\n\r\n"
                .utf8)
    }

    /// A request's sequence number, which its answer repeats.
    static func cseq(_ request: String) -> String {
        request.split(whereSeparator: \.isNewline).first { $0.lowercased().hasPrefix("cseq:") }?.dropFirst(5)
            .trimmingCharacters(in: .whitespaces) ?? "1"
    }
}
