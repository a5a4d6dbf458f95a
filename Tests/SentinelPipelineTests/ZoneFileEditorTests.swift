import Foundation
import Logging
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelPipeline
import SentinelTestSupport
import SentinelVision
import SentinelVisitors
import SentinelWire
import Testing

@Suite("Zone editor: zones written back into a pipeline file", .computing)
struct ZoneFileEditorTests {
    /// Two cameras, comments everywhere, a pixel zone, a zone whose polygon spans lines, a comment inside a zone.
    static let original = """
        # Two cameras at the front of the shop.
        version: 1
        sources:
          - id: door   # the street door
            input: rtsp://camera-1.local/stream
            zones:
              # Where people come in.
              - name: entrance
                polygon: [[0.0, 0.2], [0.25, 0.2], [0.25, 0.9], [0.0, 0.9]]  # measured on site
                inertia: { seconds: 0.3 }
              # Staff only.
              - name: counter
                units: pixels
                polygon:
                  - [500, 100]
                  - [640, 100]
                  - [640, 400]
                # The EU AI Act: no emotion at work.
                emotion: false
            # How fast frames come.
            pace: realtime
          - id: hall
            input: rtsp://camera-2.local/stream
        # The detector.
        detector:
          kind: retinaface   # default
        """

    static func edit(_ edits: [String: [ZoneEdit]], _ text: String = original) throws -> String {
        let result = try ZoneFileEditor.apply(edits, to: text, file: "shop.yml")
        // Whatever the editor writes is a valid pipeline, by the same reader `sentinel check` uses.
        _ = try ServiceDefinition.parse(result, file: "shop.yml")
        return result
    }

