import Foundation
public import Hummingbird
public import NIOCore
import SentinelConfig
import SentinelCore
import SentinelRuntime

/// What a request may read. `visitors`: everything, per-visitor records included. `aggregates`: only the live
/// figures that k-suppression protects (`/api/zones`, `/api/sentiment`) and what tells nothing of visitors
/// (`/healthz`'s status, the OpenAPI document, the page); every other path answers 403. `/events` is not among them:
/// its ids number every logged event, so their gaps would count visitor events; nor is `/metrics`, which counts them
/// too; nor `/api/reports`, whose windows are the caller's to choose, so two of them a second apart would isolate the
/// one visit between them (PRIVACY.md). A request to `/healthz` without the visitor token has the aggregate scope.
public enum AccessScope: String, Sendable {
    case visitors, aggregates

    static let aggregatePaths: Set<String> = [
        "/api/zones", "/api/sentiment", "/healthz", "/openapi.json", "/",
    ]
}

/// The request context of the API: the scope the presented token grants, and the connection's event loop.
public struct APIContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    public var scope = AccessScope.visitors
    /// The request's connection: an SSE stream runs its task on its thread, and closes it when cut off.
    public let channel: any Channel
    public init(source: Source) {
        coreContext = .init(source: source)
        channel = source.channel
    }
}

/// Bearer-token access: once Sentinel listens beyond localhost every endpoint but `/healthz` and Debian's web
/// libraries (`/javascript/`, public files that tell nothing of the box) needs a token, in an
/// `Authorization: Bearer` header or, where a browser cannot set one, an `access_token` query parameter: `/events`
/// (EventSource sends no headers) and the dashboard page `/` (opened from a link; its script then sends the header).
/// The token presented sets the request's scope; with no token configured every request passes.
struct BearerAuthentication: RouterMiddleware {
    let tokens: AccessTokens

    func handle(_ request: Request, context: APIContext, next: (Request, APIContext) async throws -> Response)
        async throws -> Response
    {
        guard !tokens.isEmpty, !request.uri.path.hasPrefix("/javascript/"), request.method != .options else {
            return try await next(request, context)
        }
        var presented: Substring?
        if let header = request.headers[.authorization], header.hasPrefix("Bearer ") {
            presented = header.dropFirst("Bearer ".count)
        } else if Self.queryTokenPaths.contains(request.uri.path) {
            presented = request.uri.queryParameters["access_token"]
        }
        var context = context
        // A probe needs no token and learns up or down; the details count frames and events: visitor scope only.
        if request.uri.path == "/healthz" {
            let visitors = presented.flatMap { presented in
                tokens.visitors.map { constantTimeEqual(Array(presented.utf8), Array($0.utf8)) }
            }
            context.scope = visitors == true ? .visitors : .aggregates
            return try await next(request, context)
        }
        if let presented, let token = tokens.visitors, constantTimeEqual(Array(presented.utf8), Array(token.utf8)) {
            context.scope = .visitors
        } else if let presented, let token = tokens.aggregates,
            constantTimeEqual(Array(presented.utf8), Array(token.utf8))
        {
            context.scope = .aggregates
            guard AccessScope.aggregatePaths.contains(request.uri.path) else {
                throw HTTPError(
                    .forbidden,
                    message:
                        "this token may read aggregates only (\(AccessScope.aggregatePaths.sorted().joined(separator: ", "))); "
                        + "per-visitor records, the event stream, reports (their windows are the caller's: two could "
                        + "isolate one visit) and the metrics need the visitor token (server.tokenFile)"
                )
            }
        } else {
            throw HTTPError(
                .unauthorized, headers: [.wwwAuthenticate: "Bearer realm=\"sentinel\""],
                message: presented == nil
                    ? "a bearer token is required (Authorization: Bearer ...)" : "the bearer token is not valid")
        }
        return try await next(request, context)
    }

    /// Where a token may come in the query string instead of the header.
    static let queryTokenPaths: Set<String> = ["/events", "/"]

