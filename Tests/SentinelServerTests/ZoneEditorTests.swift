import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelLoopback
import SentinelModels
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

/// `sentinel zones` in a real browser: Debian's headless Chromium, driven over the DevTools protocol by
/// `zone_editor_probe.py`, dragging corners with the mouse and saving into a copy of the demo pipeline.
@Suite("Zone editor in headless Chromium", .ownThread, .timeLimit(.minutes(3)))
struct ZoneEditorTests {
    /// `sentinel zones` on a copy of the demo pipeline (its source the short clip), in a folder of its own: the
    /// editor, the copy and its text.
    static func editorOnShowroomCopy() async throws -> (editor: RunningSentinel, pipeline: URL, text: String) {
        let folder = try Fixtures.temporaryFolder()
        let pipeline = folder.appendingPathComponent("pipeline.yml")
        let text = try await RunningSentinel.showroomOnClip()
        try text.write(to: pipeline, atomically: true, encoding: .utf8)
        let editor = try await RunningSentinel(
            arguments: ["zones", pipeline.path, "--port", "0"], folder: folder, database: "")
        return (editor, pipeline, text)
    }

    @Test(
        "an operator drags a corner, adds and names a zone and saves: the file has them, every other line as it was, and passes the checks; a twisted zone is refused with its reason and the file is left alone; an edge dragged from its middle gains a corner, a shared corner moves the selected zone's, and every name stays in the frame"
    )
    func inChromium() async throws {
        let (editor, pipeline, original) = try await Self.editorOnShowroomCopy()
        let folder = pipeline.deletingLastPathComponent()
        defer { kill(editor.process.processIdentifier, SIGKILL) }
        struct Shown: Decodable {
            var status: String
            var problems: [String]
            var zones: [String]
            var masked: String
        }
        struct Edited: Decodable {
            var zones: [String: [[Double]]]
            var labels: [Label]
        }
        struct Label: Decodable {
            var name: String
            var inside: Bool
        }
        struct Report: Decodable {
            var loaded, saved, refused: Shown
            var edited: Edited
        }
        let report = try await probePage(
            "zone_editor_probe", url: "http://127.0.0.1:\(editor.port)/", seconds: 60, folder: folder,
            keepAs: "SENTINEL_ZONES_SCREENSHOT", as: Report.self)
        let (loaded, saved, refused) = (report.loaded, report.saved, report.refused)
        #expect(loaded.zones == ["entrance", "display", "counter"])
        #expect(loaded.masked.wholeMatch(of: /[1-9]\d* faces? hidden/) != nil, "\(loaded.masked)")
        #expect(saved.status.hasPrefix("Saved to \(pipeline.path)"), "\(saved.status) \(saved.problems)")
        #expect(saved.zones == ["entrance", "display", "counter", "sofa"])
        #expect(refused.status.hasPrefix("Not saved"))
        // Named as the page names it, not by a line of the file it would have written.
        #expect(
            refused.problems == ["showroom › display: polygon: self-intersecting polygon: edge 1 crosses edge 3"],
            "\(refused)")

