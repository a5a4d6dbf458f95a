import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelMQTT

struct Fleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Aggregate many boxes: every site's events from an MQTT broker into one store, SSE and REST.",
        discussion: """
            Each site's box forwards its event log with outputs.mqtt; the fleet subscribes through the broker (a \
            persistent session, so a restart misses nothing; a shared subscription, so replicas in one group split \
            the load), drops duplicates by (site, id), stores every event, and serves the same API as a box over all \
            sites: streamId and sourceId are site/source, GET /events?site=a,b filters by site, /api/sentiment is the \
            fleet's gauge (k-suppressed across sites), /healthz lists each site's availability and last event. \
            SIGTERM or Ctrl-C disconnects, stores what arrived, ends the streams and exits 0.
            """)

    @Argument(help: "Fleet file (see Pipelines/fleet.yml).")
    var fleet: String?

    @OptionGroup var serving: ServingOptions

    @Flag(help: "Check the fleet file and this machine, print ok or every problem, and exit.")
    var check = false

    @Flag(help: "Print every tunable setting of a fleet file with its default and exit.")
    var reference = false

    func validate() throws {
        if fleet == nil, !reference { throw ValidationError("a fleet file is needed") }
    }

    func run() async throws {
        if reference {
            print(FleetDefinition.reference, terminator: "")
            return
        }
        let options = serving.hosting()
        let definition: FleetDefinition
        do {
            definition = try FleetDefinition.load(fleet!)
            if check {
                _ = try FleetService.preflight(definition: definition, options: options)
                print("\(definition.file): ok")
                return
            }
        } catch { throw CommandError(error.description) }
        let logger = makeLogger("sentinel.fleet")
        let host = serving.host ?? definition.server.host
        let service: FleetService
        do {
            service = try await FleetService(definition: definition, options: options, logger: logger) { port in
                printBanner(
                    "Sentinel fleet is serving \(definition.file), following \(definition.broker.connection.url),",
                    host: host, port: port
                ) { base in ["live events:  curl -N \(base)/events  (?site=a,b for some sites)"] }
            }
        } catch let error as any CustomStringConvertible & Error {
            throw CommandError(error.description)
        }
        try await service.run()
    }
}