    @Test("moving points, renaming, removing and adding zones change those lines and no other")
    func editsInPlace() throws {
        let result = try Self.edit([
            "door": [
                ZoneEdit(original: "entrance", name: "way-in", polygon: [[0.05, 0.2], [0.3, 0.2], [0.3, 0.95]]),
                ZoneEdit(
                    original: "counter", name: "counter", polygon: [[480, 90], [640, 90], [640, 410], [480, 410]]),
            ],
            "hall": [ZoneEdit(original: nil, name: "sofa", polygon: [[0.1, 0.1], [0.5, 0.1], [0.5, 0.6]])],
        ])
        #expect(
            result == """
                # Two cameras at the front of the shop.
                version: 1
                sources:
                  - id: door   # the street door
                    input: rtsp://camera-1.local/stream
                    zones:
                      # Where people come in.
                      - name: way-in
                        polygon: [[0.05, 0.2], [0.3, 0.2], [0.3, 0.95]]  # measured on site
                        inertia: { seconds: 0.3 }
                      # Staff only.
                      - name: counter
                        units: pixels
                        polygon: [[480.0, 90.0], [640.0, 90.0], [640.0, 410.0], [480.0, 410.0]]
                        # The EU AI Act: no emotion at work.
                        emotion: false
                    # How fast frames come.
                    pace: realtime
                  - id: hall
                    input: rtsp://camera-2.local/stream
                    zones:
                      - name: sofa
                        polygon: [[0.1, 0.1], [0.5, 0.1], [0.5, 0.6]]
                # The detector.
                detector:
                  kind: retinaface   # default
                """)
        let definition = try ServiceDefinition.parse(result, file: "shop.yml").pipeline
        #expect(definition.zoneIDs.map(\.description) == ["door/way-in", "door/counter", "hall/sofa"])
        #expect(definition.sources[0].zones[1].units == .pixels)
        #expect(definition.sources[0].zones[1].emotion == false)
    }

    @Test(
        "a zone removed takes its lines, not the comment of the next; none left is an empty list; added after the last")
    func removeAndAdd() throws {
        let removed = try Self.edit([
            "door": [
                ZoneEdit(original: "counter", name: "counter", polygon: [[500, 100], [640, 100], [640, 400]]),
                ZoneEdit(
                    original: nil, name: "display", polygon: [[0.4, 0.2], [0.6, 0.2], [0.6, 0.8], [0.4, 0.8]]),
            ]
        ])
        #expect(!removed.contains("entrance") && !removed.contains("measured on site"))
        #expect(removed.contains("      # Where people come in.\n      # Staff only.\n      - name: counter\n"))
        #expect(
            removed.contains(
                "    # The EU AI Act: no emotion at work.\n        emotion: false\n"
                    + "      - name: display\n        polygon: [[0.4, 0.2], [0.6, 0.2], [0.6, 0.8], [0.4, 0.8]]\n"
                    + "    # How fast frames come.\n"))
        let none = try Self.edit(["door": []])
        #expect(none.contains("    zones: []\n    # How fast frames come.\n    pace: realtime\n"))
        #expect(try ServiceDefinition.parse(none, file: "shop.yml").pipeline.zoneIDs.isEmpty)
        // And back from an empty list.
        let again = try Self.edit(
            ["door": [ZoneEdit(original: nil, name: "a", polygon: [[0, 0], [1, 0], [1, 1]])]], none)
        #expect(again.contains("    zones:\n      - name: a\n        polygon: [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]\n"))
    }

    @Test("what the editor cannot place, or the file cannot hold, is refused with its place and reason")
    func refusals() throws {
        func message(_ edits: [String: [ZoneEdit]], _ text: String = Self.original) -> String {
            do {
                _ = try Self.edit(edits, text)
                return "accepted"
            } catch let error as ConfigError {
                return error.message
            } catch {
                return "\(error)"
            }
        }
        let triangle: [[Double]] = [[0.1, 0.1], [0.5, 0.1], [0.5, 0.6]]
        #expect(message(["garage": []]).contains("no source \"garage\""))
        #expect(
            message(["door": [ZoneEdit(original: "exit", name: "exit", polygon: triangle)]]).contains("not in source"))
        #expect(message(["door": [ZoneEdit(original: nil, name: "a b", polygon: triangle)]]).contains("may hold only"))
        // The same checks as `sentinel check`: a twisted polygon, a point outside the frame, a name used twice.
        #expect(
            message(["door": [ZoneEdit(original: nil, name: "x", polygon: [[0, 0], [1, 0], [0.2, 1], [1, 0.8]])]])
                .contains("shop.yml:10:18: sources[0].zones[0].polygon: self-intersecting polygon"))
        #expect(
            message(["door": [ZoneEdit(original: nil, name: "x", polygon: [[0, 0], [1.5, 0], [1, 1]])]])
                .contains("outside the frame"))
        #expect(
            message([
                "door": [
                    ZoneEdit(original: "entrance", name: "counter", polygon: triangle),
                    ZoneEdit(original: "counter", name: "counter", polygon: [[500, 100], [640, 100], [640, 400]]),
                ]
            ]).contains("zone name \"counter\" is used twice"))
        let flow = """
            version: 1
            sources:
              - { id: door, input: a.mp4, zones: [{ name: a, polygon: [[0, 0], [1, 0], [1, 1]] }] }
            """
        #expect(message(["door": []], flow).contains("flow style"))
    }

    @Test("the demo pipeline round-trips: the same zones written back change nothing; CRLF and a BOM stay")
    func roundTrip() throws {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent(
            "../../Pipelines/showroom.yml")
        let text = try String(contentsOf: url, encoding: .utf8)
        let definition = try ServiceDefinition.parse(text, file: url.path).pipeline
        let same = Dictionary(
            uniqueKeysWithValues: definition.sources.map { source in
                (
                    source.id,
                    source.zones.map {
                        ZoneEdit(original: $0.name, name: $0.name, polygon: $0.polygon.vertices.map { [$0.x, $0.y] })
                    }
                )
            })
        #expect(try Self.edit(same, text) == text)
        let windows = "\u{FEFF}" + Self.original.replacingOccurrences(of: "\n", with: "\r\n")
        let edited = try ZoneFileEditor.apply(
            ["hall": [ZoneEdit(original: nil, name: "sofa", polygon: [[0.1, 0.1], [0.5, 0.1], [0.5, 0.6]])]],
            to: windows, file: "shop.yml")
        #expect(edited.hasPrefix("\u{FEFF}# Two cameras"))
        #expect(edited.contains("stream\r\n    zones:\r\n      - name: sofa\r\n"))
        #expect(!edited.replacingOccurrences(of: "\r\n", with: "").contains("\n"))
    }
}

