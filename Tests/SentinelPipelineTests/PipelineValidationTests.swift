import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelModels
import SentinelPipeline
import SentinelPrivacy
import SentinelStore
import SentinelTestSupport
import SentinelVision
import SentinelVisitors
import Testing

@Suite("Pipeline files: every problem with its line and field")
struct PipelineValidationTests {
    /// A valid pipeline with `zones` and `extra` spliced in.
    func pipeline(zones: String = "      - { name: a, polygon: [[0, 0], [0.5, 0], [0.5, 0.5]] }", extra: String = "")
        -> String
    {
        """
        version: 1
        sources:
          - id: floor
            input: clip.mp4
            zones:
        \(zones)
        \(extra)
        """
    }

    /// What `sentinel check` says of a file: the pipeline's problems and those of the service's sections.
    func problems(_ text: String) -> [String] {
        do {
            _ = try ServiceDefinition.parse(text, file: "p.yml")
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test("the repository's showroom pipeline is valid on a set-up machine")
    func showroomIsValid() throws {
        let definition = try PipelineDefinition.load(
            Fixtures.root.appendingPathComponent("Pipelines/showroom.yml").path)
        #expect(definition.sources.map(\.id) == ["showroom"])
        #expect(definition.sources[0].zones.map(\.name) == ["entrance", "display", "counter"])
        #expect(definition.sources[0].zones[2].emotion == false)
        #expect(
            definition.environmentProblems(
                models: Fixtures.store, frameSize: VideoFileSource.frameSize(of:), openClassifier: FaceClassifier.open
            ).isEmpty)
        // Its privacy section writes out the defaults that PRIVACY.md documents: it must equal the code's, but for
        // the one thing the demo allows beyond them, its camera on the dashboard.
        var defaults = PrivacyPolicy()
        defaults.review.stills = true
        #expect(definition.privacy == defaults)
    }

    @Test("privacy settings are read: rotation, key file beside the pipeline, allow and deny per output")
    func privacySettings() throws {
        let text = pipeline(
            extra: """
                privacy:
                  pseudonyms: { rotate: hourly, keyFile: keys/pseudonym.key }
                  timestampResolution: 0
                  minGroupSize: 5
                  retention: { days: 7, checkEveryMinutes: 15 }
                  outputs: { store: { allow: [visitor.box], deny: [visitor.valence] } }
                  review: { mask: pixelate, scale: 2, followTracks: false }
                """)
        let policy = try PipelineDefinition.parse(text, file: "/etc/sentinel/p.yml").privacy
        #expect(
            policy.pseudonyms.rotationSeconds == 3_600
                && policy.pseudonyms.keyFile == "/etc/sentinel/keys/pseudonym.key")
        #expect(policy.timestampResolution == 0 && policy.minGroupSize == 5)
        #expect(policy.retention.maxAgeSeconds == 7 * 86_400 && policy.retention.intervalSeconds == 900)
        #expect(policy.outputs[.store] == PublishedField.defaults.union([.box]).subtracting([.valence]))
        #expect(policy.outputs[.events] == PublishedField.defaults)
        #expect(policy.review.mask == .pixelate && policy.review.scale == 2 && !policy.review.followTracks)
    }

