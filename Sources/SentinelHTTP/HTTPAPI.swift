import CoreMetrics
import Foundation
import HTTPTypes
public import Hummingbird
import HummingbirdCore
public import Logging
public import SentinelConfig
import SentinelCore
public import SentinelPrivacy
public import SentinelRuntime
public import SentinelStore
package import ServiceLifecycle

/// The HTTP surface of `sentinel run`: `/events` (SSE), the REST API, `/healthz`, `/metrics` and `/openapi.json`.
public struct HTTPAPI: Sendable {
    let settings: ServerSettings
    let store: any EventLog
    let live: LiveState
    let hub: Hub
    let broadcaster: Broadcaster
    let telemetry: Telemetry
    let tokens: AccessTokens
    /// k and the reports' rules: what the REST handlers publish under.
    let aggregation: Aggregation
    let logger: Logger

    public init(
        settings: ServerSettings, store: any EventLog, live: LiveState, hub: Hub, broadcaster: Broadcaster,
        telemetry: Telemetry, tokens: AccessTokens, aggregation: Aggregation, logger: Logger
    ) {
        self.settings = settings
        self.store = store
        self.live = live
        self.hub = hub
        self.broadcaster = broadcaster
        self.telemetry = telemetry
        self.tokens = tokens
        self.aggregation = aggregation
        self.logger = logger
    }

    /// The HTTP server answering this API, with the server settings' limits; `onListening` gets the bound port.
    package func application(onListening: @escaping @Sendable (Int) async -> Void) -> some Service {
        let roster = IdleConnections(
            limit: settings.maxConnections,
            open: { [telemetry] in telemetry.httpConnections.record($0) },
            closedToMakeRoom: { [telemetry] in telemetry.idleConnectionsClosed.increment() })
        return Application(
            router: router(),
            server: .http1(
                configuration: .init(
                    additionalChannelHandlers: HTTPServing.handlers(roster),
                    idleTimeout: .nanoseconds(Int64(settings.idleTimeoutSeconds * 1e9)),
                    httpDecoderConfiguration: .init(
                        maxHeaderFieldSize: 8 * 1_024, maxHeaderListSize: 16 * 1_024, maxHeaderFieldCount: 64))),
            configuration: .init(
                address: .hostname(settings.host, port: settings.port), serverName: "sentinel",
                availableConnectionsDelegate: MaximumAvailableConnections(settings.maxConnections, logger: logger)),
            onServerRunning: { [port = settings.port] channel in await onListening(channel.localAddress?.port ?? port)
            },
            logger: logger)
    }

    public func router() -> Router<APIContext> {
        let router = Router(context: APIContext.self, options: .autoGenerateHeadEndpoints)
        router.add(middleware: HeadWithoutBody())
        router.add(middleware: CORSAllowlist(origins: Set(settings.corsOrigins)))
        router.add(middleware: JSONErrors(description: "/openapi.json"))
        router.add(
            middleware: KnownHost(names: settings.hosts + [settings.host], loopbackOnly: false, server: "Sentinel"))
        router.add(middleware: SameSiteOnly(origins: Set(settings.corsOrigins)))
        router.add(middleware: ReadOnlyRequests())
        router.add(middleware: BearerAuthentication(tokens: tokens))
        router.get("/events") { request, context in try events(request, on: context.channel) }
        router.get("/api/visitors") { request, _ in try await visitors(request) }
        router.get("/api/visitors/{faceId}") { _, context in try await visitor(context.parameters.require("faceId")) }
        router.get("/api/sentiment") { request, _ in try await sentiment(request) }
        router.get("/api/zones") { _, _ in zoneCounts() }
        router.get("/api/reports") { request, _ in try await reports(request) }
        router.get("/api/still") { request, _ in try await still(request) }
        router.get("/javascript/{package}/{file}") { _, context in
            try WebLibrary.file(
                package: context.parameters.require("package"), name: context.parameters.require("file"))
        }
        router.get("/healthz") { _, context in await health(detailed: context.scope == .visitors) }
        router.get("/metrics") { _, _ in
            Response(
                status: .ok, headers: [.contentType: "text/plain; version=0.0.4"],
                body: .init(byteBuffer: ByteBuffer(string: telemetry.exposition(live))))
        }
        router.get("/openapi.json") { _, _ in try APIResponse.json(Data(contentsOf: Resource.url("openapi.json"))) }
        router.get("/") { _, _ in try Resource.page("dashboard.html") }
        return router
    }
}
