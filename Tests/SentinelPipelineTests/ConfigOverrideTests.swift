import Foundation
import SentinelConfig
import SentinelVisitors
import Testing

@Suite("--set key=value: settings over a pipeline file, checked exactly as the file's")
struct ConfigOverrideTests {
    let text = """
        version: 1
        sources:
          - id: floor
            input: clip.mp4
            zones:
              - { name: a, polygon: [[0, 0], [0.5, 0], [0.5, 0.5]] }
              - { name: b, polygon: [[0.5, 0.5], [1, 0.5], [1, 1]], grace: { seconds: 2 } }
        tracker:
          minIoU: 0.2
        """

    func load(_ sets: String...) throws(ConfigError) -> PipelineDefinition {
        var overrides: [ConfigOverride] = []
        for set in sets { overrides.append(try ConfigOverride(set)) }
        return try PipelineDefinition.parse(text, file: "p.yml", overrides: overrides)
    }

    func problems(_ sets: String...) -> [String] {
        do {
            var overrides: [ConfigOverride] = []
            for set in sets { overrides.append(try ConfigOverride(set)) }
            _ = try PipelineDefinition.parse(text, file: "p.yml", overrides: overrides)
            return []
        } catch {
            return error.problems.map(\.description)
        }
    }

    @Test("a value replaces the file's, adds a key the file lacks, and [*] reaches every element")
    func applies() throws {
        let definition = try load(
            "tracker.minIoU=0.35", "events.referencePoint=bottom", "sources[0].zones[*].grace.seconds=1.5",
            "detector.maxFps=5")
        #expect(definition.visitors.tracker.minIoU == 0.35)
        #expect(definition.visitors.referencePoint == .bottom)
        #expect(definition.sources[0].zones.map(\.grace) == [.seconds(1.5), .seconds(1.5)])
        #expect(definition.detection.maxFps == 5)
        // The last of two for one key wins, as on any command line.
        #expect(try load("tracker.minIoU=0.1", "tracker.minIoU=0.4").visitors.tracker.minIoU == 0.4)
    }

    @Test("a bad value gets the message the same value gets in the file, naming the --set instead of a line")
    func sameMessages() throws {
        let inFile =
            (try? PipelineDefinition.parse(
                text.replacingOccurrences(of: "minIoU: 0.2", with: "minIoU: 7"), file: "p.yml"))
        #expect(inFile == nil)
        #expect(problems("tracker.minIoU=7") == ["--set tracker.minIoU=7: tracker.minIoU: 7.0 is out of range 0...1"])
        #expect(
            problems("tracker.minIOU=0.3").first?.hasPrefix(
                "--set tracker.minIOU=0.3: tracker.minIOU: unknown key \"minIOU\"; expected one of centerGate") == true)
        #expect(
            problems("sources[0].zones[*].grace=1") == [
                "--set sources[0].zones[*].grace=1: sources[0].zones[0].grace: expected a mapping with keys frames, seconds",
                "--set sources[0].zones[*].grace=1: sources[0].zones[1].grace: expected a mapping with keys frames, seconds",
            ])
        #expect(problems("sources[2].id=x") == ["--set sources[2].id=x: sources has 1 element: [2] is beyond it"])
        #expect(problems("version.x=1") == ["--set version.x=1: version is not a mapping"])
    }

    @Test(
        "an argument that is not key=value, or a key that is not a path, is refused by itself",
        arguments: [
            "nonsense", "=3", "a..b=1", "sources[x].id=1", "sources[0=1",
        ])
    func badArguments(argument: String) {
        #expect(throws: ConfigError.self) { try ConfigOverride(argument) }
    }
}