    /// Compares without returning early, so the time taken does not tell how much of a guess was right.
    private func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        var difference = UInt8(a.count == b.count ? 0 : 1)
        for i in 0..<a.count { difference |= a[i] ^ (i < b.count ? b[i] : 0) }
        return difference == 0
    }
}

/// CORS for an allowlist of dashboard origins: a request from a listed origin gets it echoed back (and preflight
/// requests an answer); any other origin gets no CORS headers, so browsers keep its pages out.
struct CORSAllowlist<Context: RequestContext>: RouterMiddleware {
    let origins: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let origin = request.headers[.origin], origins.contains(origin) else {
            return try await next(request, context)
        }
        var response: Response
        if request.method == .options {
            response = Response(status: .noContent)
            response.headers[.accessControlAllowMethods] = ReadOnlyRequests<Context>.allowed
            response.headers[.accessControlAllowHeaders] = "Authorization, Last-Event-ID, Content-Type"
            response.headers[.accessControlMaxAge] = "600"
        } else {
            response = try await next(request, context)
        }
        response.headers[.accessControlAllowOrigin] = origin
        response.headers[.vary] = "Origin"
        return response
    }
}

/// Another site's page may not use the API, not even through an `<img>` or a link, which send no Origin but whose
/// browser says `Sec-Fetch-Site: cross-site` (or `same-site`, another port of the same host): the dashboard is
/// same-origin, so nothing legitimate needs it. A page whose origin `server.corsOrigins` lists may; so may a person
/// following a link to the dashboard itself. Clients that are not browsers send no such header.
/// Answers only requests addressed to a name the server serves: localhost, an address (a page cannot rebind a name to
/// what is already an address), the name it listens on and `server.hosts`. A page on `http://rebind.example/` whose
/// name an attacker later points at the box is same-origin to itself, so the browser's cross-site checks pass; the
/// name it sends (in `Host`, or in the target of an absolute-form request line, which HTTP says overrides `Host`) is
/// what gives it away (`AbsoluteFormAuthority` has put an absolute-form target's there). A request that names no host
/// at all is refused as HTTP/1.1 says.
package struct KnownHost<Context: RequestContext>: RouterMiddleware {
    let names: Set<String>
    /// Loopback addresses only (the zone editor), or any address.
    let loopbackOnly: Bool
    let server: String

    /// `names` besides localhost; `server` names the server in refusals.
    package init(names: [String], loopbackOnly: Bool, server: String) {
        self.names = Set((names + ["localhost"]).map { HostName.normalized($0) })
        self.loopbackOnly = loopbackOnly
        self.server = server
    }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws -> Response
    {
        guard let authority = request.head.authority else {
            // HTTP/1.1 requires it (RFC 9112, 3.2): a request without one is a malformed request.
            throw HTTPError(.badRequest, message: "a request names the host it is for (Host: ...)")
        }
        // RFC 9112, 3.2: a request whose Host is no host and port, or that has two, is answered 400. (The first Host
        // became the authority; a second stays among the fields.)
        guard !request.headers.contains(where: { $0.name.canonicalName == "host" }) else {
            throw HTTPError(.badRequest, message: "a request names the host it is for once (two Host headers)")
        }
        guard let host = HostName.parse(authority) else {
            throw HTTPError(
                .badRequest,
                message: "Host: \(ServerSentEvents.quoted(authority)) is not a host name or address with a port")
        }
        guard !Self.accepts(host, names: names, loopbackOnly: loopbackOnly) else {
            return try await next(request, context)
        }
        throw HTTPError(
            .misdirectedRequest,
            message:
                "\(server) does not answer for \(ServerSentEvents.quoted(authority)): \(loopbackOnly ? "open it as http://127.0.0.1 or localhost" : "add the name to server.hosts if the box is published under it")"
        )
    }

    /// Whether `host` (as `HostName.parse` gives it) names this server: a name it serves, a loopback address, or (unless
    /// `loopbackOnly`) an address of this machine's. Any other address is no more this server's than a foreign name:
    /// 0.0.0.0 is no destination, and another machine's address is a request meant for it.
    static func accepts(_ host: String, names: Set<String>, loopbackOnly: Bool) -> Bool {
        if names.contains(host) { return true }
        var v4 = in_addr()
        var v6 = in6_addr()
        if inet_pton(AF_INET, host, &v4) == 1 {
            if host.hasPrefix("127.") { return true }
            return !loopbackOnly && ownAddresses().contains(Data(bytes: &v4, count: MemoryLayout<in_addr>.size))
        }
        if inet_pton(AF_INET6, host, &v6) == 1 {
            if host == "::1" { return true }
            return !loopbackOnly && ownAddresses().contains(Data(bytes: &v6, count: MemoryLayout<in6_addr>.size))
        }
        return false
    }

    /// This machine's addresses now (an interface may have been given another since the server started).
    static func ownAddresses() -> Set<Data> {
        var first: UnsafeMutablePointer<ifaddrs>?
        guard getifaddrs(&first) == 0 else { return [] }
        defer { freeifaddrs(first) }
        var addresses: Set<Data> = []
        var next = first
        while let entry = next {
            defer { next = entry.pointee.ifa_next }
            guard let address = entry.pointee.ifa_addr else { continue }
            switch Int32(address.pointee.sa_family) {
            case AF_INET:
                address.withMemoryRebound(to: sockaddr_in.self, capacity: 1) {
                    var bytes = $0.pointee.sin_addr
                    addresses.insert(Data(bytes: &bytes, count: MemoryLayout<in_addr>.size))
                }
            case AF_INET6:
                address.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) {
                    var bytes = $0.pointee.sin6_addr
                    addresses.insert(Data(bytes: &bytes, count: MemoryLayout<in6_addr>.size))
                }
            default: break
            }
        }
        return addresses
    }

}

