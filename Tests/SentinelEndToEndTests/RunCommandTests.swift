import Foundation
import GRDB
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelCore
import SentinelLoopback
import SentinelTestSupport
import Testing

@Suite("sentinel run, the real binary", .ownThread, .serialized, .timeLimit(.minutes(3)))
struct RunCommandTests {
    @Test(
        "SIGTERM: open visits exit with reason shutdown, everything is stored, streams end, exit 0; no output carries an internal id, box, score, media time or image"
    )
    func gracefulShutdown() async throws {
        // At real time, so that visitors are in the showroom when the signal comes.
        let sentinel = try await RunningSentinel(pace: "realtime")
        async let streamed = sentinel.events(count: .max)
        try await sentinel.waitForVisitorsMidClip()
        kill(sentinel.process.processIdentifier, SIGTERM)
        let status = try await sentinel.exitStatus(within: 60)
        #expect(status == 0, "\(sentinel.log)")
        // The stream ended with the process, and had everything stored.
        let messages = try await streamed
        let tables = try sentinel.dump()
        let decoder = JSONDecoder.sentinel()
        let visitorEvents = try messages.filter { $0.event?.hasPrefix("visitor.") == true }.map { message in
            try decoder.decode(Envelope.self, from: Data(message.data.utf8)).payload
        }
        #expect(messages.ids.count == tables["events"]?.count && !messages.ids.isEmpty)
        let entered = Set(visitorEvents.filter { $0.type == .entered }.map(\.visitor.faceId))
        let exited = visitorEvents.filter { $0.type == .exited }
        #expect(!entered.isEmpty && Set(exited.map(\.visitor.faceId)) == entered)
        #expect(exited.contains { $0.reason == .shutdown })
        #expect(tables["visits"]?.allSatisfy { $0.contains("exited") } == true)
        #expect(!(tables["visits"]?.contains { $0.contains("interrupted") } ?? true))
        // The leak scan: store rows, the stream and the logs.
        let scanner = LeakScanner(internalIDs: [])
        for (table, rows) in tables {
            for row in rows { #expect(scanner.leaks(in: row).isEmpty, "\(table): \(scanner.leaks(in: row)) in \(row)") }
        }
        for message in messages {
            #expect(scanner.leaks(in: message.data).isEmpty, "\(scanner.leaks(in: message.data)) in \(message.data)")
        }
        #expect(scanner.leaks(in: sentinel.log).isEmpty, "\(scanner.leaks(in: sentinel.log))")
        // Not vacuous: the log named the visitors by pseudonym.
        #expect(entered.allSatisfy { sentinel.log.contains("face.id=\($0)") })
    }

    @Test("run publishes what replay writes for the same recording: the same visitor events and gauge readings")
    func runEqualsReplay() async throws {
        let sentinel = try await RunningSentinel(
            pipeline: try await RunningSentinel.showroomOnClip(), arguments: ["--pace", "fastest"])
        // The source ends, and the writer has committed everything it published (nothing waits, the log stays put).
        var logged = -1
        // The 12 s clip as fast as it decodes: under 10 s alone, over 60 s beside a fresh clone's full suite.
        #expect(
            try await waitFor(seconds: 150) {
                let health = try await sentinel.json("/healthz")
                let sources = health["sources"] as? [[String: Any]]
                let database = health["database"] as? [String: Any]
                let count = try await DatabaseQueue(path: sentinel.database).read {
                    try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM events") ?? 0
                }
                defer { logged = count }
                return sources?.first?["state"] as? String == "ended" && database?["buffered"] as? Int == 0
                    && count == logged
            }, "\(sentinel.log)")
        let published = try await DatabaseQueue(path: sentinel.database).read { db in
            try Row.fetchAll(db, sql: "SELECT type, payload FROM events ORDER BY id").map { row in
                (type: row["type"] as String, payload: row["payload"] as String)
            }
        }
        kill(sentinel.process.processIdentifier, SIGTERM)
        _ = try await sentinel.exitStatus(within: 30)

        let output = sentinel.folder.appendingPathComponent("replay.jsonl")
        let (status, _, errors) = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "replay", try await RunningSentinel.clip.value.path, "--pipeline",
                sentinel.folder.appendingPathComponent("pipeline.yml").path, "-o", output.path,
            ])
        #expect(status == 0, "\(errors)")
        let replayed = try String(contentsOf: output, encoding: .utf8).split(separator: "\n").map(String.init)

        // Times differ (run places the recording on the wall clock when it starts, replay at the file's time), and
        // so do pseudonyms (a key each); everything else must be the same, event for event.
        func comparable(_ json: String, type: String? = nil) throws -> NSDictionary {
            func strip(_ value: Any) -> Any {
                guard let object = value as? [String: Any] else { return value }
                let volatile: Set = ["time", "firstSeen", "lastSeen", "enteredAt", "exitedAt", "faceId"]
                return object.filter { !volatile.contains($0.key) }.mapValues(strip)
            }
            var object = try #require(try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any])
            if let type { object["type"] = type }
            return strip(object) as! NSDictionary
        }
        let fromRun = try published.map { try comparable($0.payload, type: $0.type) }
        let fromReplay = try replayed.map { try comparable($0) }
        #expect(fromRun.count == fromReplay.count)
        #expect(fromRun.contains { $0["type"] as? String == "sentiment.gauge" })
        #expect(fromRun.contains { $0["type"] as? String == "visitor.exited" })
        for (n, (a, b)) in zip(fromRun, fromReplay).enumerated() where a != b {
            Issue.record("event \(n) differs: run \(a), replay \(b)")
            break
        }
    }

    @Test(
        "a second sentinel run on the port or the database of a running one is refused before it touches anything; the first keeps its visitors"
    )
    func oneInstance() async throws {
        let first = try await RunningSentinel(pace: "realtime")
        #expect(
            try await waitFor {
                String(
                    decoding: try await LoopbackClient.fetch(port: first.port, path: "/api/visitors").1, as: UTF8.self
                )
                .contains("\"state\":\"active\"")
            })
        let pipeline = first.folder.appendingPathComponent("pipeline.yml").path
        let elsewhere = try Fixtures.temporaryFolder().appendingPathComponent("other.sqlite").path
        let samePort = try await Fixtures.run(
            Fixtures.sentinel, ["run", pipeline, "--port", "\(first.port)", "--database", elsewhere], timeout: 30)
        #expect(samePort.status == 1)
        #expect(
            samePort.errors.contains("cannot listen on 127.0.0.1:\(first.port): another program holds that port"),
            "\(samePort.errors)")
        #expect(!FileManager.default.fileExists(atPath: elsewhere), "the refused run made its database")
        // Opening the store would have closed the first one's open visits as interrupted.
        let sameDatabase = try await Fixtures.run(
            Fixtures.sentinel, ["run", pipeline, "--port", "0", "--database", first.database], timeout: 30)
        #expect(sameDatabase.status == 1)
        #expect(
            sameDatabase.errors.contains(
                "database \(first.database) is in use by another process (pid \(first.process.processIdentifier))"),
            "\(sameDatabase.errors)")
        #expect(first.process.isRunning)
        let visits = try first.dump()["visits"] ?? []
        #expect(!visits.isEmpty && !visits.contains { $0.contains("interrupted") }, "\(visits)")
        kill(first.process.processIdentifier, SIGTERM)
        #expect(try await first.exitStatus(within: 60) == 0, "\(first.log)")
    }

    @Test("kill -9: every event a client received is in the store, byte for byte")
    func killNine() async throws {
        // 4x: a loop every 3 s, without taking both cores from the rest of the suite.
        let sentinel = try await RunningSentinel(pace: "4x")
        let received = try await sentinel.events(count: 60)
        kill(sentinel.process.processIdentifier, SIGKILL)
        #expect(try await sentinel.exitStatus(within: 10) != nil)
        let queue = try DatabaseQueue(path: sentinel.database)
        let stored = try await queue.read { db in
            Dictionary(
                uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT id, payload FROM events").map {
                    ($0["id"] as Int64, $0["payload"] as String)
                })
        }
        // At least 60: one chunk may carry several events (queued messages go out in one write).
        #expect(received.ids.count >= 60)
        for message in received where message.id != nil {
            let id = try #require(Int64(message.id!))
            let row = try #require(stored[id], "event \(id) was sent but is not in the store")
            #expect(
                message.data.contains("\"payload\":\(row),\"payloadType\""),
                "event \(id): \(message.data) against \(row)")
        }
    }

    struct Envelope: Decodable {
        var payload: VisitorEvent
    }

    @Test("bad sources end alone: a file with no decodable frame, a truncated one, bogus timestamps, a dead camera")
    func isolation() async throws {
        let media = Fixtures.root.appendingPathComponent("Tests/Corpus/media").path
        let sentinel = try await RunningSentinel(
            pipeline: """
                version: 1
                sources:
                  - { id: good, input: \(try await RunningSentinel.clip.value.path) }
                  - { id: garbage, input: \(media)/garbage-after-header.avi }
                  - { id: truncated, input: \(media)/truncated-90pct.avi }
                  - { id: stamps, input: \(media)/jpeg-renamed.mp4 }
                  - { id: camera, input: "rtsp://127.0.0.1:9/none" }
                """, arguments: ["--pace", "fastest"])
        func states() async throws -> [String: (state: String, message: String)] {
            let sources = try await sentinel.json("/healthz")["sources"] as? [[String: Any]] ?? []
            return Dictionary(
                uniqueKeysWithValues: sources.map {
                    ($0["sourceId"] as! String, ($0["state"] as! String, $0["message"] as? String ?? ""))
                })
        }
        // The good recording plays to its end while the others fail, end or retry around it: 9 s alone, over 60 s
        // beside the rest of the suite on two cores (the debug build detects every frame).
        #expect(try await waitFor(seconds: 180) { try await states()["good"]?.state == "ended" }, "\(sentinel.log)")
        let health = try await states()
        #expect(health["garbage"]?.state == "failed")
        #expect(
            health["garbage"]?.message.contains("cannot decode any frame of \(media)/garbage-after-header.avi") == true)
        #expect(health["truncated"]?.state == "ended" && health["stamps"]?.state == "ended")
        #expect(health["camera"]?.state == "reconnecting", "\(health)")
        #expect(sentinel.log.contains("ended after 10 of 12 declared frames"))
        #expect(sentinel.log.contains("container timestamps that repeat, go back or leap were replaced"))
        // Still serving; then a clean stop with everything of the good source stored.
        #expect(sentinel.process.isRunning)
        kill(sentinel.process.processIdentifier, SIGTERM)
        #expect(try await sentinel.exitStatus(within: 10) == 0, "\(sentinel.log)")
        let queue = try DatabaseQueue(path: sentinel.database)
        #expect(try await queue.read { try String.fetchOne($0, sql: "PRAGMA integrity_check") } == "ok")
        let visits = try await queue.read {
            try Int.fetchOne($0, sql: "SELECT COUNT(*) FROM visits WHERE sourceId = 'good'")
        }
        #expect((visits ?? 0) > 0)
    }
}

