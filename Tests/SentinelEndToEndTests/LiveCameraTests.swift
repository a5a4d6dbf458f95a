import Foundation
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelCore
import SentinelLoopback
import SentinelTestSupport
import SentinelVision
import Testing

/// `sentinel run` against a real camera stand-in: Debian's GStreamer RTSP server playing the sample recording in
/// real time, as a camera sends it. What holds on a recording must hold here: dwell, one visit per visitor, and a
/// service that survives the camera going away.
@Suite(
    "sentinel run on a live RTSP camera", .ownThread, .serialized, .timeLimit(.minutes(4)),
    .enabled(
        if: RTSPCamera.isAvailable, "needs Debian's python3-gi and gir1.2-gst-rtsp-server-1.0 (make test installs them)"
    ))
struct LiveCameraTests {
    /// The showroom pipeline with one source per (id, URL), every source with the showroom's three zones (so zone
    /// names repeat across cameras), and detection on at most `maxFps` frames a second (0: every frame).
    static func pipeline(sources: [(id: String, url: String)], maxFps: Int = 0) throws -> String {
        let showroom = try String(
            contentsOf: Fixtures.root.appendingPathComponent("Pipelines/showroom.yml"), encoding: .utf8)
        let start = try #require(showroom.range(of: "\nsources:\n"))
        let end = try #require(showroom.range(of: "\ndetector:\n"))
        let block = String(showroom[start.upperBound..<end.lowerBound])
        let sources = sources.map { source in
            block.replacingOccurrences(of: "id: showroom", with: "id: \(source.id)")
                .replacingOccurrences(of: "input: ../Recordings/out/showroom-640x480.mp4", with: "input: \(source.url)")
        }
        let text = showroom[..<start.upperBound] + sources.joined() + showroom[end.lowerBound...]
        let cadence = try #require(text.range(of: "  maxFps: 0 "))
        return text.replacingCharacters(in: cadence, with: "  maxFps: \(maxFps) ")
    }

    /// The visitor events of a stream, in order.
    static func visitorEvents(_ messages: [EventStreamParser.Message]) throws -> [VisitorEvent] {
        struct Envelope: Decodable { var payload: VisitorEvent }
        let decoder = JSONDecoder.sentinel()
        return try messages.filter { $0.event?.hasPrefix("visitor.") == true }.map {
            try decoder.decode(Envelope.self, from: Data($0.data.utf8)).payload
        }
    }

