import ArgumentParser
import Foundation
import SentinelAssembly
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
            (`--set detector.workers=1`: one detector, as before workers were the default). Emotion's share of the \
            replay's CPU time is the CPU time its readings took (the replay's own count, on its analysis thread) over \
            the whole process's. Build in release.
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
            try store.path(of: definition.resolvedDetectorModel),
            try store.path(of: definition.emotionModel), "\(s.longestSide)", "\(s.scoreThreshold)",
            "\(s.nmsThreshold)",
        ]
        print(
            "round  sentinel replay s   naive s (its loop s)   frames   sentinel fps   naive fps   sentinel / naive   CPU s: replay, its emotion readings"
        )
        var ratios: [Double] = []
        var cpu: [(replay: Double, emotion: Double)] = []
        for round in 1...rounds {
            var sentinelSeconds = 0.0
            var naiveSeconds = 0.0
            var output = ""
            var replayCPU = 0.0
            var replayLines = ""
            let order = round % 2 == 1 ? [true, false] : [false, true]
            for isSentinel in order {
                if isSentinel {
                    (sentinelSeconds, replayLines, replayCPU) = try Self.timed(sentinel, errors: true)
                } else {
                    (naiveSeconds, output, _) = try Self.timed(naive)
                }
            }
            // "emotion: N readings, X CPU s (...)", the replay's summary line.
            let emotionCPU =
                replayLines.split(separator: "\n").first { $0.hasPrefix("emotion: ") }
                .flatMap { $0.split(separator: ", ").dropFirst().first?.split(separator: " ").first }
                .flatMap { Double($0) } ?? 0
            cpu.append((replayCPU, emotionCPU))
            let summary = output.split(separator: "\n").last.map { String($0) } ?? ""
            let values =
                (try? JSONSerialization.jsonObject(with: Data(summary.utf8)) as? [String: Any]) ?? [:]
            let frames = (values["frames"] as? NSNumber)?.doubleValue ?? 0
            let loop = (values["seconds"] as? NSNumber)?.doubleValue ?? 0
            let ratio = naiveSeconds / sentinelSeconds
            ratios.append(ratio)
            print(
                String(
                    format: "%5d  %16.2f   %7.2f (%6.2f)      %6.0f   %12.1f   %9.1f   %15.2fx   %6.2f, %.2f", round,
                    sentinelSeconds, naiveSeconds, loop, frames, frames / sentinelSeconds, frames / naiveSeconds, ratio,
                    replayCPU, emotionCPU))
        }
        let sorted = ratios.sorted()
        print(
            String(
                format: "sentinel / naive, whole process: median %.2fx, %.2f-%.2fx over %d rounds",
                sorted[sorted.count / 2], sorted.first!, sorted.last!, rounds))
        func median(_ values: [Double]) -> Double { values.sorted()[values.count / 2] }
        let shares = cpu.map { $0.emotion / $0.replay }.sorted()
        print(
            String(
                format: "emotion: %.1f %% of sentinel replay's CPU time (median, %.1f-%.1f %% over %d rounds)",
                median(shares) * 100, shares.first! * 100, shares.last! * 100, rounds))
    }

    /// Runs a program to its end: the seconds from start to exit, what it printed (on standard error with `errors`),
    /// and the CPU seconds it took.
    static func timed(_ command: [String], errors: Bool = false) throws -> (
        seconds: Double, output: String, cpu: Double
    ) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        let pipe = Pipe()
        process.standardOutput = errors ? FileHandle.nullDevice : pipe
        process.standardError = errors ? pipe : FileHandle.nullDevice
        func children() -> Double {
            var usage = rusage()
            getrusage(__rusage_who_t(RUSAGE_CHILDREN.rawValue), &usage)
            return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
                + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        }
        let before = children()
        let start = ContinuousClock.now
        try process.run()
        let output = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        let seconds = (ContinuousClock.now - start).seconds
        guard process.terminationStatus == 0 else {
            throw CommandError("\(command.prefix(2).joined(separator: " ")) failed (exit \(process.terminationStatus))")
        }
        return (seconds, output, children() - before)
    }
}