@Suite("sentinel run: counters", .ownThread, .timeLimit(.minutes(2)))
struct CounterTests {
    @Test(
        "a looping recording's frame counts only grow across its loops, in /healthz as in /metrics, with the rate beside them"
    )
    func monotonicAcrossLoops() async throws {
        // 4x: a loop every 3 s, without taking both cores from the rest of the suite.
        let sentinel = try await RunningSentinel(pace: "4x")
        defer { kill(sentinel.process.processIdentifier, SIGKILL) }
        // Under the full suite's load a request can wait past the server's idle timeout and be closed: asked again.
        func fetch(_ path: String) async throws -> Data {
            for _ in 0..<2 {
                if let body = try? await LoopbackClient.fetch(port: sentinel.port, path: path).1 { return body }
            }
            return try await LoopbackClient.fetch(port: sentinel.port, path: path).1
        }
        func captured() async throws -> Int? {
            let health = try JSONSerialization.jsonObject(with: try await fetch("/healthz")) as? [String: Any]
            return ((health?["sources"] as? [[String: Any]])?.first?["frames"] as? [String: Any])?["captured"] as? Int
        }
        func metric() async throws -> Int? {
            let text = String(decoding: try await fetch("/metrics"), as: UTF8.self)
            let line = text.split(separator: "\n").first {
                $0.hasPrefix("sentinel_frames_captured_total{source_id=\"showroom\"}")
            }
            return line.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }.map { Int($0) }
        }
        // The clip is 12 s at 15 fps: 180 frames a playback.
        var seen: [Int] = []
        for _ in 0..<300 where (seen.last ?? 0) < 2 * 180 + 20 {
            let before = try await captured() ?? 0
            let exported = try await metric() ?? 0
            let after = try await captured() ?? 0
            #expect(
                before <= exported && exported <= after, "/healthz \(before), /metrics \(exported), /healthz \(after)")
            seen.append(after)
            try await Task.sleep(for: .milliseconds(200))
        }
        #expect(seen == seen.sorted(), "captured went backwards: \(seen)")
        #expect((seen.last ?? 0) > 2 * 180, "past a second playback: \(seen.suffix(5))")
        let sources = try await sentinel.json("/healthz")["sources"] as? [[String: Any]]
        #expect(sources?.first?["fps"] is Double || sources?.first?["fps"] is Int)

        // The whole exposition of a real run: every family with its help (declared with the metric), Prometheus' own
        // linter clean, and the detect stage timing the detector wherever it ran (workers detect ahead here).
        let text = String(decoding: try await fetch("/metrics"), as: UTF8.self)
        let lines = text.split(separator: "\n").map(String.init)
        for (index, line) in lines.enumerated() where line.hasPrefix("# TYPE ") {
            let name = line.split(separator: " ")[2]
            #expect(index > 0 && lines[index - 1].hasPrefix("# HELP \(name) "), "\(name) has no help")
        }
        for family in ["sentinel_emotion_readings_refused_total", "sentinel_emotion_faces_unread_total"] {
            #expect(text.contains("# HELP \(family) "), "\(family) missing")
        }
        let file = sentinel.folder.appendingPathComponent("metrics.txt")
        try Data(text.utf8).write(to: file)
        let lint = try await Fixtures.run(
            URL(fileURLWithPath: "/bin/sh"), ["-c", "promtool check metrics < \"$0\" 2>&1", file.path], timeout: 60)
        #expect(lint.status == 0 && lint.output.isEmpty, "promtool check metrics: \(lint.output)")
        func value(_ prefix: String) -> Double? {
            lines.first { $0.hasPrefix(prefix) }.flatMap { $0.split(separator: " ").last }.flatMap { Double($0) }
        }
        let sum = value("sentinel_stage_duration_seconds_sum{stage=\"detect\"}") ?? 0
        let count = value("sentinel_stage_duration_seconds_count{stage=\"detect\"}") ?? 0
        // RetinaFace at 320 px takes milliseconds a frame on any machine; the worker's time was lost before (1.5 us).
        #expect(count > 0 && sum / count > 0.001, "detect: \(sum) s over \(count) frames")
    }
}
