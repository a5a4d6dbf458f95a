import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import NIOFoundationEssentialsCompat
import SentinelAssembly
import SentinelClient
import SentinelConfig
import SentinelCore
import SentinelHTTP
import SentinelLoopback
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelTestSupport
import ServiceLifecycle

/// A real `sentinel run` service in-process, on a free loopback port, with no sources started: tests hand it masked
/// events the way a source does.
final class TestServer: @unchecked Sendable {
    let service: SentinelService
    let port: Int
    let folder: URL
    let definition: ServiceDefinition
    var databasePath: String { Self.databasePath(in: folder) }

    static func databasePath(in folder: URL) -> String { folder.appendingPathComponent("test.sqlite").path }
    private var mask: PrivacyMask
    private let task: Task<Void, any Error>
    private var visits = 0
    /// An hour ago, on a whole second: recent enough for retention and the sentiment series.
    let origin = Date(timeIntervalSince1970: (Date().timeIntervalSince1970 - 3600).rounded(.down))

    static let pipeline = """
        version: 1
        sources:
          - id: showroom
            input: showroom.mp4
            zones:
              - name: display
                polygon: [[0, 0], [0.5, 0], [0.5, 1], [0, 1]]
              - name: counter
                polygon: [[0.5, 0], [1, 0], [1, 1], [0.5, 1]]
                emotion: false
        """

    /// A server on a new database in `folder` (a fresh one by default, so a test may fill it first).
    init(extra: String = "", host: String? = nil, folder: URL? = nil) async throws {
        self.folder = try folder ?? Fixtures.temporaryFolder()
        var definition = try ServiceDefinition.parse(
            Self.pipeline + "\n" + extra, file: self.folder.appendingPathComponent("test.yml").path)
        definition.pipeline.privacy.pseudonyms.keyFile = nil
        self.definition = definition
        var options = SentinelService.Options()
        options.sources = []
        options.hosting.port = 0
        options.hosting.host = host
        options.hosting.databasePath = self.folder.appendingPathComponent("test.sqlite").path
        var logger = Logger(label: "test")
        logger.logLevel = .warning
        (service, port, task) = try await SentinelService.start(
            definition: definition, models: Fixtures.store, options: options, logger: logger)
        mask = PrivacyMask(
            policy: definition.pipeline.privacy,
            keys: try PseudonymKeyRing(settings: definition.pipeline.privacy.pseudonyms))
    }

    /// The two scopes' tokens, and the `server:` settings that make a server read them from files (mode 0600).
    static let tokens = (visitors: "visitor-token-0123456789", aggregates: "aggregate-token-0123456789")
    static func tokenSettings() throws -> String {
        let folder = try Fixtures.temporaryFolder()
        for (name, token) in [("visitors", tokens.visitors), ("aggregates", tokens.aggregates)] {
            try (token + "\n").write(to: folder.appendingPathComponent(name), atomically: true, encoding: .utf8)
            chmod(folder.appendingPathComponent(name).path, 0o600)
        }
        return "tokenFile: \(folder.path)/visitors, aggregateTokenFile: \(folder.path)/aggregates"
    }

    /// Hands `count` visitor events to the hub, as a source would: `visitors` visitors in `zone`, updated in turn,
    /// one a second (published times are whole seconds).
    func publish(
        _ count: Int, visitors: Int = 3, zone: String = "display", startingAt second: Double = 0, padding: Int = 0
    ) throws {
        for i in 0..<count {
            let time = origin.addingTimeInterval(second + Double(i))
            // A zone dwell no longer than the visit's: a fleet refuses an event that says otherwise.
            let visitor = VisitorRecord(
                faceId: "showroom#0#\(i % visitors)", sourceId: "showroom", zone: zone, state: .active,
                zones: [.init(zone: zone, dwellSeconds: Double(min(i, 10)))], dwellSeconds: 10, firstSeen: origin,
                lastSeen: time,
                emotion: .known(.happy), emotionConfidence: 0.9, emotionDistribution: ["happy": 0.9, "neutral": 0.1],
                valence: 0.8,
                box: Box(x: 10, y: 20, width: 30, height: 40), detectionScore: 0.97)
            var event = VisitorEvent(
                type: i < visitors ? .entered : .updated, time: time, visitor: visitor, mediaTime: Double(i))
            if padding > 0 {
                event.visitor.zones?.append(.init(zone: String(repeating: "x", count: padding), dwellSeconds: 0))
            }
            try submit(event)
        }
    }

    func submit(_ event: VisitorEvent) throws {
        service.hub.submit(try mask.mask(event))
    }

    /// GETs `path` from the service's router in-process: routes and middleware as the server runs them, no socket.
    /// What only a connection shows (streaming, limits, timeouts) goes through `stream`, `RawConnection` or
    /// `LoopbackClient` instead.
    func get(_ path: String, headers: [(String, String)] = []) async throws -> (LoopbackClient.Head, Data) {
        var fields = HTTPFields()
        for (name, value) in headers { fields.append(HTTPField(name: HTTPField.Name(name)!, value: value)) }
        let request = fields
        let response = try await Application(router: service.api.router()).test(.router) { client in
            try await client.execute(uri: path, method: .get, headers: request)
        }
        let head = LoopbackClient.Head(
            status: response.status.code, headers: response.headers.map { ($0.name.rawName, $0.value) })
        return (head, Data(buffer: response.body))
    }

    /// Reads SSE messages until `until` says stop (or the stream ends, or `timeout` passes).
    func stream(
        _ path: String = "/events", headers: [(String, String)] = [], timeout: TimeAmount = .seconds(60),
        until: @escaping ([EventStreamParser.Message]) -> Bool
    ) async throws -> [EventStreamParser.Message] {
        try await Self.stream(port: port, path, headers: headers, timeout: timeout, until: until)
    }

    /// Reads SSE messages from the server on `port`.
    static func stream(
        port: Int, _ path: String = "/events", headers: [(String, String)] = [], timeout: TimeAmount = .seconds(60),
        until: @escaping ([EventStreamParser.Message]) -> Bool
    ) async throws -> [EventStreamParser.Message] {
        var parser = EventStreamParser()
        var messages: [EventStreamParser.Message] = []
        try await LoopbackClient.get(port: port, path: path, headers: headers, timeout: timeout) { chunk in
            messages += parser.feed(chunk.readableBytesView)
            return !until(messages)
        }
        return messages
    }

    /// Waits until `condition` holds, for at most `seconds` (`waitFor`).
    func wait(seconds: Double = 10, _ condition: () async throws -> Bool) async throws -> Bool {
        try await waitFor(seconds: seconds, condition)
    }

    /// Whether the broker has acknowledged every event the box logged (its MQTT output's backlog is empty): what
    /// the box sent is then the broker's to keep, whoever is listening.
    func brokerHoldsAll() async throws -> Bool {
        let last = try await service.store.logBounds().last
        let body = try await get("/healthz").1
        let health = (try JSONSerialization.jsonObject(with: body) as? [String: Any])?["mqtt"] as? [String: Any]
        return health?["backlog"] as? Int == 0 && (health?["acknowledged"] as? Int).map(Int64.init) == last
    }

    func stop() async throws {
        await service.group.triggerGracefulShutdown()
        try await task.value
    }
}
