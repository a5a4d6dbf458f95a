import ArgumentParser
import Foundation
import SentinelCommandLine
import SentinelConfig
import SentinelCore
import SentinelModels
import SentinelVision

struct BenchProcess: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "process",
        abstract: "The whole process: `sentinel replay` from start to exit beside the naive Python loop, paired runs.",
        discussion: """
            What a user waits for: `sentinel replay RECORDING -o /dev/null` (start-up, model loading, decoding, \
            detection, tracking, emotion, events written) and Tests/Peers/naive_pipeline.py on the same recording with \
            the same detector model, scale, score and NMS (its imports and model loading included), each timed from \
            start to exit, one after the other, the order alternating between rounds. The default recording is \
            Recordings/hall.yml rendered (`sentinel synth Recordings/hall.yml`), a scene nothing was tuned on. The \
            pipeline's detector must be retinaface (the naive loop's); --set goes to `sentinel replay` as given \
            (`--set detector.workers=1`: one detector, as before workers were the default). Build in release.
            """)

    @Argument(help: "Recording (default: the hall scene, 1280x720).")
    var recording = "Recordings/out/hall-1280x720.mp4"

    @Option(help: "Pipeline file.")
    var pipeline = "Pipelines/showroom.yml"

    @Option(help: "Paired runs.")
    var rounds = 3

    @OptionGroup var settings: SettingOverrides
    @OptionGroup var models: ModelOptions

    func validate() throws { try checkRange(rounds, "rounds", 1...100) }

    func run() throws {
        let definition = try loadPipeline(pipeline, models: models, overrides: try settings.overrides)
        guard definition.detection.kind == .retinaface else {
            throw ValidationError(
                "\(pipeline): detector.kind is \(definition.detection.kind.rawValue); the naive loop runs retinaface")
        }
        guard FileManager.default.fileExists(atPath: recording) else {
            throw ValidationError("\(recording): no such file (render it with `sentinel synth Recordings/hall.yml`)")
        }
        let store = try models.store()
        let here = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
        var sentinel = [here.appendingPathComponent("sentinel").path, "replay", recording, "--pipeline", pipeline]
        sentinel += ["--pace", "fastest", "-o", "/dev/null"] + (models.folder.map { ["--models", $0] } ?? [])
        sentinel += settings.values.flatMap { ["--set", $0] }
        let s = definition.detectorSettings
        let naive = [
            "/usr/bin/python3", "Tests/Peers/naive_pipeline.py", recording,
            try store.path(of: definition.detectorModel ?? definition.detection.kind.defaultModel),
            try store.path(of: definition.emotionModel), "\(s.longestSide)", "\(s.scoreThreshold)",
            "\(s.nmsThreshold)",
        ]
        print("round  sentinel replay s   naive s (its loop s)   frames   sentinel fps   naive fps   sentinel / naive")
        var ratios: [Double] = []
        for round in 1...rounds {
            var sentinelSeconds = 0.0
            var naiveSeconds = 0.0
            var output = ""
            let order = round % 2 == 1 ? [true, false] : [false, true]
            for isSentinel in order {
                if isSentinel {
                    sentinelSeconds = try Self.timed(sentinel).seconds
                } else {
                    (naiveSeconds, output) = try Self.timed(naive)
                }
            }
            let summary = output.split(separator: "\n").last.map { String($0) } ?? ""
            let values =
                (try? JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any]) ?? [:]
            let frames = (values["frames"] as? NSNumber)?.doubleValue ?? 0
            let loop = (values["seconds"] as? NSNumber)?.doubleValue ?? 0
            let ratio = naiveSeconds / sentinelSeconds
            ratios.append(ratio)
            print(
                String(
                    format: "%5d  %16.2f   %7.2f (%6.2f)      %6.0f   %12.1f   %9.1f   %.2fx", round, sentinelSeconds,
                    naiveSeconds, loop, frames, frames / sentinelSeconds, frames / naiveSeconds, ratio))
        }
        let sorted = ratios.sorted()
        print(
            String(
                format: "sentinel / naive, whole process: median %.2fx, %.2f-%.2fx over %d rounds",
                sorted[sorted.count / 2], sorted.first!, sorted.last!, rounds))
    }

    /// Runs a program to its end: the seconds from start to exit, and what it printed.
    static func timed(_ command: [String]) throws -> (seconds: Double, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        let start = ContinuousClock.now
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let seconds = (ContinuousClock.now - start).seconds
        guard process.terminationStatus == 0 else {
            throw CommandError("\(command.prefix(2).joined(separator: " ")) failed (exit \(process.terminationStatus))")
        }
        return (seconds, output)
    }
}
