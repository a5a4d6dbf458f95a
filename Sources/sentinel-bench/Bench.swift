import ArgumentParser
import Foundation
import Logging
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelModels
import SentinelPrivacy
import SentinelVision

/// The benchmarks, an executable of their own so that the installed `sentinel` carries none of them (nor the loopback
/// and Swift clients they drive the service with).
@main
struct SentinelBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sentinel-bench",
        abstract:
            "Benchmarks: detection against plain C++ (the default), the whole pipeline against C++ and naive Python, SSE fan-out, and the store after 30 days.",
        subcommands: [
            BenchDetect.self, BenchPipeline.self, BenchProcess.self, BenchSizing.self, BenchSSE.self, BenchStore.self,
            BenchMQTT.self,
            BenchFleet.self,
        ],
        defaultSubcommand: BenchDetect.self)
}

struct BenchDetect: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "detect",
        abstract: "Frames per second of decode and of decode + detect, against a minimal C++ OpenCV loop.",
        discussion: """
            For each recording: decode only, then decode + detect with every detector whose model is ready, each \
            in Sentinel (Swift over the C bridge) and in sentinel-cxx-loop (plain OpenCV C++, same steps and \
            settings). Prints fps and the ratio Swift/C++ (1.00 = no overhead). Build in release (make bench).
            """)

    @Argument(help: "Recordings (default: Recordings/out/showroom-640x480.mp4 and showroom-1280x720.mp4).")
    var recordings: [String] = ["Recordings/out/showroom-640x480.mp4", "Recordings/out/showroom-1280x720.mp4"]

    @Option(help: "Frames per measurement.")
    var frames = 300

    func validate() throws { try checkRange(frames, "frames", 1...1_000_000) }

    @OptionGroup var models: ModelOptions

    func run() throws {
        let store = try models.store()
        let loop = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath().deletingLastPathComponent()
            .appendingPathComponent("sentinel-cxx-loop").path
        guard FileManager.default.isExecutableFile(atPath: loop) else {
            throw CommandError("\(loop) not found: build the package first (swift build -c release)")
        }
        print(
            "recording                  stage              frames  Sentinel fps   C++ fps   ratio   faces (Sentinel / C++)"
        )
        for recording in recordings {
            guard FileManager.default.fileExists(atPath: recording) else {
                throw CommandError("\(recording): no such file")
            }
            var stages: [(String, DetectorKind?, String)] = [("decode", nil, "")]
            for kind in DetectorKind.allCases {
                if let path = try? store.path(of: kind.defaultModel) {
                    stages.append(("decode+\(kind.rawValue)", kind, path))
                }
            }
            for (label, kind, modelPath) in stages {
                let settings = DetectorSettings.defaults(for: kind ?? .centerface)
                let detector = try kind.map {
                    try OpenCVFaceDetector(kind: $0, modelPath: modelPath, settings: settings)
                }
                let source = try VideoFileSource(path: recording)
                var count = 0
                var faces = 0
                let clock = ContinuousClock()
                let start = clock.now
                while count < frames, let frame = try source.next() {
                    if let detector { faces += try detector.detect(frame.image).count }
                    count += 1
                }
                let swiftFPS = Double(count) / (clock.now - start).seconds
                let reference = try runLoop(
                    loop,
                    [
                        recording, kind?.rawValue ?? "none", modelPath.isEmpty ? "-" : modelPath,
                        "\(settings.longestSide)", "\(settings.scoreThreshold)", "\(settings.nmsThreshold)",
                        "\(settings.minFaceSize)", "\(settings.blankThreshold)", "\(frames)",
                    ])
                let cxxFPS = Double(reference.frames) / reference.seconds
                let name = URL(fileURLWithPath: recording).lastPathComponent
                print(
                    name.padding(toLength: 26, withPad: " ", startingAt: 0) + " "
                        + label.padding(toLength: 18, withPad: " ", startingAt: 0)
                        + String(
                            format: "%7d %13.1f %9.1f %7.2f   %d / %d", count, swiftFPS, cxxFPS, swiftFPS / cxxFPS,
                            faces, reference.faces))
            }
        }
    }

    private func runLoop(_ path: String, _ arguments: [String]) throws -> (frames: Int, seconds: Double, faces: Int) {
        let values = BenchPipeline.pairs(try BenchPipeline.run(path, arguments)[0])
        guard let frames = values["frames"], let seconds = values["seconds"], let faces = values["faces"] else {
            throw CommandError("sentinel-cxx-loop printed no figures")
        }
        return (Int(frames), seconds, Int(faces))
    }
}

/// The service the SSE and MQTT benches feed: one camera with one zone and no source started (the bench hands
/// visitor events to the hub itself, with the returned mask), on a free port, its database in `folder`. `extra`
/// adds pipeline sections.
func startBenchService(in folder: URL, extra: String = "") async throws -> (
    service: SentinelService, port: Int, task: Task<Void, any Error>, mask: PrivacyMask
) {
    let definition = try ServiceDefinition.parse(
        """
        version: 1
        sources:
          - id: showroom
            input: showroom.mp4
            zones:
              - name: display
                polygon: [[0, 0], [1, 0], [1, 1], [0, 1]]
        """ + extra, file: folder.appendingPathComponent("bench.yml").path)
    var options = SentinelService.Options()
    options.sources = []
    options.hosting.port = 0
    options.hosting.databasePath = folder.appendingPathComponent("bench.sqlite").path
    var logger = Logger(label: "sentinel.bench")
    logger.logLevel = .warning
    let (service, port, task) = try await SentinelService.start(
        definition: definition, models: try ModelStore.located(folder: nil), options: options, logger: logger)
    return (service, port, task, PrivacyMask(policy: definition.pipeline.privacy, keys: try PseudonymKeyRing()))
}

/// A loopback TCP port nothing listens on now, for a server that must be told its port.
func freeLoopbackPort() -> Int {
    let probe = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(probe, $0, length) }
    }
    _ = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(probe, $0, &length) }
    }
    close(probe)
    return Int(UInt16(bigEndian: address.sin_port))
}

extension [Double] {
    /// The value a fraction `p` (0...1) of the way up these values, which are sorted ascending; NaN when empty.
    func percentile(_ p: Double) -> Double {
        isEmpty ? .nan : self[Swift.min(count - 1, Int(Double(count) * p))]
    }
}