struct SameSiteOnly<Context: RequestContext>: RouterMiddleware {
    let origins: Set<String>

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        if let site = request.headers[.secFetchSite], site == "cross-site" || site == "same-site",
            !(request.headers[.origin].map(origins.contains) ?? false),
            !(request.uri.path == "/" && request.headers[.secFetchMode] == "navigate")
        {
            throw HTTPError(
                .forbidden,
                message:
                    "requests from another site's page are refused (Sec-Fetch-Site: \(site)); a dashboard elsewhere needs its origin in server.corsOrigins"
            )
        }
        return try await next(request, context)
    }
}

/// A request's `Host` as HTTP writes it, read before anything is decided by it.
package enum HostName {
    /// The host of an authority as HTTP writes it (RFC 9110, 7.2: `host`, `host:port`, `[v6]:port`), lower case and
    /// without a name's trailing dot; nil where it is none: a user part (`localhost:80@evil`), a port that is not a
    /// number up to 65535 (`localhost:evil`, 20 digits), text after an IPv6 address (`[::1]evil`), or a character no
    /// host name has.
    package static func parse(_ authority: String) -> String? {
        let host: Substring
        let port: Substring?
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { return nil }
            host = authority[authority.index(after: authority.startIndex)..<close]
            let rest = authority[authority.index(after: close)...]
            guard rest.isEmpty || rest.hasPrefix(":") else { return nil }
            port = rest.isEmpty ? nil : rest.dropFirst()
            var v6 = in6_addr()
            guard inet_pton(AF_INET6, String(host), &v6) == 1 else { return nil }
        } else {
            let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
            host = parts[0]
            port = parts.count > 1 ? parts[1] : nil
            let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-_")
            guard !host.isEmpty, host.count <= 253, host.allSatisfy(allowed.contains) else { return nil }
        }
        if let port {
            guard (1...5).contains(port.count), port.allSatisfy({ $0.isASCII && $0.isNumber }), let number = Int(port),
                number <= 65_535
            else { return nil }
        }
        // `.` alone is the root's trailing dot and names nothing (the fuzzer read it as the empty name).
        let name = normalized(String(host))
        return name.isEmpty ? nil : name
    }

    /// Lower case, without the trailing dot of a fully qualified name.
    package static func normalized(_ name: String) -> String {
        let lower = name.lowercased()
        return lower.hasSuffix(".") ? String(lower.dropLast()) : lower
    }
}
