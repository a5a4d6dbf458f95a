import Foundation
public import SentinelCore

/// The HTTP server of `sentinel run`. Tokens are never written here: only where to read one.
public struct ServerSettings: Sendable, Equatable {
    /// Loopback by default; any other address requires a bearer token.
    public var host = "127.0.0.1"
    public var port = 8080
    /// The ports a pipeline file or `sentinel run --port` may name (0: any free port).
    public static let portRange = 0...65_535
    /// A file holding the bearer token (its first line).
    public var tokenFile: String?
    /// An environment variable holding the bearer token.
    public var tokenEnvironment = "SENTINEL_TOKEN"
    /// A token for aggregates only (zone counts, the gauge): no per-visitor record, as PRIVACY.md explains.
    public var aggregateTokenFile: String?
    public var aggregateTokenEnvironment = "SENTINEL_AGGREGATE_TOKEN"
    /// Dashboard origins allowed to call the API from a browser (CORS).
    public var corsOrigins: [String] = []
    /// The names the server is published under (`box.example.com`), beside localhost and its addresses: a request
    /// naming any other host is refused, so that a page whose name an attacker points at the box (DNS rebinding)
    /// gets nothing.
    public var hosts: [String] = []
    /// Seconds between SSE comment heartbeats on an idle stream.
    public var heartbeatSeconds = 15.0
    /// The reconnection delay SSE clients are told to use.
    public var retryMilliseconds = 3_000
    /// Messages queued for one SSE client; a client that falls this far behind is cut off.
    public var clientBufferEvents = 1_024
    /// Bytes queued for one SSE client: a client that falls this far behind is cut off too.
    public var clientBufferBytes = 4 << 20
    /// What all SSE streams together may hold, in MiB (queued messages, writes, pages of the log for resuming
    /// clients): beyond it, the slowest are cut off first.
    public var streamMemoryMegabytes = 256
    /// Seconds a connection may stay silent: before its request is complete (a slowloris), or between requests.
    /// Open SSE streams are not idle: they end with the client or the service.
    public var idleTimeoutSeconds = 10.0
    /// Open connections at most: the one that takes the last place closes the connection idle longest
    /// (`IdleConnections`); when none other is idle, new ones wait in the listen backlog until one closes.
    public var maxConnections = 1_200
    /// Open SSE streams at most (within maxConnections); beyond, /events answers 503 with Retry-After.
    public var maxSubscribers = 1_000

    public init() {}

    /// The `server:` section's settings.
    public static let settings: [Setting<ServerSettings>] = [
        .text("host", \.host, "address to listen on; any other than loopback requires a bearer token"),
        .integer("port", \.port, in: portRange, "port to listen on (0: any free port)"),
        .path("tokenFile", \.tokenFile, "file holding the bearer token (its first line)"),
        .text("tokenEnvironment", \.tokenEnvironment, "environment variable holding the bearer token"),
        .path("aggregateTokenFile", \.aggregateTokenFile, "file holding the aggregates-only token"),
        .text(
            "aggregateTokenEnvironment", \.aggregateTokenEnvironment,
            "environment variable holding the aggregates-only token"),
        .list(
            "hosts", \.hosts, check: hostName,
            "names the server is published under, beside localhost and its addresses; other names are refused (DNS rebinding)"
        ),
        .list(
            "corsOrigins", \.corsOrigins, check: origin,
            "dashboard origins allowed to call the API from a browser, as https://dashboard.example.com"),
        .number("heartbeatSeconds", \.heartbeatSeconds, in: 1...300, "seconds between SSE heartbeats"),
        .integer(
            "retryMilliseconds", \.retryMilliseconds, in: 100...600_000,
            "reconnection delay SSE clients are told to use"),
        .integer(
            "clientBufferEvents", \.clientBufferEvents, in: 16...1_000_000,
            "messages queued for one SSE client; one that falls this far behind is cut off"),
        .integer(
            "clientBufferBytes", \.clientBufferBytes, in: 65_536...1 << 30,
            "bytes queued for one SSE client; one that falls this far behind is cut off"),
        .integer(
            "streamMemoryMegabytes", \.streamMemoryMegabytes, in: 16...65_536,
            "MiB all SSE streams may hold together; beyond, the slowest clients are cut off first"),
        .number(
            "idleTimeoutSeconds", \.idleTimeoutSeconds, in: 1...3_600,
            "seconds a connection may stay silent before its request is complete, or between requests"),
        .integer("maxConnections", \.maxConnections, in: 8...100_000, "open connections at most"),
        .integer(
            "maxSubscribers", \.maxSubscribers, in: 1...100_000,
            "open SSE streams at most, fewer than maxConnections; beyond, /events answers 503"),
    ]

    /// Why `text` is not a CORS origin (scheme, host and port only), or nil.
    static func origin(_ text: String) -> String? {
        guard let url = URL(string: text), url.scheme == "http" || url.scheme == "https", url.host != nil,
            url.path.isEmpty
        else {
            return "\"\(text)\" is not an origin such as https://dashboard.example.com (scheme, host and port only)"
        }
        return nil
    }

    /// Why `text` is not a host name (letters, digits, hyphens and dots, no port), or nil.
    static func hostName(_ text: String) -> String? {
        let labels = text.split(separator: ".", omittingEmptySubsequences: false)
        guard !text.isEmpty, text.utf8.count <= 253,
            labels.allSatisfy({ label in
                !label.isEmpty && label.count <= 63 && !label.hasPrefix("-") && !label.hasSuffix("-")
                    && label.unicodeScalars.allSatisfy {
                        $0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0) || $0 == "-")
                    }
            })
        else {
            return "\"\(text)\" is not a host name such as box.example.com (letters, digits, hyphens and dots; no port)"
        }
        return nil
    }

    /// Whether `host` only accepts connections from this machine.
    public var isLoopback: Bool { ["127.0.0.1", "::1", "localhost"].contains(host) }
}

extension ServerSettings {
    /// Reads the `server:` section into these settings.
    package mutating func read(_ field: Field, _ reader: ConfigReader) {
        guard let fields = reader.section(field, Self.settings, into: &self) else { return }
        if maxSubscribers >= maxConnections {
            reader.report(
                fields["maxSubscribers"] ?? fields["maxConnections"] ?? field,
                "\(maxSubscribers) SSE subscribers need fewer than maxConnections (\(maxConnections))")
        }
        if clientBufferBytes > streamMemoryMegabytes << 20 {
            reader.report(
                fields["clientBufferBytes"] ?? fields["streamMemoryMegabytes"] ?? field,
                "one client's \(clientBufferBytes) bytes exceed what all streams may hold (streamMemoryMegabytes: \(streamMemoryMegabytes))"
            )
        }
    }
}