    @Test(
        "an H.264 camera analysed at a third of its rate: one visit per visitor, dwell within 0.5 s of ground truth, frames counted"
    )
    func dwellAtAThirdOfTheRate() async throws {
        let truth = try JSONDecoder().decode(
            GroundTruth.self,
            from: Data(contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: Fixtures.recording()))))
        // Sent as most cameras send, H.264: FFmpeg reads seconds of it before it says the stream is open.
        let camera = try await RTSPCamera([("cam", Fixtures.recording())], h264: true)
        defer { camera.stop() }
        // The sample is 15 fps: detection on at most 5 frames a second, the tracker carrying visitors in between.
        let text = try Self.pipeline(sources: [("cam", camera.url("cam"))], maxFps: 5)
        let sentinel = try await RunningSentinel(pipeline: text, arguments: [])
        defer { kill(sentinel.process.processIdentifier, SIGKILL) }
        // Every visitor of the recording has entered and left (the stream then starts again: later visits are not
        // part of this playback).
        // The 40 s recording in real time, after the camera and the service start: up to three minutes on a loaded
        // machine. Events are decoded only once enough exits have arrived (decoding them all on every chunk made the
        // reader itself slow).
        let messages = try await sentinel.explained {
            try await sentinel.events(timeout: .seconds(180)) { messages in
                guard messages.count(where: { $0.event == "visitor.exited" }) >= truth.visitors.count else {
                    return false
                }
                let events = (try? Self.visitorEvents(messages)) ?? []
                let first = events.filter { $0.type == .entered }.prefix(truth.visitors.count).map(\.visitor.faceId)
                return first.count == truth.visitors.count
                    && Set(first).isSubset(of: Set(events.filter { $0.type == .exited }.map(\.visitor.faceId)))
            }
        }
        let events = try Self.visitorEvents(messages)
        let health = try await sentinel.json("/healthz")
        let entered = events.filter { $0.type == .entered }.prefix(truth.visitors.count).map(\.visitor.faceId)
        let exited = Dictionary(
            uniqueKeysWithValues: events.filter { $0.type == .exited }.map { ($0.visitor.faceId, $0) })
        // The visitors enter seconds apart, so entry order matches them to the ground truth.
        for (visitor, faceId) in zip(truth.visitors.sorted { $0.firstSeen < $1.firstSeen }, entered) {
            let dwell = try #require(exited[faceId]?.visitor.dwellSeconds)
            let expected = (visitor.lastSeen - visitor.firstSeen).seconds
            #expect(
                abs(dwell - expected) <= 0.5, "\(visitor.id): dwell \(dwell) s, ground truth \(expected) s; \(health)")
        }
        // One visit each: nobody entered twice while the first playback ran. It ends when its last visitor was last
        // seen (39.9 s); that visitor's exit comes visitTimeoutSeconds later, when the camera may already be playing
        // again (the second playback's first entry was measured a second before it).
        let endOfFirstPlayback = try #require(exited[entered.last!]?.visitor.lastSeen)
        let visits = events.filter { $0.type == .entered || $0.type == .exited }.map {
            "\($0.type.rawValue) \($0.visitor.faceId.prefix(6)) at \($0.time.timeIntervalSince(endOfFirstPlayback)) s"
                + ($0.visitor.dwellSeconds.map { ", dwell \($0) s" } ?? "")
        }
        #expect(
            events.filter { $0.type == .entered && $0.time <= endOfFirstPlayback }.count == truth.visitors.count,
            "visits: \(visits), health: \(health)")
        // Counted exactly at the edge: analysed + dropped never exceed captured, and the stream came at 15 fps.
        let source = try #require((health["sources"] as? [[String: Any]])?.first)
        let frames = try #require(source["frames"] as? [String: Int])
        #expect(frames["captured"]! >= 500, "\(health)")
        #expect(frames["analysed"]! + frames["dropped"]! <= frames["captured"]!, "\(health)")
        let metrics = String(
            decoding: try await LoopbackClient.fetch(port: sentinel.port, path: "/metrics").1, as: UTF8.self)
        #expect(metrics.contains("sentinel_frames_captured_total{source_id=\"cam\"}"))
        #expect(metrics.contains("sentinel_capture_to_publish_seconds_count"))
    }

    @Test(
        "two cameras with the same zone names; the camera killed and restarted; SIGTERM during an outage exits 0 within 2 s"
    )
    func outageAndShutdown() async throws {
        let camera = try await RTSPCamera([("one", Fixtures.recording()), ("two", Fixtures.recording())])
        defer { camera.stop() }
        let text = try Self.pipeline(sources: [("cam1", camera.url("one")), ("cam2", camera.url("two"))])
        let sentinel = try await RunningSentinel(pipeline: text, arguments: [])
        defer { kill(sentinel.process.processIdentifier, SIGKILL) }
        func states() async throws -> [String: String] {
            let sources = try await sentinel.json("/healthz")["sources"] as? [[String: Any]] ?? []
            return Dictionary(uniqueKeysWithValues: sources.map { ($0["sourceId"] as! String, $0["state"] as! String) })
        }
        func visitors() async throws -> [[String: Any]] {
            try await sentinel.json("/api/visitors")["visitors"] as? [[String: Any]] ?? []
        }
        let live = Set(["running", "behind"])
        // Both cameras deliver and visitors are present at both.
        #expect(
            try await waitFor {
                try await Set(visitors().compactMap { $0["sourceId"] as? String }) == ["cam1", "cam2"]
            })
        #expect(try await states().values.allSatisfy(live.contains))
        // Per-camera zones: six zones, each named by camera and name.
        let zones = try await sentinel.json("/api/zones")["zones"] as? [[String: Any]] ?? []
        #expect(
            Set(zones.map { "\($0["sourceId"]!)/\($0["name"]!)" }) == [
                "cam1/entrance", "cam1/display", "cam1/counter", "cam2/entrance", "cam2/display", "cam2/counter",
            ])
        // The camera goes away: both sources reconnect, and the visits that were open end as lost.
        camera.stop()
        #expect(try await waitFor { try await states().values.allSatisfy { $0 == "reconnecting" } })
        let reconnecting = try await sentinel.json("/healthz")["sources"] as? [[String: Any]] ?? []
        #expect(reconnecting.allSatisfy { ($0["reconnectAttempt"] as? Int ?? 0) >= 1 && $0["nextRetryAt"] != nil })
        #expect(try await waitFor { try await visitors().isEmpty })
        // It comes back: both run again and new visits start.
        try await camera.start()
        #expect(try await waitFor { try await states().values.allSatisfy(live.contains) })
        #expect(try await waitFor { try await !visitors().isEmpty })
        // Everything up to the visits started after the outage.
        let messages = try await sentinel.events { messages in
            messages.contains { $0.event == "visitor.exited" && $0.data.contains("\"lost\"") }
                && messages.last { $0.event == "visitor.entered" }.map { entered in
                    messages.firstIndex { $0.event == "visitor.exited" }! < messages.lastIndex(of: entered)!
                } == true
        }
        let events = try Self.visitorEvents(messages)
        let lost = events.filter { $0.type == .exited && $0.reason == .lost }.map(\.visitor.faceId)
        #expect(!lost.isEmpty)
        let present = Set(try await visitors().compactMap { $0["faceId"] as? String })
        #expect(present.isDisjoint(with: lost), "a visit across the outage continued")
        // The gauge has a figure per camera and per zone of each camera.
        let gauge = try #require(messages.last { $0.event == "sentiment.gauge" })
        let reading = try #require(try JSONSerialization.jsonObject(with: Data(gauge.data.utf8)) as? [String: Any])
        let payload = try #require(reading["payload"] as? [String: Any])
        #expect(Set((payload["sources"] as? [String: Any])?.keys ?? [:].keys) == ["cam1", "cam2"])
        #expect((payload["zones"] as? [String: [String: Any]])?["cam2"]?["entrance"] != nil)
        // Down again, then SIGTERM while both reconnect.
        camera.stop()
        #expect(try await waitFor { try await states().values.allSatisfy { $0 == "reconnecting" } })
        let signalled = ContinuousClock.now
        kill(sentinel.process.processIdentifier, SIGTERM)
        let status = try await sentinel.exitStatus(within: 10)
        let took = ContinuousClock.now - signalled
        #expect(status == 0, "\(sentinel.log)")
        #expect(took < .seconds(2), "exit took \(took)")
        #expect(!sentinel.log.contains("Fatal error"))
    }
}