        // The file: the dragged corner and the new zone, within a pixel of where the mouse let go.
        let text = try String(contentsOf: pipeline, encoding: .utf8)
        let definition = try ServiceDefinition.load(pipeline.path).pipeline
        #expect(
            definition.environmentProblems(
                models: Fixtures.store, frameSize: VideoFileSource.frameSize(of:), openClassifier: FaceClassifier.open
            ).isEmpty)
        let zones = Dictionary(uniqueKeysWithValues: definition.sources[0].zones.map { ($0.name, $0) })
        #expect(Array(zones.keys).sorted() == ["counter", "display", "entrance", "sofa"])
        func near(_ point: Point?, _ x: Double, _ y: Double) -> Bool {
            guard let point else { return false }
            return abs(point.x - x) < 2.0 / 640 && abs(point.y - y) < 2.0 / 480
        }
        let entrance = try #require(zones["entrance"]).polygon.vertices
        #expect(near(entrance[1], 0.30, 0.15), "\(entrance)")
        #expect(near(entrance[0], 0, 0.2) && near(entrance[2], 0.25, 0.9))
        let sofa = try #require(zones["sofa"]).polygon.vertices
        #expect(sofa.count == 4 && near(sofa[2], 0.70, 0.70) && near(sofa[0], 0.4, 0.4), "\(sofa)")
        // The refused save left the display as the first save wrote it.
        #expect(try #require(zones["display"]).polygon.vertices.first.map { near($0, 0.35, 0.2) } == true)
        // Every line but the edited polygon and the two added is the original's, in order: comments included.
        let before = original.components(separatedBy: "\n")
        let after = text.components(separatedBy: "\n")
        #expect(after.count == before.count + 2)
        let changed = after.enumerated().filter { !before.contains($0.element) }.map(\.element)
        #expect(changed.count == 3, "\(changed)")
        #expect(
            after.filter { before.contains($0) } == before.filter { $0 != before.first { $0.contains("[0.25, 0.2]") } })
        #expect(!editor.log.contains("error"))

        // Unsaved edits: the sofa's first edge dragged from its middle has a corner there, between its first two.
        let page = report.edited.zones
        func close(_ point: [Double]?, _ x: Double, _ y: Double) -> Bool {
            near(point.map { Point(x: $0[0], y: $0[1]) }, x, y)
        }
        let edgedSofa = try #require(page["sofa"])
        #expect(edgedSofa.count == 5 && close(edgedSofa[1], 0.55, 0.30), "\(edgedSofa)")
        // The corner the counter and the display shared, dragged with the display selected, moved the display's.
        #expect(close(page["display"]?[1], 0.66, 0.12), "\(page)")
        #expect(close(page["counter"]?[0], 0.62, 0.2), "\(page)")
        // Every name is drawn, inside the frame.
        let labels = report.edited.labels
        #expect(
            Set(labels.map(\.name)) == ["entrance", "display", "counter", "sofa"] && labels.allSatisfy(\.inside),
            "\(labels)")
    }

    /// A PUT of the zones as the page sends them, as raw HTTP: the status line's code and the body.
    static func put(_ port: Int, _ body: Data) async throws -> (status: Int, body: String) {
        let connection = try RawConnection(port: port)
        _ = connection.send(
            "PUT /api/zones HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nContent-Type: application/json\r\nContent-Length: \(body.count)\r\nConnection: close\r\n\r\n"
        )
        _ = connection.send(body)
        let (data, _) = await connection.received(seconds: 20)
        let text = String(decoding: data, as: UTF8.self)
        let status = Int(text.split(separator: " ").dropFirst().first ?? "") ?? 0
        return (status, String(text[(text.range(of: "\r\n\r\n")?.upperBound ?? text.endIndex)...]))
    }

    /// The zones the editor serves, and a save that moves the entrance's first corner by `dx`.
    static func edit(_ port: Int, dx: Double) async throws -> Data {
        let (_, body) = try await LoopbackClient.fetch(port: port, path: "/api/zones")
        var zones = try #require(try JSONSerialization.jsonObject(with: body) as? [String: Any])
        var sources = try #require(zones["sources"] as? [[String: Any]])
        var list = try #require(sources[0]["zones"] as? [[String: Any]])
        var polygon = try #require(list[0]["polygon"] as? [[Double]])
        polygon[0][0] += dx
        list[0]["polygon"] = polygon
        sources[0]["zones"] = list
        zones["sources"] = sources
        let edits = list.map { ["original": $0["name"]!, "name": $0["name"]!, "polygon": $0["polygon"]!] }
        return try JSONSerialization.data(withJSONObject: [
            "version": zones["version"]!, "sources": [sources[0]["id"] as! String: edits],
        ])
    }

    @Test(
        "saving writes like an editor: through a symlink into its target (the link stays, the target keeps its mode), never through a name planted beside it, one of two saves from the same version, never over a read-only file, and a file of mixed line endings is refused with a reason"
    )
    func saveLikeAnEditor() async throws {
        let folder = try Fixtures.temporaryFolder()
        let target = folder.appendingPathComponent("target.yml")
        let link = folder.appendingPathComponent("link.yml")
        let original = try await RunningSentinel.showroomOnClip()
        try original.write(to: target, atomically: true, encoding: .utf8)
        chmod(target.path, 0o640)
        try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
        // What a fixed temporary name once let another user plant: a link to a file that must not be touched.
        let victim = folder.appendingPathComponent("victim")
        try "untouched\n".write(to: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            at: folder.appendingPathComponent(".target.yml.saving"), withDestinationURL: victim)
        let editor = try await RunningSentinel(
            arguments: ["zones", link.path, "--port", "0"], folder: folder, database: "")
        defer { kill(editor.process.processIdentifier, SIGKILL) }

        // Two saves from the same version, at once: one is written, the other told the file changed.
        let first = try await Self.edit(editor.port, dx: 0.01)
        let second = try await Self.edit(editor.port, dx: 0.02)
        async let a = Self.put(editor.port, first)
        async let b = Self.put(editor.port, second)
        let statuses = try await [a.status, b.status].sorted()
        #expect(statuses == [200, 409], "\(statuses)")
        let attributes = try FileManager.default.attributesOfItem(atPath: link.path)
        #expect(attributes[.type] as? FileAttributeType == .typeSymbolicLink)
        let targetAttributes = try FileManager.default.attributesOfItem(atPath: target.path)
        #expect((targetAttributes[.posixPermissions] as? NSNumber)?.intValue == 0o640)
        #expect(try String(contentsOf: target, encoding: .utf8) != original)
        #expect(try String(contentsOf: victim, encoding: .utf8) == "untouched\n")
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: folder.path).filter {
                $0.hasPrefix(".target.yml.") && $0 != ".target.yml.saving"
            }.isEmpty, "no temporary file left")

        // Read-only: refused, left alone.
        chmod(target.path, 0o444)
        let saved = try String(contentsOf: target, encoding: .utf8)
        let readOnly = try await Self.put(editor.port, try await Self.edit(editor.port, dx: 0.01))
        #expect(readOnly.status == 403 && readOnly.body.contains("is read-only (mode 444)"), "\(readOnly)")
        #expect(try String(contentsOf: target, encoding: .utf8) == saved)
        #expect(!readOnly.body.contains("NSCocoaErrorDomain"))
        chmod(target.path, 0o640)

        // One CRLF line among LF lines: refused with the reason, not a crash.
        let mixed = saved.replacingOccurrences(of: "version: 1\n", with: "version: 1\r\n")
        try Data(mixed.utf8).write(to: target)
        let refused = try await Self.put(editor.port, try await Self.edit(editor.port, dx: 0.01))
        #expect(refused.status == 422 && refused.body.contains("mixed line endings"), "\(refused)")
        #expect(editor.process.isRunning)
        #expect(try String(contentsOf: target, encoding: .utf8) == mixed)
    }

    @Test(
        "/api/frame: a second beyond the recording is 400 at once, frames are taken one at a time (429 meanwhile), and another site's page is refused even for an image"
    )
    func frameBounds() async throws {
        let editor = try await Self.editorOnShowroomCopy().editor
        defer { kill(editor.process.processIdentifier, SIGKILL) }
        let (far, body) = try await LoopbackClient.fetch(
            port: editor.port, path: "/api/frame?sourceId=showroom&at=1e300")
        #expect(far.status == 400 && String(decoding: body, as: UTF8.self).contains("is beyond the recording"))
        // A path it does not serve says so, and points at no description it lacks (the API's /openapi.json).
        let (missing, said) = try await LoopbackClient.fetch(port: editor.port, path: "/nope")
        let text = String(decoding: said, as: UTF8.self)
        #expect(missing.status == 404 && text.contains("no such path: /nope") && !text.contains("openapi"), "\(text)")
        async let statuses = withTaskGroup(of: Int.self) { group in
            for second in 1...4 {
                group.addTask {
                    // A frame is decoded and detected in a debug build, beside the rest of the suite: minutes, not 30 s.
                    (try? await LoopbackClient.fetch(
                        port: editor.port, path: "/api/frame?sourceId=showroom&at=\(second)", timeoutSeconds: 150))?
                        .0.status ?? 0
                }
            }
            return await group.reduce(into: []) { $0.append($1) }
        }
        let answered = await statuses
        #expect(
            answered.contains(200) && answered.contains(429) && answered.allSatisfy { [200, 429].contains($0) },
            "\(answered)")
        for header in [("Origin", "http://evil.example"), ("Sec-Fetch-Site", "cross-site")] {
            let (head, _) = try await LoopbackClient.fetch(
                port: editor.port, path: "/api/frame?sourceId=showroom&at=1", headers: [header])
            #expect(head.status == 403, "\(header)")
        }
    }

    @Test(
        "every hostile request to the zone editor (Tests/Corpus/zones) gets its expected status and message, the file is never written, and the editor still answers"
    )
    func corpus() async throws {
        let cases = try Corpus.cases("zones")
        let (editor, pipeline, text) = try await Self.editorOnShowroomCopy()
        defer { kill(editor.process.processIdentifier, SIGKILL) }
        // The page itself may be framed by its own origin only (another site framing it could lay its own controls
        // over the editor's), as the dashboard.
        let (page, _) = try await LoopbackClient.fetch(port: editor.port, path: "/")
        #expect(page.header("Content-Security-Policy") == "frame-ancestors 'self'")
        #expect(page.header("X-Frame-Options") == "SAMEORIGIN")
        for item in cases {
            let (_, zones) = try await LoopbackClient.fetch(port: editor.port, path: "/api/zones")
            let version = try #require(
                (try JSONSerialization.jsonObject(with: zones) as? [String: Any])?["version"] as? Int)
            let raw = String(decoding: try Data(contentsOf: item.file), as: UTF8.self)
                .replacingOccurrences(of: "@PORT@", with: "\(editor.port)")
                .replacingOccurrences(of: "@VERSION@", with: "\(version)")
                .replacingOccurrences(of: "@PAD@", with: String(repeating: "x", count: 1_100_000))
            let parts = raw.components(separatedBy: "\r\n\r\n")
            let body = parts.dropFirst().joined(separator: "\r\n\r\n")
            let head = parts[0].replacingOccurrences(of: "@LENGTH@", with: "\(body.utf8.count)")
            let connection = try RawConnection(port: editor.port)
            connection.send(head + "\r\n\r\n" + body)
            var received = Data()
            let deadline = Date().addingTimeInterval(10)
            while Date() < deadline {
                let (data, closed) = await connection.received(seconds: 0.2)
                received += data
                if closed || String(decoding: received, as: UTF8.self).contains(item.expected) { break }
            }
            let answer = String(decoding: received, as: UTF8.self)
            let status = answer.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0
            #expect(
                status == item.status && answer.contains(item.expected),
                "\(item): got \(status) \(answer.prefix(400).debugDescription)")
        }
        #expect(try String(contentsOf: pipeline, encoding: .utf8) == text, "no request of the corpus saved anything")
        let (head, _) = try await LoopbackClient.fetch(port: editor.port, path: "/api/frame?sourceId=showroom&at=1")
        #expect(head.status == 200)
    }
}
