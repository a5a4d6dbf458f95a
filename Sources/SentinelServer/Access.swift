import Foundation
import Hummingbird

/// Bearer-token access: once Sentinel listens beyond localhost every endpoint but `/healthz` needs the token, in an
/// `Authorization: Bearer` header or, for `/events` (browsers' EventSource cannot set headers), an `access_token`
/// query parameter. With no token configured (loopback only) every request passes.
struct BearerAuthentication<Context: RequestContext>: RouterMiddleware {
    let token: String?

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard let token, request.uri.path != "/healthz", request.method != .options else {
            return try await next(request, context)
        }
        var presented: Substring?
        if let header = request.headers[.authorization], header.hasPrefix("Bearer ") {
            presented = header.dropFirst("Bearer ".count)
        } else if request.uri.path == "/events" {
            presented = request.uri.queryParameters["access_token"]
        }
        guard let presented, constantTimeEqual(Array(presented.utf8), Array(token.utf8)) else {
            var response = APIResponse.error(
                .unauthorized,
                presented == nil
                    ? "a bearer token is required (Authorization: Bearer ...)" : "the bearer token is not valid")
            response.headers[.wwwAuthenticate] = "Bearer realm=\"sentinel\""
            return response
        }
        return try await next(request, context)
    }

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
            response.headers[.accessControlAllowMethods] = "GET, OPTIONS"
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

/// Reads the bearer token from the configured file (its first line) or environment variable. Never from the
/// pipeline file, which is shared and versioned. A token file every local user can read is refused, as ssh refuses
/// such a private key: it is no secret (the owner's group may read it, for a service account).
public enum AccessToken {
    public static func load(file: String?, environment name: String) throws -> String? {
        if let file {
            var status = stat()
            if stat(file, &status) == 0, status.st_mode & S_IROTH != 0 {
                throw ServiceError(
                    "the token file \(file) (server.tokenFile) is readable by every user (mode "
                        + String(status.st_mode & 0o777, radix: 8) + "): run chmod o-r \(file)")
            }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw ServiceError("cannot read the token file \(file) (server.tokenFile)")
            }
            let token =
                text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard token.count >= 16 else { throw ServiceError("the token in \(file) is shorter than 16 characters") }
            return token
        }
        if let token = ProcessInfo.processInfo.environment[name], !token.isEmpty {
            guard token.count >= 16 else { throw ServiceError("the token in $\(name) is shorter than 16 characters") }
            return token
        }
        return nil
    }
}

/// A problem that stops `sentinel run` from starting, said plainly.
public struct ServiceError: Error, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// Every endpoint only reads: a request with another method gets 405 naming the allowed ones, and one that says it
/// carries a body gets 413 (what it sends is discarded unread, and a sender that stalls meets the idle timeout).
struct ReadOnlyRequests<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard request.method == .get || request.method == .options else {
            var response = APIResponse.error(
                .methodNotAllowed, "\(request.method) is not served: every endpoint answers GET")
            response.headers[.allow] = "GET, OPTIONS"
            return response
        }
        let length = request.headers[.contentLength].flatMap { Int($0) } ?? 0
        guard length == 0, request.headers[.transferEncoding] == nil else {
            return APIResponse.error(.contentTooLarge, "a request to this API carries no body")
        }
        return try await next(request, context)
    }
}
