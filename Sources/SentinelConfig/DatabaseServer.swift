import Foundation
public import SentinelCore

/// A fleet file's `database:` section: the PostgreSQL server the fleet stores into instead of its SQLite file, so
/// that replicas share one log (and the chain's reporting reads the same database). The password never sits in the
/// file: it comes from `passwordFile` (one line, not readable by every user) or from the environment.
public struct DatabaseServer: Sendable, Equatable {
    /// `postgres://user@host[:port]/database`.
    public var url: String
    public var passwordFile: String?
    public var passwordEnvironment = "SENTINEL_DATABASE_PASSWORD"
    public var tls = TLS.prefer
    /// Connections each replica keeps open at most: the writer holds one, the API's readers the rest.
    public var connections = 8

    public enum TLS: String, Sendable, CaseIterable {
        /// Plain TCP (a loopback or private link).
        case disable
        /// TLS when the server offers it.
        case prefer
        /// TLS or no connection.
        case require
    }

    public init(url: String) { self.url = url }

    public static let settings: [Setting<DatabaseServer>] = [
        .text(
            "url", \.url,
            check: {
                DatabaseEndpoint(url: $0) == nil
                    ? "\"\($0)\" is not a PostgreSQL URL such as postgres://sentinel@db.local:5432/sentinel" : nil
            },
            "the server, postgres://user@host[:port]/database (required)"),
        .path("passwordFile", \.passwordFile, "one line: the password, in a file not readable by every user"),
        .text("passwordEnvironment", \.passwordEnvironment, "environment variable holding the password"),
        .choice("tls", \.tls, "TLS to the server: disable, prefer (when offered) or require"),
        .integer("connections", \.connections, in: 2...64, "connections kept open at most: one writes, the rest read"),
    ]

    package static let section = "database"

    package static func read(_ field: Field, _ reader: ConfigReader) -> DatabaseServer? {
        guard let fields = reader.mapping(field, keys: Set(settings.map(\.key))) else { return nil }
        var server = DatabaseServer(url: "")
        reader.apply(settings, from: fields, to: &server)
        guard reader.required(fields, "url", in: field) != nil else { return nil }
        return server
    }

    /// Where the server listens and who logs in (the URL was checked when the file was read).
    public var endpoint: DatabaseEndpoint? { DatabaseEndpoint(url: url) }
}

/// Where a PostgreSQL server listens, as `postgres://user@host[:port]/database` (or `postgresql://`) names it.
public struct DatabaseEndpoint: Sendable, Equatable, CustomStringConvertible {
    public var host: String
    public var port: Int
    public var user: String
    public var database: String

    public init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
            scheme == "postgres" || scheme == "postgresql", let host = components.host, !host.isEmpty,
            let user = components.user, !user.isEmpty, components.password == nil, components.query == nil
        else { return nil }
        let database = components.path.hasPrefix("/") ? String(components.path.dropFirst()) : ""
        guard !database.isEmpty, !database.contains("/") else { return nil }
        self.host = host
        self.port = components.port ?? 5432
        self.user = user
        self.database = database
    }

    /// The URL again, for messages (it never holds a password).
    public var description: String { "postgres://\(user)@\(host):\(port)/\(database)" }
}
