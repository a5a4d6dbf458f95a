// swift-tools-version:6.0
import PackageDescription

/// What an app (iOS, macOS) or a Linux service needs to read a Sentinel box or fleet, and nothing of the server: no
/// dependency but Foundation. The server's package depends on this one for the wire types, so both read and write the
/// same definitions.
let package = Package(
    name: "SentinelClient",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        /// The client: REST calls and the event stream, with the wire types.
        .library(name: "SentinelClient", targets: ["SentinelClient"]),
        /// The wire types alone (what the API, the event stream and MQTT carry), for the server.
        .library(name: "SentinelWire", targets: ["SentinelWire"]),
    ],
    targets: [
        /// The bodies the API answers, the event envelope, visitor events and gauge readings, and their JSON coding.
        .target(name: "SentinelWire"),
        /// Foundation only (URLSession; FoundationNetworking on Linux), behind a transport protocol.
        /// (mattt/EventSource 1.1.1 was tried first: it does not build on Linux, whose URLSession has no `bytes(for:)`,
        /// and its parser awaits an actor for every byte.)
        .target(name: "SentinelClient", dependencies: ["SentinelWire"]),
        /// The client's example: prints who is here and the mood, live.
        .executableTarget(name: "sentinel-watch", dependencies: ["SentinelClient"]),
        .testTarget(name: "SentinelClientTests", dependencies: ["SentinelClient"]),
    ]
)
