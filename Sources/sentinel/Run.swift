import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelPipeline
import SentinelVision

struct Run: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a pipeline as a service: every source, the SQLite store, and SSE and REST on one port.",
        discussion: """
            Events pass the privacy mask, are stored, then streamed at GET /events (SSE, resumable with \
            Last-Event-ID). REST: /api/visitors, /api/visitors/{faceId}, /api/sentiment, /api/zones, /api/reports, \
            /api/still (a camera's frame, faces masked, where privacy.review.stills allows), /healthz, /metrics, /openapi.json; the dashboard at /. SIGTERM or Ctrl-C stops intake, ends open visits (reason shutdown), flushes the \
            store, ends the streams and exits 0. A recording is played as if live: its events are placed on the wall \
            clock when playback starts.
            """)

    @Argument(help: "Pipeline file (default: the demo, Pipelines/showroom.yml or the installation's).")
    var pipeline = defaultPipeline

    @Option(help: "Pace of recordings: realtime (they play as if live), fastest, or a factor such as 4x.")
    var pace: Pacing = .realTime

    @Flag(help: "Play recordings again from the start when they end (for demos).")
    var loop = false

    @OptionGroup var serving: ServingOptions

    @Flag(help: "Log each event (pseudonymous id, type and zone only) at debug level.")
    var verbose = false

    @OptionGroup var settings: SettingOverrides
    @OptionGroup var models: ModelOptions

    func run() async throws {
        let definition: ServiceDefinition
        let overrides = try settings.overrides
        do { definition = try ServiceDefinition.load(pipeline, overrides: overrides) } catch {
            throw CommandError(error.description)
        }
        let logger = makeLogger("sentinel.run", verbose: verbose)
        var options = SentinelService.Options()
        options.pace = pace
        options.loop = loop
        options.hosting = serving.hosting(database: Self.installedDatabase(for: pipeline))
        let host = serving.host ?? definition.server.host
        let service: SentinelService
        do {
            service = try SentinelService(
                definition: definition, models: try models.store(), options: options, logger: logger
            ) { port in
                printBanner("Sentinel is serving \(definition.pipeline.file)", host: host, port: port) { base in
                    ["live events:  curl -N \(base)/events", "dashboard:    open \(base)/ in a browser"]
                }
            }
        } catch let error as any CustomStringConvertible & Error {
            throw CommandError(error.description)
        }
        try await service.run()
    }
}

extension Run {
    /// Where a pipeline file of the installation keeps its store: its folder is read-only, so in the state
    /// directory (`showroom.sqlite` for the demo). Nil for any other pipeline: its own store.path holds.
    static func installedDatabase(for pipeline: String) -> String? {
        let file = URL(fileURLWithPath: pipeline).standardizedFileURL
        guard let share = Installation.shareDirectory, file.path.hasPrefix(share.path + "/") else { return nil }
        return Installation.stateDirectories()[0].appendingPathComponent(
            file.deletingPathExtension().lastPathComponent + ".sqlite"
        ).path
    }
}

/// What `run` and `fleet` print once they listen: where, how to follow the events and the REST endpoints; and
/// readiness to the service manager (`Type=notify`): by then the store is open, the sources are started (a camera
/// still connecting says so in /healthz) and the server accepts connections.
func printBanner(_ title: String, host: String, port: Int, lines: (String) -> [String]) {
    let base = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
    let rest = [
        "REST:         \(base)/api/visitors  \(base)/api/sentiment  \(base)/api/zones  \(base)/api/reports",
        "              \(base)/api/still?sourceId=  \(base)/healthz  \(base)/metrics  \(base)/openapi.json",
    ]
    let text = ["\(title) on \(base)"] + (lines(base) + rest).map { "  " + $0 } + ["Ctrl-C stops.", "", ""]
    FileHandle.standardOutput.write(Data(text.joined(separator: "\n").utf8))
    SystemdNotify.send("READY=1\nSTATUS=\(title) on \(base)")
}
