import HTTPTypes
package import Hummingbird

/// Every endpoint only reads: GET, and HEAD (the GET's status and headers without its body, which RFC 9110 asks of
/// every server and monitors use: the router makes a HEAD of each GET, see `HeadWithoutBody`). A request with another
/// method gets 405 naming the allowed ones, and one that says it carries a body gets 413 (what it sends is discarded
/// unread, and a sender that stalls meets the idle timeout).
struct ReadOnlyRequests<Context: RequestContext>: RouterMiddleware {
    static var allowed: String { "GET, HEAD, OPTIONS" }

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        guard [.get, .head, .options].contains(request.method) else {
            throw HTTPError(
                .methodNotAllowed, headers: [.allow: Self.allowed],
                message: "\(request.method) is not served: every endpoint answers GET")
        }
        let length = request.headers[.contentLength].flatMap { Int($0) } ?? 0
        guard length == 0, request.headers[.transferEncoding] == nil else {
            throw HTTPError(.contentTooLarge, message: "a request to this API carries no body")
        }
        return try await next(request, context)
    }
}

/// No answer to a HEAD carries a body: the router strips those of the GETs it answers HEAD with, and this the rest
/// (an unknown path's 404). The outermost middleware.
struct HeadWithoutBody<Context: RequestContext>: RouterMiddleware {
    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws
        -> Response
    {
        let response = try await next(request, context)
        return request.method == .head ? response.createHeadResponse() : response
    }
}

/// Every failure in the API's JSON shape, `{"error": "..."}`, with its status and headers: handlers and middleware
/// throw Hummingbird's `HTTPError`; a path no route serves gets a message that points at the server's description of
/// its paths, where it has one.
package struct JSONErrors<Context: RequestContext>: RouterMiddleware {
    /// The path that describes the server's API (the API's `/openapi.json`; none for the zone editor).
    let description: String?

    package init(description: String?) { self.description = description }

    package func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response)
        async throws
        -> Response
    {
        do {
            return try await next(request, context)
        } catch let error as HTTPError {
            let message =
                error.status == .notFound && error.body == nil
                ? "no such path: \(request.uri.path)" + (description.map { " (the API is described at \($0))" } ?? "")
                : error.body ?? ""
            var response = APIResponse.error(error.status, message)
            response.headers.append(contentsOf: error.headers)
            return response
        }
    }
}
