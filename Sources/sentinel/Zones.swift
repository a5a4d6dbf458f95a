import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelHTTP

struct Zones: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Draw a pipeline's zones in a browser, on a frame of each source with every face hidden.",
        discussion: """
            Serves a page on this machine (loopback only: it writes the configuration). Drag corners, add or remove \
            zones, rename them; saving writes only the zones back into the pipeline file (comments and every other \
            line stay) and only if the file then passes `sentinel check`. Restart `sentinel run` to apply them. \
            From another machine: ssh -L 8081:127.0.0.1:8081 BOX, then open http://127.0.0.1:8081/.
            """)

    @Argument(help: "Pipeline file whose zones to edit (default: the demo, Pipelines/showroom.yml).")
    var pipeline = defaultPipeline

    @Option(help: "Address to listen on: 127.0.0.1, ::1 or localhost.")
    var host = "127.0.0.1"

    @Option(help: "Port to listen on, 0-65535 (0: any free port).")
    var port = 8081

    @OptionGroup var models: ModelOptions

    func validate() throws {
        try checkRange(port, "port", ServerSettings.portRange)
        var server = ServerSettings()
        server.host = host
        guard server.isLoopback else {
            throw ValidationError("--host \(host): the zone editor listens on loopback only (it has no tokens)")
        }
    }

    func run() async throws {
        let editor: ZoneEditor
        let store = try models.store()
        do {
            editor = try ZoneEditor(file: pipeline, models: store, logger: makeLogger("sentinel.zones"))
        } catch {
            throw CommandError("\(error.description)\nfix these first (sentinel check \(pipeline) lists them)")
        }
        try await editor.run(host: host, port: port) { [host, pipeline] port in
            let base = "http://\(host.contains(":") ? "[\(host)]" : host):\(port)"
            FileHandle.standardOutput.write(
                Data("Zone editor for \(pipeline) on \(base)/\n  open it in a browser; Ctrl-C stops.\n\n".utf8))
        }
    }
}
