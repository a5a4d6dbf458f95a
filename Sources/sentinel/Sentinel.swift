import ArgumentParser
import Logging
import SentinelStore
import SentinelVision

@main
struct Sentinel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Edge pipeline for visitor telemetry: faces in camera or recorded frames become visitor records.",
        version: versions,
        subcommands: [Run.self, Detect.self, Replay.self, Check.self, Models.self, Synth.self, Eval.self, Bench.self]
    )

    /// Sentinel's own version, raised with each round of work that lands.
    static let version = "0.3.0"

    /// What `--version` prints: Sentinel's version and those of the libraries it runs on, as loaded.
    static var versions: String {
        """
        sentinel \(version)
        OpenCV \(OpenCVFaceDetector.openCVVersion)
        SQLite \(EventStore.sqliteVersion)
        models: `sentinel models list` (each with its source and whether it is ready)
        """
    }
}

/// Logs to standard error so that standard output carries only data.
func makeLogger(_ label: String, verbose: Bool = false) -> Logger {
    var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = verbose ? .debug : .info
    return logger
}