@Suite("Zone editor: the frame it shows", .computing)
struct SourceSnapshotTests {
    @Test("a frame with people in it comes with every face hidden: no detection left, no detail where faces were")
    func facesHidden() throws {
        let definition = try PipelineDefinition.load(
            Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path)
        let snapshot = try SourceSnapshot.take(
            definition: definition, source: definition.sources[0], models: Fixtures.store, at: 8,
            logger: Logger(label: "test"))
        // The same frame, as the recording has it.
        let video = try VideoFileSource(path: definition.sources[0].resolvedInput)
        var raw: Frame?
        while let frame = try video.next(), frame.time.seconds <= snapshot.time { raw = frame }
        let original = try #require(raw)
        #expect(abs(original.time.seconds - snapshot.time) < 0.001 && snapshot.time >= 8)
        let file = try Fixtures.temporaryFolder().appendingPathComponent("frame.jpg")
        try Data(snapshot.jpeg).write(to: file)
        let shown = try Image(contentsOf: file.path)
        #expect(shown.width == original.image.width && shown.height == original.image.height)
        let detector = try OpenCVFaceDetector(
            kind: definition.detection.kind, modelPath: try Fixtures.model(definition.detection.kind.defaultModel),
            settings: definition.detectorSettings)
        let faces = try detector.detect(original.image)
        #expect(!faces.isEmpty, "the frame at 8 s has a visitor in it")
        #expect(snapshot.masked >= faces.count)
        #expect(try detector.detect(shown).isEmpty)
        for face in faces {
            let ratio = try shown.detail(in: face.box) / max(try original.image.detail(in: face.box), 1e-9)
            #expect(ratio < 0.2, "detail left where a face was: \(ratio)")
        }
    }

    @Test(
        "a frame deep in a recording is reached by seeking to shortly before it: the same frame as from the start, every face in it hidden either way"
    )
    func seeks() throws {
        var definition = try PipelineDefinition.load(
            Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path)
        // The seek itself lands on the exact frame, numbered as in the file.
        let video = try VideoFileSource(path: definition.sources[0].resolvedInput)
        try video.seek(to: 30)
        let first = try #require(try video.next())
        #expect(abs(first.time.seconds - 30) < 0.5 / video.nominalFPS && first.index == Int(30 * video.nominalFPS))
        func snapshot() throws -> SourceSnapshot {
            try SourceSnapshot.take(
                definition: definition, source: definition.sources[0], models: Fixtures.store, at: 30,
                logger: Logger(label: "test"))
        }
        let sought = try snapshot()
        // Visits that outlast the recording: the frame is only reached by running from the start.
        definition.visitors.tracker.visitTimeoutSeconds = 60
        let fromStart = try snapshot()
        #expect(sought.time == fromStart.time && abs(sought.time - 30) < 0.5 / video.nominalFPS)
        #expect(sought.masked > 0 && fromStart.masked > 0)
        // The faces' masks are the tracker's, the same either way; what is masked beyond them depends on the empty
        // scene learned since the first frame run (ForegroundWatch), so it may differ. Every face in view is hidden
        // either way.
        let truth = try JSONDecoder().decode(
            GroundTruth.self,
            from: Data(
                contentsOf: SceneRenderer.truthURL(for: URL(fileURLWithPath: definition.sources[0].resolvedInput))))
        let faces = try #require(truth.frames.first { $0.index == first.index }?.faces.filter { $0.visible >= 0.15 })
        #expect(!faces.isEmpty)
        let folder = try Fixtures.temporaryFolder()
        for (name, snapshot) in [("sought", sought), ("fromStart", fromStart)] {
            let file = folder.appendingPathComponent("\(name).jpg")
            try Data(snapshot.jpeg).write(to: file)
            let shown = try Image(contentsOf: file.path)
            for face in faces {
                let ratio = try shown.detail(in: face.box) / max(try first.image.detail(in: face.box), 1e-9)
                #expect(ratio < 0.25, "\(name): detail left where \(face.visitor) is: \(ratio)")
            }
        }
    }
}