    @Test("a duplicate key is reported at its second occurrence, in one line, not with the whole file")
    func duplicateKey() throws {
        let top = try #require(throws: ConfigError.self) {
            try PipelineDefinition.parse(pipeline(extra: "version: 2"), file: "p.yml")
        }
        #expect(top.description == "p.yml:7:1: duplicate key version (first at line 1)")
        let nested = try #require(throws: ConfigError.self) {
            try PipelineDefinition.parse(
                pipeline(zones: "      - { name: a, polygon: [[0, 0], [0.5, 0], [0.5, 0.5]] }\n    id: b"),
                file: "p.yml")
        }
        #expect(nested.description == "p.yml:7:5: duplicate key id (first at line 3)")
    }

    @Test("a file that is not UTF-8 is reported with the line and column of the first bad byte")
    func notUTF8() throws {
        let file = try Fixtures.temporaryFolder().appendingPathComponent("latin1.yml")
        try (Data(pipeline().utf8) + Data("# caf".utf8) + Data([0xE9]) + Data("\n".utf8)).write(to: file)
        let error = try #require(throws: ConfigError.self) { try PipelineDefinition.load(file.path) }
        #expect(
            error.description.hasPrefix("\(file.path):7:6: not UTF-8 text"), "\(String(describing: error))")
    }

    @Test("a minimal pipeline gets the documented defaults")
    func defaults() throws {
        let definition = try PipelineDefinition.parse(pipeline(), file: "p.yml")
        #expect(
            definition.detection.kind == .retinaface && definition.detectorSettings.longestSide == 320
                && definition.emotionEnabled)
        #expect(
            definition.sources[0].zones[0].inertia == .seconds(0.3)
                && definition.sources[0].zones[0].grace == .seconds(0.5))
        #expect(definition.sources[0].resolvedInput == URL(fileURLWithPath: "clip.mp4").standardizedFileURL.path)
    }

    @Test(
        "each mistake yields its precise message",
        arguments: [
            (
                "", "detector: { kind: scrfd }",
                "p.yml:7:19: detector.kind: \"scrfd\" is not one of cascade, centerface, yunet, retinaface"
            ),
            ("", "detector: { score: high }", "p.yml:7:20: detector.score: expected a number"),
            ("", "detector: { score: 1.5 }", "p.yml:7:20: detector.score: 1.5 is out of range 0...1"),
            ("", "tracker: { confirmFrames: 2.5 }", "p.yml:7:27: tracker.confirmFrames: expected a whole number"),
            (
                "", "output: stdout",
                "p.yml:7:1: output: unknown key \"output\"; expected one of detector, emotion, events, gauge, outputs, privacy, server, sources, store, tracker, version; did you mean \"outputs\"?"
            ),
            (
                "", "privacy: { outputs: { events: { allow: [visitor.face] } } }",
                "p.yml:7:41: privacy.outputs.events.allow[0]: unknown field \"visitor.face\"; fields are stay, reason, visitor.zones, visitor.dwellSeconds, visitor.firstSeen, visitor.lastSeen, visitor.emotion, visitor.emotionConfidence, visitor.valence, visitor.emotionDistribution, visitor.box, visitor.detectionScore, mediaTime"
            ),
            (
                "", "privacy: { outputs: { store: { deny: [visitor.faceId] } } }",
                "p.yml:7:39: privacy.outputs.store.deny[0]: \"visitor.faceId\" is a core field: every event carries it"
            ),
            (
                "", "privacy: { outputs: { sse: {} } }",
                "p.yml:7:23: privacy.outputs.sse: unknown key \"sse\"; expected one of events, mqtt, store"
            ),
            (
                "", "privacy: { outputs: { mqtt: { allow: [visitor.box] } } }",
                "p.yml:7:39: privacy.outputs.mqtt.allow[0]: \"visitor.box\" cannot be allowed in privacy.outputs.mqtt: it is not in the event log this output forwards; allow it in privacy.outputs.events too"
            ),
            (
                // An allow with no effect: the published copy is cut from the store's, which keeps no box.
                "", "privacy: { outputs: { events: { allow: [visitor.emotionDistribution] } } }",
                "p.yml:7:41: privacy.outputs.events.allow[0]: \"visitor.emotionDistribution\" cannot be allowed in privacy.outputs.events: the store does not keep it, and what is published is cut from what is stored; allow it in privacy.outputs.store too"
            ),
            (
                "", "privacy: { pseudonyms: { rotate: monthly } }",
                "p.yml:7:34: privacy.pseudonyms.rotate: expected hourly, daily, weekly or a number from 60 to 31622400"
            ),
            (
                "", "privacy: { review: { mask: mosaic } }",
                "p.yml:7:28: privacy.review.mask: \"mosaic\" is not one of blur, pixelate, solid"
            ),
            ("", "server: { port: 99999 }", "p.yml:7:17: server.port: 99999 is out of range 0...65535"),
            (
                "", "outputs: { mqtt: { url: http://x, site: lab } }",
                "p.yml:7:25: outputs.mqtt.url: \"http://x\" is not a broker URL such as mqtt://broker.local:1883 or mqtts://broker:8883"
            ),
            (
                "", "privacy: { retention: { days: 0 } }",
                "p.yml:7:31: privacy.retention.days: 0.0 is out of range 0.01...3650"
            ),
            (
                "", "server: { corsOrigins: [dashboard.example.com] }",
                "p.yml:7:25: server.corsOrigins[0]: \"dashboard.example.com\" is not an origin such as https://dashboard.example.com (scheme, host and port only)"
            ),
            (
                "", "gauge: { windowSecs: 300 }",
                "p.yml:7:10: gauge.windowSecs: unknown key \"windowSecs\"; expected one of changeScore, publishEverySeconds, staleAfterSeconds, windowSeconds; did you mean \"windowSeconds\"?"
            ),
            (
                "      - { name: a, polygon: [[0, 0], [1, 0], [0.2, 1], [1, 0.6]] }", "",
                "p.yml:6:29: sources[0].zones[0].polygon: self-intersecting polygon: edge 2 crosses edge 4"
            ),
            (
                "      - { name: a, polygon: [[0, 0], [0.5, 0.5], [1, 1]] }", "",
                "p.yml:6:29: sources[0].zones[0].polygon: degenerate polygon: its points enclose no area"
            ),
            (
                "      - { name: a, polygon: [[0, 0], [1, 0]] }", "",
                "p.yml:6:29: sources[0].zones[0].polygon: a polygon needs at least 3 points, found 2"
            ),
            (
                "      - { name: a, polygon: [[0, 0], [1.5, 0], [1, 1]] }", "",
                "p.yml:6:38: sources[0].zones[0].polygon[1]: point [1.5, 0.0] is outside the frame (normalized coordinates run from 0 to 1)"
            ),
            (
                "      - { name: a, polygon: [[0, 0], [1, 0], [1, 1]], inertia: { seconds: 1, frames: 2 } }", "",
                "p.yml:6:64: sources[0].zones[0].inertia: give either seconds or frames"
            ),
            (
                "      - { name: a, polygon: [[0, 0], [1, 0], [1, 1]], colour: red }", "",
                "p.yml:6:55: sources[0].zones[0].colour: unknown key \"colour\"; expected one of emotion, grace, inertia, name, polygon, units"
            ),
            (
                "      - { polygon: [[0, 0], [1, 0], [1, 1]] }", "",
                "p.yml:6:9: sources[0].zones[0].name: missing required key \"name\""
            ),
        ])
    func preciseMessages(zones: String, extra: String, expected: String) {
        let text = zones.isEmpty ? pipeline(extra: extra) : pipeline(zones: zones, extra: extra)
        #expect(problems(text) == [expected])
    }

    @Test("every problem in a file is reported at once, in file order")
    func allProblemsAtOnce() {
        let text = pipeline(
            zones:
                "      - { name: a, polygon: [[0, 0], [2, 0], [1, 1]] }\n      - { name: a, polygon: [[0, 0], [1, 0], [1, 1]] }",
            extra: "detector: { kind: x, nms: -1 }\ntracker: { lowScore: 0.9, highScore: 0.5 }")
        let found = problems(text)
        #expect(found.count == 5, "\(found)")
        #expect(found.first?.hasPrefix("p.yml:6:38: sources[0].zones[0].polygon[1]") == true)
        #expect(found.last?.hasPrefix("p.yml:9:") == true)
        #expect(found.contains { $0.contains("zone name \"a\" is used twice") })
    }

    @Test("broken YAML says where")
    func brokenYAML() {
        let found = problems("version: 1\nsources: [\n  - id: x\n")
        #expect(found.count == 1 && found[0].hasPrefix("p.yml:3:") && found[0].contains("invalid YAML"), "\(found)")
    }

    @Test("missing models, missing inputs and pixel zones outside the frame are found on this machine")
    func environment() throws {
        let folder = try Fixtures.temporaryFolder()
        try FileManager.default.copyItem(
            at: Fixtures.root.appendingPathComponent("Models/models.yml"),
            to: folder.appendingPathComponent("models.yml"))
        let empty = try ModelStore(root: folder.path)
        let text = """
            version: 1
            sources:
              - id: a
                input: \(Fixtures.recording())
                zones:
                  - { name: big, units: pixels, polygon: [[0, 0], [700, 0], [700, 100]] }
              - id: b
                input: missing.mp4
            """
        let definition = try PipelineDefinition.parse(text, file: "p.yml")
        let found = definition.environmentProblems(
            models: empty, frameSize: VideoFileSource.frameSize(of:), openClassifier: FaceClassifier.open
        ).map(
            \.description)
        #expect(
            found.contains {
                $0.hasPrefix("p.yml: detector: model retinaface is missing") && $0.contains("sentinel models setup")
            })
        #expect(found.contains { $0.hasPrefix("p.yml: emotion: model emotion is missing") })
        #expect(found.contains { $0.hasPrefix("p.yml:8:12: sources[1].input: no such file") })
        #expect(
            found.contains {
                $0.hasPrefix(
                    "p.yml:6:9: sources[0].zones[0].polygon: zone big: point [700.0, 0.0] is outside the 640x480 frame")
            })
    }
}

