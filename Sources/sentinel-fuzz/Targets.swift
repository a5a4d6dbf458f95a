import Foundation
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelTuning

/// Every parser of outside input, as a fuzz target: bytes in, any outcome but a crash, a hang or unbounded memory.
/// Each target names the corpus folders its seeds come from (`Tests/Corpus/...` and the shipped files); a case a
/// fuzzer finds goes into those folders, with its expected outcome, and stays there.
enum FuzzTarget: String, CaseIterable {
    /// ISO-8601 dates: REST query parameters, MQTT envelopes, label and event files.
    case dates
    /// MOT Challenge text, CVAT XML, Label Studio JSON, Sentinel's truth JSON (`eval`, `tune`).
    case mot, cvat, labelstudio, truth
    /// A site's visitor event or gauge reading, as the fleet decodes and checks it (`EventCheck`).
    case event
    /// A pipeline file, with a `--set` taken from its first line; a fleet file; a tuning space.
    case pipeline, fleet, space

    /// Where its seeds are: folders (every file in them) or files, relative to the repository, and the extensions
    /// taken from folders (none: all).
    var seeds: (paths: [String], extensions: Set<String>) {
        switch self {
        case .dates: (["Tests/Corpus/dates"], [])
        case .mot: (["Tests/Corpus/labels"], ["txt"])
        case .cvat: (["Tests/Corpus/labels"], ["xml"])
        case .labelstudio, .truth: (["Tests/Corpus/labels"], ["json"])
        case .event: (["Tests/Corpus/mqtt"], ["json"])
        case .pipeline: (["Tests/Corpus/pipelines", "Pipelines/showroom.yml", "Pipelines/reference.yml"], ["yml"])
        case .fleet: (["Pipelines/fleet.yml"], ["yml"])
        case .space: (["Tests/Corpus/spaces"], ["yml"])
        }
    }

    /// Reads `bytes` as this target's input; every error is an expected outcome.
    func run(_ bytes: [UInt8]) {
        let data = Data(bytes)
        switch self {
        case .dates:
            _ = ISO8601.date(from: String(decoding: bytes, as: UTF8.self))
        case .mot, .cvat, .labelstudio, .truth:
            let format: TrackFile.Format = [.mot: .mot, .cvat: .cvat, .labelstudio: .labelStudio][self] ?? .sentinel
            _ = try? TrackFile.parse(data, format: format, path: "fuzz")
            // And bounded by a video, which takes other paths (the size check, a project's task by name).
            _ = try? TrackFile.parse(
                data, format: format, path: "fuzz",
                video: VideoBounds(frames: 100, width: 64, height: 48, name: "a.mp4"))
        case .event:
            let check = EventCheck(timeResolution: 1)
            let decoder = JSONDecoder.sentinel()
            if let event = try? decoder.decode(Envelope<VisitorEvent>.self, from: data) {
                try? check.validate(event.payload)
            }
            if let reading = try? decoder.decode(Envelope<GaugeReading>.self, from: data) {
                try? check.validate(reading.payload)
            }
        case .pipeline:
            let text = String(decoding: bytes, as: UTF8.self)
            let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            let overrides = lines.first.flatMap { try? ConfigOverride(String($0)) }.map { [$0] } ?? []
            _ = try? PipelineDefinition.parse(text, file: "fuzz.yml", overrides: overrides)
        case .fleet:
            _ = try? FleetDefinition.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.yml")
        case .space:
            _ = try? SearchSpace.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.yml")
        }
    }

    private struct Envelope<Payload: Decodable>: Decodable {
        var payload: Payload
    }
}
