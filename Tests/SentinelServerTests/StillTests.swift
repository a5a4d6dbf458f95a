import Foundation
import Logging
import SentinelAssembly
import SentinelClient
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelLoopback
import SentinelPrivacy
import SentinelRuntime
import SentinelTestSupport
import SentinelVision
import ServiceLifecycle
import Testing

@Suite("Camera stills", .timeLimit(.minutes(3)))
struct StillTests {
    @Test(
        "/api/still gives the running camera's latest frame as the visitor token's JPEG, with people in it and no face left for the detector to find; the aggregate token is refused, an unknown camera named, and a pipeline that does not allow stills says so"
    )
    func masked() async throws {
        let file = Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path
        var definition = try ServiceDefinition.load(file)
        #expect(definition.pipeline.privacy.review.stills, "the demo pipeline shows its camera")
        let folder = try Fixtures.temporaryFolder()
        for (name, token) in [("visitors", TestServer.tokens.visitors), ("aggregates", TestServer.tokens.aggregates)] {
            try (token + "\n").write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
            chmod(folder.appendingPathComponent(name).path, 0o600)
        }
        definition.server.tokenFile = folder.appendingPathComponent("visitors").path
        definition.server.aggregateTokenFile = folder.appendingPathComponent("aggregates").path
        let (service, port, task) = try await Self.start(definition, in: folder) {
            $0.pace = .realTime
            $0.loop = true
        }
        defer { task.cancel() }
        let visitorToken = [("Authorization", "Bearer \(TestServer.tokens.visitors)")]
        func still() async throws -> (LoopbackClient.Head, Data) {
            try await LoopbackClient.fetch(port: port, path: "/api/still?sourceId=showroom", headers: visitorToken)
        }

        // A frame with a visitor in it: the recording's first visitor comes within seconds.
        var taken: (head: LoopbackClient.Head, jpeg: Data)?
        let deadline = Date().addingTimeInterval(60)
        while Date() < deadline {
            let (head, body) = try await still()
            #expect(head.status == 200, "\(String(decoding: body, as: UTF8.self))")
            if head.status == 200, Int(head.header("X-Faces-Masked") ?? "") ?? 0 > 0,
                !service.live.now.occupancy.visitors().records.isEmpty
            {
                taken = (head, body)
                break
            }
            try await Task.sleep(for: .milliseconds(500))
        }
        let (head, jpeg) = try #require(taken, "no still with a visitor in 60 s")
        #expect(head.header("Content-Type") == "image/jpeg" && head.header("Cache-Control") == "no-store")
        #expect(head.header("Last-Modified")?.hasSuffix(" GMT") == true)
        let image = folder.appendingPathComponent("still.jpg")
        try jpeg.write(to: image)
        let shown = try Image(contentsOf: image.path)
        #expect(shown.width == 640 && shown.height == 480)
        let pipeline = definition.pipeline
        let detector = try OpenCVFaceDetector(
            kind: pipeline.detection.kind, modelPath: try Fixtures.model(pipeline.detection.kind.defaultModel),
            settings: pipeline.detectorSettings)
        // A face found is named with where it is and how sure, to tell a mask that hid too little from a face the
        // pipeline's detection missed in the raw frame.
        let found = try detector.detect(shown)
        func named(_ faces: [Detection]) -> String {
            "a face the detector finds in the still (\(head.header("X-Faces-Masked") ?? "?") regions masked): \(faces.map { "\($0.box) score \($0.score)" })"
        }
        // No face at the detector's own threshold: neither one the masks left, nor one the detector would make of a
        // mask (a blurred face beside the band it was masked in read as a face at 0.597-0.636 at frame 65 of the
        // sample, under the masks of the faces found alone: issue 65; PrivacyLeakTests.noFaceInMaskedFrames runs the
        // detector over every frame).
        #expect(found.isEmpty, "\(named(found))")

        // The same through the Swift client: the JPEG, when it was taken, the regions masked; a wrong name refused.
        let client = SentinelClient(url: URL(string: "http://127.0.0.1:\(port)")!, token: TestServer.tokens.visitors)
        let fromClient = try await client.still(source: "showroom")
        #expect(fromClient.jpeg.starts(with: [0xFF, 0xD8, 0xFF]))
        #expect(abs(try #require(fromClient.taken).timeIntervalSinceNow) < 30)
        await #expect(throws: SentinelClient.Failure.self) { try await client.still(source: "hall") }
        let anonymous = SentinelClient(url: URL(string: "http://127.0.0.1:\(port)")!)
        await #expect(throws: SentinelClient.Failure.self) { try await anonymous.still(source: "showroom") }

        // Only the visitor token sees the camera; a wrong name is answered with the right ones.
        let (aggregate, _) = try await LoopbackClient.fetch(
            port: port, path: "/api/still?sourceId=showroom",
            headers: [("Authorization", "Bearer \(TestServer.tokens.aggregates)")])
        #expect(aggregate.status == 403)
        let (unknown, answer) = try await LoopbackClient.fetch(
            port: port, path: "/api/still?sourceId=hall", headers: visitorToken)
        #expect(unknown.status == 400 && String(decoding: answer, as: UTF8.self).contains("names one of showroom"))
        await service.group.triggerGracefulShutdown()
        try await task.value

        // The code's default: no stills.
        let server = try await TestServer()
        let (off, body) = try await server.get("/api/still?sourceId=showroom")
        #expect(off.status == 404 && String(decoding: body, as: UTF8.self).contains("privacy.review.stills"))
        try await server.stop()
    }