@Suite("Pipeline settings: one declaration for parsing, checking and the reference")
struct PipelineReferenceTests {
    @Test("docs/reference.md holds what sentinel check --reference prints, whole, as its one YAML block")
    func referenceFileIsCurrent() async throws {
        let page = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/reference.md"), encoding: .utf8)
        let printed = try await Fixtures.run(Fixtures.sentinel, ["check", "--reference"])
        #expect(printed.status == 0 && printed.output == ServiceDefinition.reference)
        let blocks = page.components(separatedBy: "```yaml\n").dropFirst()
        #expect(
            blocks.count == 1 && blocks.first?.hasPrefix(printed.output + "```\n") == true,
            "regenerate it: make reference")
    }

    @Test(
        "the reference is a valid pipeline (given a source) whose every value is the default; replay, which reads the pipeline alone, takes it too"
    )
    func referenceParsesToDefaults() throws {
        let source = "sources:\n  - id: door\n    input: door.mp4\n"
        let reference = try ServiceDefinition.parse(ServiceDefinition.reference + source, file: "reference.yml")
        let plain = try ServiceDefinition.parse("version: 1\n" + source, file: "reference.yml")
        #expect(reference.pipeline.detectorSettings == plain.pipeline.detectorSettings)
        #expect(reference.pipeline.visitors == plain.pipeline.visitors)
        #expect(reference.pipeline.gauge == plain.pipeline.gauge)
        #expect(reference.pipeline.privacy == plain.pipeline.privacy)
        #expect(reference.store.bufferEvents == plain.store.bufferEvents)
        #expect(reference.server == plain.server)
        let pipelineOnly = try PipelineDefinition.parse(ServiceDefinition.reference + source, file: "reference.yml")
        #expect(pipelineOnly.visitors == plain.pipeline.visitors)
    }

    @Test("store.group must name a group of this machine, said with its line")
    func storeGroup() throws {
        let text = "version: 1\nsources:\n  - id: door\n    input: rtsp://cam/1\nstore:\n  group: %@\n"
        func check(_ group: String) throws -> [String] {
            let definition = try ServiceDefinition.parse(
                text.replacingOccurrences(of: "%@", with: group), file: "p.yml")
            #expect(definition.store.group == group)
            do {
                _ = try SentinelService.preflight(definition: definition, models: Fixtures.store)
                return []
            } catch { return error.problems.map(\.description) }
        }
        #expect(
            try check("no-such-grp").contains(
                "p.yml:6:10: store.group: no such group no-such-grp on this machine (see getent group)"))
        let own = String(cString: try #require(getgrgid(getegid())).pointee.gr_name)
        #expect(try check(own).allSatisfy { !$0.contains("store.group") })
    }

    @Test("a declared setting is checked against its declared range, with file, line and field")
    func declaredRanges() throws {
        let error = #expect(throws: ConfigError.self) {
            try PipelineDefinition.parse(
                "version: 1\nsources:\n  - id: door\n    input: door.mp4\ngauge:\n  windowSeconds: 5\n", file: "p.yml")
        }
        #expect(error?.code == .invalid)
        #expect(error?.message == "p.yml:6:18: gauge.windowSeconds: 5.0 is out of range 10...86400")
    }
}
