package import Foundation
import HTTPTypes
import Hummingbird
package import HummingbirdCore
import Logging
import SentinelCore
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelWire
import ServiceLifecycle

/// The checks every REST endpoint makes of its query string, with the same messages.
package enum APIQuery {
    /// The query parameters each endpoint takes: one list, which the handlers accept and the OpenAPI document
    /// describes (a test holds the two together).
    package static let parameters: [String: [String]] = [
        "/events": ["sourceId", "site", "zone", "type", "lastEventId", "access_token"],
        "/api/visitors": ["from", "to", "limit", "cursor"],
        "/api/sentiment": ["minutes"],
        "/api/reports": ["from", "to", "bucket", "sourceId", "zone", "format"],
        "/api/still": ["sourceId"],
    ]

    /// Refuses a parameter the endpoint at `path` does not take: a typo is reported, not ignored.
    package static func accept(_ query: FlatDictionary<Substring, Substring>, of path: String) throws {
        let names = parameters[path] ?? []
        if let unknown = query.map({ String($0.key) }).first(where: { !names.contains($0) }) {
            throw HTTPError(
                .badRequest,
                message: "\(unknown) is not a parameter of \(path); it takes \(names.joined(separator: ", "))")
        }
        var seen = Set<Substring>()
        if let twice = query.first(where: { !seen.insert($0.key).inserted }) {
            throw HTTPError(.badRequest, message: "\(twice.key) is given twice in the query: give it once")
        }
    }

    /// The ISO-8601 date in parameter `name`, nil when it is absent.
    package static func date(_ name: String, in query: FlatDictionary<Substring, Substring>) throws -> Date? {
        guard let text = query[Substring(name)] else { return nil }
        guard let date = ISO8601.date(from: String(text)) else {
            throw HTTPError(
                .badRequest, message: "\(name)=\(text) is not an ISO-8601 date such as 2026-11-21T10:00:00Z")
        }
        return date
    }
}