    @Test(
        "/api/still of a live camera showing faces there from its first frame, cut by each edge and half behind a pillar, holding still: none recognisable in the first still nor seconds later; the camera's own frame shows them all",
        .enabled(if: RTSPCamera.isAvailable, "needs Debian's GStreamer RTSP server"))
    func liveFromTheStart() async throws {
        let folder = try Fixtures.temporaryFolder()
        let (camera, truth, original) = try await Scenes.servedLive(Scenes.still, in: folder)
        defer { camera.stop() }
        var definition = try ServiceDefinition.load(Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path)
        definition.pipeline.sources[0].input = camera.url("cam")
        definition.pipeline.sources[0].resolvedInput = camera.url("cam")
        definition.pipeline.sources[0].zones = []
        let (_, port, task) = try await Self.start(definition, in: folder)
        defer { task.cancel() }
        let faces = try #require(truth.frames.first).faces
        #expect(try Scenes.recognisable(faces, in: original, original: original).count == faces.count)
        // The first still the camera gives, then one three seconds (45 frames) of the camera later.
        func frames() async throws -> Int {
            let health = try JSONDecoder.sentinel().decode(
                ServiceHealth.self, from: try await LoopbackClient.fetch(port: port, path: "/healthz").1)
            return try #require(health.sources?.first).frames.analysed
        }
        var stills: [Data] = []
        for _ in 0..<2 {
            var taken: Data?
            let given = try await waitFor(seconds: 60) {
                let (head, body) = try await LoopbackClient.fetch(port: port, path: "/api/still?sourceId=showroom")
                taken = body
                return head.status == 200
            }
            #expect(given, "no still from the camera in 60 s")
            stills += taken.map { [$0] } ?? []
            let seen = try await frames()
            #expect(try await waitFor(seconds: 60) { try await frames() >= seen + 45 }, "the camera stopped")
        }
        for (index, jpeg) in stills.enumerated() {
            let file = folder.appendingPathComponent("still-\(index).jpg")
            try jpeg.write(to: file)
            let left = try Scenes.recognisable(faces, in: try Image(contentsOf: file.path), original: original)
            #expect(left.isEmpty, "still \(index): \(left)")
        }
    }

    /// `definition` run as the service on a free loopback port, its store in `folder`, warnings only in the log.
    static func start(
        _ definition: ServiceDefinition, in folder: URL, _ adjust: (inout SentinelService.Options) -> Void = { _ in }
    ) async throws -> (service: SentinelService, port: Int, task: Task<Void, any Error>) {
        var options = SentinelService.Options()
        options.hosting.port = 0
        options.hosting.databasePath = folder.appendingPathComponent("still.sqlite").path
        adjust(&options)
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        return try await SentinelService.start(
            definition: definition, models: Fixtures.store, options: options, logger: logger)
    }
}
