// swift-tools-version:6.0
import PackageDescription

/// Only the OpenCV modules Sentinel calls: pkg-config's `opencv4` would link all 55 libraries
/// (measured: ~0.4 s start-up and ~124 MB resident, against 0.04 s and ~22 MB; see ../shared/STYLE.md).
let openCVLibraries: [LinkerSetting] = [
    "opencv_core", "opencv_imgproc", "opencv_imgcodecs", "opencv_videoio", "opencv_objdetect", "opencv_dnn",
].map { .linkedLibrary($0) }
let openCVHeaders: [CXXSetting] = [.unsafeFlags(["-I/usr/include/opencv4"])]

/// The wire types (what the API, the event stream and MQTT carry), SentinelWire in the client package: one definition
/// for the server that writes them and the apps that read them, imported where they are used.
let wire: Target.Dependency = .product(name: "SentinelWire", package: "Client")

let package = Package(
    name: "Sentinel",
    platforms: [.macOS(.v14), .iOS(.v17)],
    products: [
        .executable(name: "sentinel", targets: ["sentinel"]),
        .executable(name: "sentinel-bench", targets: ["sentinel-bench"]),
    ],
    dependencies: [
        // The wire types and the client library apps use: a package of its own, so that an app resolves none of the
        // server's dependencies.
        .package(path: "Client"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.5.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.6.0"),
        .package(url: "https://github.com/apple/swift-crypto", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/jpsim/Yams", from: "6.0.0"),
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-http-types", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.0"),
        // Tests only: the generator an app team would point at openapi.json must take it without a warning.
        .package(url: "https://github.com/apple/swift-openapi-generator", from: "1.14.3"),
        // Tests only: the client that generator makes from openapi.json, built and run against the server.
        .package(url: "https://github.com/apple/swift-openapi-runtime", from: "1.13.4"),
        .package(url: "https://github.com/apple/swift-openapi-urlsession", from: "1.4.0"),
    ],
    targets: [
        /// The only code that includes `opencv2/`: a plain C API over OpenCV C++.
        .target(
            name: "CSentinelCV",
            cxxSettings: openCVHeaders,
            linkerSettings: openCVLibraries
        ),
        /// The only code that includes mosquitto.h: a plain C API over Debian's libmosquitto (MQTT 5).
        .target(name: "CSentinelMQTT", linkerSettings: [.linkedLibrary("mosquitto")]),
        /// MQTT: a client over the bridge (connects and reconnects on its own thread, polled by its owner), and the
        /// box's MQTT output, which forwards the event log to a broker.
        .target(
            name: "SentinelMQTT",
            dependencies: [
                wire,
                "SentinelConfig", "CSentinelMQTT", "SentinelCore", "SentinelPrivacy",
                "SentinelStore", "SentinelRuntime",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        /// Domain types shared by every layer beside the wire types.
        .target(name: "SentinelCore", dependencies: [wire]),
        /// The Swift face of the bridge: images, frame sources, detectors, classifier, video writer.
        .target(
            name: "SentinelVision",
            dependencies: [
                wire, "CSentinelCV", "SentinelCore", "Yams", .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        /// The model manifest: where each model comes from, its checksum, and how to set it up.
        .target(
            name: "SentinelModels",
            dependencies: [
                "SentinelCore", "Yams",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        /// Detections to visitors: tracker, zones, dwell, emotion smoothing, events. Pure logic, no clock or I/O.
        .target(name: "SentinelVisitors", dependencies: [wire, "SentinelCore"]),
        /// The masking stage before every output: pseudonyms, field allowlists, coarse times, k-suppressed
        /// aggregates, retention. Pure logic but for the key file.
        .target(
            name: "SentinelPrivacy",
            dependencies: [wire, "SentinelCore", .product(name: "Crypto", package: "swift-crypto")]
        ),
        /// A minimal HTTP/1.1 client over SwiftNIO, for the SSE bench and the tests (raw bytes, exact
        /// timing, streams dropped mid-way): test support, no part of the server.
        .target(
            name: "SentinelLoopback",
            dependencies: [
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Tests/SentinelLoopback"
        ),
        /// Configuration: the files Sentinel reads (pipeline, service and fleet definitions, validated with line
        /// numbers), `--set`, the reference, and the editors that write a pipeline file back.
        .target(
            name: "SentinelConfig",
            dependencies: [
                wire,
                "SentinelCore", "SentinelVisitors", "SentinelModels", "SentinelPrivacy", "Yams",
            ]
        ),
        /// The per-frame pipeline and the runner that drives one source.
        .target(
            name: "SentinelPipeline",
            dependencies: [
                wire,
                "SentinelCore", "SentinelConfig", "SentinelVision", "SentinelVisitors", "SentinelModels",
                "SentinelPrivacy", "SentinelEval", .product(name: "Logging", package: "swift-log"),
            ]
        ),
        /// The event log, visits, zone stays and gauge readings, written in batches: `EventLog`, and its two stores,
        /// SQLite through GRDB (a box's, a single fleet's) and PostgreSQL through postgres-nio (replicas share it).
        .target(
            name: "SentinelStore",
            dependencies: [
                wire,
                "SentinelConfig", "SentinelCore", "SentinelPrivacy",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        /// What runs between the cameras and the edges: each source on its thread, the hub, the services that keep
        /// the event log, the live state the API reads, the SSE fan-out and its wire format (`ServerSentEvents`, the
        /// envelope MQTT carries too), and the metrics.
        .target(
            name: "SentinelRuntime",
            dependencies: [
                wire,
                "SentinelConfig", "SentinelCore", "SentinelPrivacy", "SentinelPipeline",
                "SentinelStore",
                "SentinelModels", "SentinelVision", "SentinelVisitors",
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        /// The HTTP edge: the router, access by token, SSE, REST, the dashboard and the OpenAPI document.
        .target(
            name: "SentinelHTTP",
            dependencies: [
                wire,
                "SentinelConfig", "SentinelCore", "SentinelPrivacy", "SentinelStore", "SentinelRuntime",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
            ],
            resources: [.copy("openapi.json"), .copy("dashboard.html"), .copy("zone-editor.html")]
        ),
        /// What each command runs, assembled from the layers below, a folder each: `sentinel run`'s service group
        /// (Run), `sentinel fleet`'s ingest and group (Fleet), `sentinel zones`' editor (Zones), what serving needs of
        /// the machine (Hosting: tokens, the port, the store's folder and group, open files), and what both
        /// executables share (CommandLine: the command error, range checks, the models option, pipeline loading, the
        /// logger).
        .target(
            name: "SentinelAssembly",
            dependencies: [
                wire,
                "SentinelConfig", "SentinelCore", "SentinelPrivacy", "SentinelStore",
                "SentinelModels", "SentinelPipeline", "SentinelVision", "SentinelRuntime",
                "SentinelHTTP", "SentinelMQTT",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        /// Accuracy measurement against ground truth (pure logic).
        /// Optimised in debug builds too: a head's fit is millions of products a step, 20 times slower unoptimised, and
        /// the tests run it on real faces.
        .target(
            name: "SentinelEval", dependencies: [wire, "SentinelCore"],
            swiftSettings: [.unsafeFlags(["-O"], .when(configuration: .debug))]),
        /// Tuning on footage: search spaces, the detection cache, trials, label-free measures, the sweep and its report.
        .target(
            name: "SentinelTuning",
            dependencies: [
                wire,
                "SentinelConfig", "SentinelCore", "SentinelVision", "SentinelModels", "SentinelPipeline",
                "SentinelPrivacy",
                "SentinelEval",
                "SentinelVisitors", "Yams", .product(name: "Logging", package: "swift-log"),
            ]),
        /// Every parser of outside input as a libFuzzer target (`make fuzz`), and their corpora's replay (`make test`).
        .executableTarget(
            name: "sentinel-fuzz",
            dependencies: [
                wire,
                "SentinelCore", "SentinelEval", "SentinelConfig", "SentinelTuning", "SentinelHTTP", "SentinelRuntime",
                "SentinelVision", .product(name: "HummingbirdCore", package: "hummingbird"),
            ],
            path: "Tests/sentinel-fuzz"
        ),
        .executableTarget(
            name: "sentinel",
            dependencies: [
                "SentinelAssembly", wire,
                "SentinelConfig", "SentinelCore", "SentinelVision", "SentinelModels", "SentinelEval",
                "SentinelPrivacy", "SentinelPipeline", "SentinelStore", "SentinelHTTP", "SentinelMQTT",
                "SentinelVisitors", "SentinelTuning",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        /// The benchmarks (make bench), out of the installed binary: detection and the pipeline against C++ and
        /// Python, SSE fan-out through the loopback and Swift clients, the store's soak, MQTT and the fleet.
        .executableTarget(
            name: "sentinel-bench",
            dependencies: [
                "SentinelAssembly", wire,
                "SentinelConfig", "SentinelCore", "SentinelVision", "SentinelModels", "SentinelPrivacy",
                "SentinelPipeline",
                "SentinelStore", "SentinelRuntime", "SentinelLoopback", "SentinelMQTT",
                "SentinelEval", "SentinelTuning", .product(name: "SentinelClient", package: "Client"),
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ]
        ),
        /// The bench's reference: the same decode + detect as a minimal C++ loop over OpenCV.
        .executableTarget(
            name: "sentinel-cxx-loop",
            path: "Tests/Peers/sentinel-cxx-loop",
            cxxSettings: openCVHeaders,
            linkerSettings: openCVLibraries + [.linkedLibrary("m")]
        ),
        /// Paths to the repository's models, photos and recordings, and to ../shared when it is there.
        .target(
            name: "SentinelTestSupport",
            dependencies: [
                wire, "SentinelCore", "SentinelModels", "SentinelVision", "SentinelLoopback",
                .product(name: "SentinelClient", package: "Client"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Tests/SentinelTestSupport",
            exclude: [
                "rtsp_camera.py", "mqtt_broker.py", "postgres_server.py", "dashboard_probe.py", "chromium.py",
                "zone_editor_probe.py",
                "systemd_boot.sh",
            ]),
        /// The real binary as a user runs it: its commands, `sentinel run` (signals, crashes, bad sources), the
        /// installation, live cameras and the dashboard in a browser.
        .testTarget(
            name: "SentinelEndToEndTests",
            dependencies: [
                "SentinelTestSupport", "SentinelCore", "SentinelAssembly", "SentinelVision", "SentinelLoopback",
                "SentinelModels",
                .product(name: "SentinelClient", package: "Client"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]
        ),
        .testTarget(
            name: "SentinelVisionTests",
            dependencies: [
                wire,
                "SentinelVision", "SentinelModels", "SentinelCore", "SentinelTestSupport", "SentinelLoopback",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SentinelModelsTests",
            dependencies: ["SentinelModels", "SentinelTestSupport", .product(name: "Logging", package: "swift-log")]),
        .testTarget(
            name: "SentinelSynthTests",
            dependencies: [
                wire, "SentinelVision", "SentinelCore", "SentinelEval", "SentinelTestSupport",
            ]
        ),
        .testTarget(
            name: "SentinelEvalTests", dependencies: [wire, "SentinelEval", "SentinelCore", "SentinelTestSupport"],
            // The reference implementations' driver (py-motmetrics, TrackEval), run by the tests.
            exclude: ["References"]),
        .testTarget(name: "SentinelVisitorsTests", dependencies: [wire, "SentinelVisitors", "SentinelCore"]),
        .testTarget(
            name: "SentinelPrivacyTests", dependencies: [wire, "SentinelPrivacy", "SentinelCore"]),
        .testTarget(
            name: "SentinelStoreTests",
            dependencies: [
                wire,
                "SentinelStore", "SentinelConfig", "SentinelPrivacy",
                "SentinelCore", "SentinelTestSupport", .product(name: "Logging", package: "swift-log"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            // A database written by Sentinel 0.4.0 (`sqlite3 .dump`), read by #filePath: the migration test's input.
            exclude: ["Fixtures"]),
        .testTarget(
            name: "SentinelServerTests",
            dependencies: [
                "SentinelAssembly", wire,
                "SentinelConfig", "SentinelStore", "SentinelPrivacy",
                "SentinelCore", "SentinelTestSupport", "SentinelLoopback", "SentinelMQTT", "SentinelModels",
                "SentinelRuntime", "SentinelHTTP", "SentinelVision",
                .product(name: "SentinelClient", package: "Client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOFoundationEssentialsCompat", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "OpenAPIRuntime", package: "swift-openapi-runtime"),
                .product(name: "OpenAPIURLSession", package: "swift-openapi-urlsession"),
            ],
            // The app team's client: generated at build time from openapi.json (linked here) by the generator's plugin.
            plugins: [.plugin(name: "OpenAPIGenerator", package: "swift-openapi-generator")]
        ),
        .testTarget(
            name: "SentinelPipelineTests",
            dependencies: [
                wire,
                "SentinelConfig", "SentinelPipeline", "SentinelVisitors", "SentinelPrivacy", "SentinelEval",
                "SentinelVision", "SentinelCore", "SentinelStore",
                "SentinelModels", "SentinelAssembly", "SentinelTestSupport", "SentinelTuning",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "OpenAPIGeneratorTests",
            dependencies: [.product(name: "_OpenAPIGeneratorCore", package: "swift-openapi-generator")]),
    ],
    cxxLanguageStandard: .cxx17
)

// The language settings Hummingbird's packages share, on every Swift target: `any` spelled out for existentials, and
// a module's members visible only where that module is imported.
for target in package.targets where !["CSentinelCV", "CSentinelMQTT", "sentinel-cxx-loop"].contains(target.name) {
    target.swiftSettings =
        (target.swiftSettings ?? []) + [
            .enableUpcomingFeature("ExistentialAny"), .enableUpcomingFeature("MemberImportVisibility"),
            .enableUpcomingFeature("InternalImportsByDefault"),
        ]
}
