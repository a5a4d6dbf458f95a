import Foundation
import HTTPTypes
import Hummingbird
public import Logging
import NIOFoundationEssentialsCompat
public import SentinelConfig
import SentinelCore
import SentinelHTTP
public import SentinelModels
import SentinelPipeline
import SentinelRuntime
import SentinelVision
import SentinelWire
public import ServiceLifecycle
import Synchronization
import UnixSignals

/// `sentinel zones`: a page on the box where an operator draws a pipeline's zones on a frame of each source, every
/// face in it hidden as the review video hides it, and saves them back into the pipeline file.
///
/// Saving rewrites only the zones (`ZoneFileEditor`: comments and every other line stay) and only a file that passes
/// the checks `sentinel check` makes of a file: the YAML, every field, and this machine's inputs and models. A file
/// changed on disk since the page loaded it is not overwritten. It listens on loopback only: it writes the
/// configuration and has no tokens. `sentinel run` reads the zones when it starts.
public struct ZoneEditor: Sendable {
    let file: String
    let models: ModelStore
    let logger: Logger
    private let state: FileState
    /// Whether a frame is being taken: one at a time (each decodes and detects on both cores).
    private let taking = Gate()

    /// Holds while one frame is taken; a second request meanwhile is refused rather than queued.
    final class Gate: Sendable {
        private let busy = Mutex(false)
        func enter() -> Bool {
            busy.withLock { busy in
                if busy { return false }
                busy = true
                return true
            }
        }
        func leave() { busy.withLock { $0 = false } }
    }

    public init(file: String, models: ModelStore, logger: Logger) throws(ConfigError) {
        self.file = file
        self.models = models
        self.logger = logger
        let text = try Self.read(file)
        let problems = try Self.problems(of: text, file: file, models: models)
        guard problems.isEmpty else { throw ConfigError(problems: problems) }
        state = FileState(text: text)
    }

    /// The HTTP server on `host` (loopback) and `port`; `onListening` gets the bound port.
    public func service(host: String, port: Int, onListening: @escaping @Sendable (Int) async -> Void)
        -> some Service
    {
        Application(
            router: router(),
            server: .http1(configuration: .init(additionalChannelHandlers: HTTPServing.handlers())),
            configuration: .init(address: .hostname(host, port: port), serverName: "sentinel-zones"),
            onServerRunning: { channel in await onListening(channel.localAddress?.port ?? port) },
            logger: logger)
    }

