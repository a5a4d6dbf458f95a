import ArgumentParser
import Logging

@main
struct Sentinel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Edge pipeline for visitor telemetry: faces in camera or recorded frames become visitor records.",
        subcommands: [Run.self, Detect.self, Replay.self, Check.self, Models.self, Synth.self, Eval.self, Bench.self]
    )
}

/// Logs to standard error so that standard output carries only data.
func makeLogger(_ label: String, verbose: Bool = false) -> Logger {
    var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = verbose ? .debug : .info
    return logger
}
