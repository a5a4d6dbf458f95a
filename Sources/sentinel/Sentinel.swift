import ArgumentParser
import Foundation
import Logging
import SentinelModels
import SentinelStore
import SentinelVision

@main
struct Sentinel: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Edge pipeline for visitor telemetry: faces in camera or recorded frames become visitor records.",
        version: versions,
        subcommands: [
            Run.self, Fleet.self, Detect.self, Replay.self, Check.self, Zones.self, Models.self, Synth.self, Eval.self,
            Tune.self, Diff.self, Explain.self,
        ]
    )

    /// Sentinel's own version, raised with each round of work that lands.
    static let version = "0.4.0"

    /// What `--version` prints: Sentinel's version, those of the libraries it runs on, as loaded, and each model
    /// of the manifest (as `--models` finds it by default) by its pinned checksum and where it comes from.
    static var versions: String {
        let models: [String]
        let manifest: String
        do {
            let store = try ModelStore.located(folder: ProcessInfo.processInfo.environment["SENTINEL_MODELS"])
            manifest = store.root.appendingPathComponent("models.yml").path
            models = store.manifest.models.map { "  \($0.name) sha256:\($0.sha256.prefix(12)) from \($0.source)" }
        } catch {
            manifest = "no manifest"
            models = ["  (\(error.message); set SENTINEL_MODELS)"]
        }
        return """
            sentinel \(version)
            OpenCV \(OpenCVFaceDetector.openCVVersion)
            SQLite \(EventStore.sqliteVersion)
            models (\(manifest)):
            \(models.joined(separator: "\n"))
            """
    }
}