    /// Runs the editor until SIGTERM or SIGINT.
    public func run(host: String, port: Int, onListening: @escaping @Sendable (Int) async -> Void) async throws {
        let group = ServiceGroup(
            configuration: .init(
                services: [service(host: host, port: port, onListening: onListening)],
                gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try await group.run()
    }

    func router() -> Router<BasicRequestContext> {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: JSONErrors(description: nil))
        router.add(middleware: KnownHost(names: [], loopbackOnly: true, server: "the zone editor"))
        router.add(middleware: SameOrigin())
        router.add(middleware: AllowedMethods(["/": [.get], "/api/zones": [.get, .put], "/api/frame": [.get]]))
        router.get("/") { _, _ in try Resource.page("zone-editor.html") }
        router.get("/api/zones") { _, _ in try APIResponse.encode(try await zones()) }
        router.put("/api/zones") { request, _ in try await save(request) }
        router.get("/api/frame") { request, _ in try await frame(request) }
        return router
    }

    // MARK: The file

    /// What the page edits: each source with its zones as the file writes them, and the file's version.
    struct Zones: Codable {
        struct Source: Codable {
            var id: String
            /// Seconds of a recording, for choosing the frame; nil for a camera.
            var duration: Double?
            var zones: [Zone]
        }
        struct Zone: Codable {
            var name: String
            var units: PolygonUnits
            var polygon: [[Double]]
            var emotion: Bool
        }
        var file: String
        /// Changes whenever the file changes; a save names the version it edited.
        var version: Int
        var sources: [Source]
    }

    struct Save: Codable {
        var version: Int
        var sources: [String: [ZoneEdit]]
    }

    /// A save refused: every problem, with where the rewritten file would have had it.
    /// Why a save was refused: each problem where the page shows it, by camera and zone name (a line number of the
    /// file the save would have written means nothing there); a problem outside the zones keeps its line and field.
    struct Refusal: Encodable {
        var error: String
        var problems: [Problem]

        struct Problem: Encodable {
            var source: String?
            var zone: String?
            var line: Int?
            var path: String
            var message: String

            var description: String {
                let place = zone.map { "\(source ?? "") › \($0): " } ?? line.map { "line \($0): " } ?? ""
                return place + (path.isEmpty ? "" : path + ": ") + message
            }
        }

        init(_ problems: [ConfigProblem], in text: String) {
            self.problems = problems.map { problem in
                if let at = ZoneFileEditor.zone(at: problem.path, in: text) {
                    return Problem(source: at.source, zone: at.zone, path: at.field, message: problem.message)
                }
                return Problem(line: problem.line, path: problem.path, message: problem.message)
            }
            error = "not saved: " + self.problems.map(\.description).joined(separator: "\n")
        }
    }

    /// The file's text as last seen, and its version.
    private actor FileState {
        var text: String
        var version = 1
        init(text: String) { self.text = text }

        /// The version of `current`, the file's text now: a new one if it changed.
        func observe(_ current: String) -> Int {
            if current != text {
                text = current
                version += 1
            }
            return version
        }

        /// Writes `new` over the file if it is still at `version`: the check and the write in one step of the actor,
        /// so of two saves from the same version one is written and the other told the file changed.
        func commit(_ new: String, over version: Int, file: String) throws {
            let current = try ZoneEditor.read(file)
            guard observe(current) == version else {
                throw HTTPError(
                    .conflict,
                    message:
                        "\(file) changed on disk since this page loaded it; reload to see the change, then edit again")
            }
            do {
                try PipelineFile.replace(file, with: new)
            } catch {
                throw HTTPError(
                    error.code == .readOnly ? .forbidden : .internalServerError, message: "not saved: \(error.message)")
            }
            _ = observe(new)
        }
    }

    func zones() async throws -> Zones {
        let text = try Self.read(file)
        let version = await state.observe(text)
        let definition = try Self.parse(text, file: file).pipeline
        return Zones(
            file: file, version: version,
            sources: definition.sources.map { source in
                Zones.Source(
                    id: source.id, duration: Self.duration(of: source),
                    zones: source.zones.map {
                        Zones.Zone(
                            name: $0.name, units: $0.units,
                            polygon: $0.polygon.vertices.map { [$0.x, $0.y] }, emotion: $0.emotion)
                    })
            })
    }

    func save(_ request: Request) async throws -> Response {
        let body = try await request.body.collect(upTo: 1 << 20)
        let edit: Save
        do { edit = try JSONDecoder().decode(Save.self, from: body) } catch {
            throw HTTPError(.badRequest, message: "the body is not a zone list (\(Self.field(of: error)))")
        }
        let current = try Self.read(file)
        // Checked here for the clearest answer, and again with the write (`commit`), which no other save can split.
        guard await state.observe(current) == edit.version else {
            throw HTTPError(
                .conflict,
                message: "\(file) changed on disk since this page loaded it; reload to see the change, then edit again")
        }
        var text = current
        var problems: [ConfigProblem]
        do {
            text = try ZoneFileEditor.apply(edit.sources, to: current, file: file)
            problems = try Self.problems(of: text, file: file, models: models)
        } catch {
            problems = error.problems
        }
        guard problems.isEmpty else {
            return try APIResponse.encode(Refusal(problems, in: text), status: .unprocessableContent)
        }
        try await state.commit(text, over: edit.version, file: file)
        logger.info("zones saved", metadata: ["file": "\(file)"])
        return try APIResponse.encode(try await zones())
    }

    // MARK: Frames

    func frame(_ request: Request) async throws -> Response {
        let query = request.uri.queryParameters
        let text = try Self.read(file)
        let definition = try Self.parse(text, file: file).pipeline
        guard let id = query["sourceId"].map(String.init), let source = definition.sources.first(where: { $0.id == id })
        else {
            throw HTTPError(
                .badRequest,
                message: "sourceId= names one of \(definition.sources.map(\.id).joined(separator: ", "))")
        }
        let at = query["at"].map { Double(String($0)) } ?? 0
        guard let at, at >= 0, at.isFinite else { throw HTTPError(.badRequest, message: "at= is seconds, 0 or more") }
        // A recording has an end: a second beyond it would decode the whole file for nothing.
        if let duration = Self.duration(of: source), at > duration {
            throw HTTPError(
                .badRequest, message: String(format: "at=%@ is beyond the recording (%.1f s)", String(at), duration))
        }
        guard taking.enter() else {
            throw HTTPError(.tooManyRequests, message: "one frame at a time: another is being taken")
        }
        defer { taking.leave() }
        let (models, logger) = (self.models, self.logger)
        // SIGTERM or a client gone abandons the frame: the decoding thread stops at its next frame.
        let stop = StopFlag()
        let snapshot: Result<SourceSnapshot, any Error> = await withGracefulShutdownHandler {
            await withTaskCancellationHandler {
                await withCheckedContinuation { done in
                    // OpenCV decodes and detects on a thread of its own, not on the server's.
                    Thread {
                        done.resume(
                            returning: Result {
                                try SourceSnapshot.take(
                                    definition: definition, source: source, models: models, at: at, stop: stop,
                                    logger: logger)
                            })
                    }.start()
                }
            } onCancel: {
                stop.set()
            }
        } onGracefulShutdown: {
            stop.set()
        }
        switch snapshot {
        case .success(let snapshot):
            return Response(
                status: .ok,
                headers: [
                    .contentType: "image/jpeg", .cacheControl: "no-store",
                    .frameTime: String(format: "%.3f", snapshot.time),
                    .facesMasked: "\(snapshot.masked)",
                ],
                body: .init(byteBuffer: ByteBuffer(bytes: snapshot.jpeg)))
        case .failure(is CancellationError):
            throw HTTPError(.serviceUnavailable, message: "no frame from source \(id): the editor is stopping")
        case .failure(let error):
            let message = (error as? any SentinelError)?.message ?? "\(error)"
            throw HTTPError(.badGateway, message: "no frame from source \(id): \(message)")
        }
    }

    /// A path served with another method is answered 405 naming the methods it takes (the router alone would say
    /// the path does not exist).
    struct AllowedMethods: RouterMiddleware {
        let methods: [String: [HTTPRequest.Method]]

        init(_ methods: [String: [HTTPRequest.Method]]) { self.methods = methods }

        func handle(
            _ request: Request, context: BasicRequestContext,
            next: (Request, BasicRequestContext) async throws -> Response
        ) async throws -> Response {
            if let allowed = methods[request.uri.path], !allowed.contains(request.method) {
                let names = allowed.map(\.rawValue).joined(separator: ", ")
                throw HTTPError(
                    .methodNotAllowed, headers: [.allow: names],
                    message: "\(request.method) is not served at \(request.uri.path); it takes \(names)")
            }
            return try await next(request, context)
        }
    }

    /// Another site's page may not use the editor, even for an image (a cross-site <img> sends no Origin, but a browser
    /// says where a request comes from in Sec-Fetch-Site); `KnownHost` before it refuses a page that had its own name
    /// resolve to 127.0.0.1 (DNS rebinding).
    struct SameOrigin: RouterMiddleware {
        func handle(
            _ request: Request, context: BasicRequestContext,
            next: (Request, BasicRequestContext) async throws -> Response
        ) async throws -> Response {
            if let origin = request.headers[.origin], origin != "http://\(request.head.authority ?? "")" {
                throw HTTPError(.forbidden, message: "requests from another origin (\(origin)) are refused")
            }
            if let site = request.headers[.secFetchSite], !["same-origin", "none"].contains(site) {
                throw HTTPError(.forbidden, message: "requests from another site are refused")
            }
            return try await next(request, context)
        }
    }

    // MARK: Reading, checking, writing

    static func read(_ file: String) throws(ConfigError) -> String {
        guard let data = FileManager.default.contents(atPath: file) else {
            throw ConfigError(
                .unreadable,
                problems: [
                    ConfigProblem(file: file, path: "", message: "cannot read: \(String(cString: strerror(errno)))")
                ])
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw ConfigError(.unreadable, problems: [ConfigProblem(file: file, path: "", message: "not UTF-8 text")])
        }
        return text
    }

    /// A recording's length in seconds (nil for a camera or a folder).
    static func duration(of source: PipelineDefinition.SourceDefinition) -> Double? {
        guard case .file(let path) = SourceSpec(source.resolvedInput), let video = try? VideoFileSource(path: path),
            let frames = video.declaredFrameCount, video.nominalFPS > 0
        else { return nil }
        return Double(frames) / video.nominalFPS
    }

    /// Where a request body failed to decode, as a field path (no library's text).
    static func field(of error: any Error) -> String {
        switch error as? DecodingError {
        case .keyNotFound(let key, let context)?:
            "\((context.codingPath + [key]).map(\.stringValue).joined(separator: ".")) is missing"
        case .typeMismatch(_, let context)?, .valueNotFound(_, let context)?:
            "\(context.codingPath.map(\.stringValue).joined(separator: ".")) has the wrong type"
        case .dataCorrupted?: "not JSON"
        default: "not JSON"
        }
    }

    /// The file's text as `sentinel run` reads it (a byte order mark is no part of the YAML).
    static func parse(_ text: String, file: String) throws(ConfigError) -> ServiceDefinition {
        try ServiceDefinition.parse(text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text, file: file)
    }

    /// What `sentinel check` finds in the file's text: the YAML, every field, this machine's inputs and models.
    static func problems(of text: String, file: String, models: ModelStore) throws(ConfigError) -> [ConfigProblem] {
        let definition = try parse(text, file: file)
        return definition.pipeline.environmentProblems(
            models: models, frameSize: VideoFileSource.frameSize(of:),
            openClassifier: FaceClassifier.open)
    }

}
