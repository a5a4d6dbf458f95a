import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelMQTT
import SentinelPrivacy
import SentinelRuntime
import SentinelVision
import SentinelWire
import ServiceLifecycle

/// The MQTT output bench: this process is the box, fed visitor events at a fixed rate through the same hub, store and
/// MQTT output as `sentinel run`, forwarding to Debian's mosquitto on loopback (started here unless `--broker` names
/// one); a consumer in this process records when each log id arrives. Latency runs from when each event was due, so a
/// box that falls behind is charged for it.
struct BenchMQTT: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mqtt",
        abstract: "MQTT output through a real broker: sustained events/s, end-to-end latency p50/p99, lost events.")

    @Option(help: "Visitor events per second.")
    var rate = 200.0

    @Option(help: "Seconds of events.")
    var seconds = 10.0

    @Option(help: "A broker to use (mqtt://host:port); by default Debian's mosquitto is started on a loopback port.")
    var broker: String?

    func validate() throws {
        try checkRange(rate, "rate", 1...100_000)
        try checkRange(seconds, "seconds", 1...3600)
        if let broker, MQTTEndpoint(url: broker) == nil {
            throw ValidationError("--broker \(broker) is not a URL such as mqtt://127.0.0.1:1883")
        }
    }

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sentinel-bench-mqtt-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let started = try broker.map { ($0, nil) } ?? Self.startMosquitto(in: folder)
        // SIGKILL: a child of this process inherits its signal handling, and may never see SIGTERM.
        defer { if let broker = started.1 { kill(broker.processIdentifier, SIGKILL) } }
        let url = started.0

        let events = Int(rate * seconds)
        let consumer = Task { try await Self.consume(url: url, count: events, within: seconds + 60) }
        try await Task.sleep(for: .milliseconds(500))
        var (service, _, server, mask) = try await startBenchService(
            in: folder, extra: "\noutputs:\n  mqtt: { url: \"\(url)\", site: bench }\n")
        let clock = ContinuousClock()
        let start = clock.now
        let wallStart = Date()
        for k in 0..<events {
            let due = start + .seconds(Double(k) / rate)
            if due > clock.now { try await Task.sleep(until: due) }
            let time = wallStart.addingTimeInterval(Double(k) / rate)
            let visitor = VisitorRecord(
                faceId: "showroom#0#\(k % 12)", sourceId: "showroom", zone: "display", state: .active,
                dwellSeconds: Double(k) / rate, firstSeen: wallStart, lastSeen: time, emotion: .known(.happy),
                emotionConfidence: 0.9, valence: 1)
            service.hub.submit(try mask.mask(VisitorEvent(type: .updated, time: time, visitor: visitor)))
        }
        let arrivals = try await consumer.value
        await service.group.triggerGracefulShutdown()
        try await server.value

        // Log id k + 1 is the k-th event submitted: one writer, no other log entry in this run.
        var latencies: [Double] = []
        for k in 0..<events {
            guard let arrived = arrivals.first[Int64(k + 1)] else { continue }
            let due = start + .seconds(Double(k) / rate)
            latencies.append((arrived - due).seconds * 1000)
        }
        latencies.sort()
        let last = arrivals.first.values.max().map { ($0 - start).seconds } ?? .nan
        print("events  rate/s  delivered  lost  duplicates  sustained/s   p50 ms   p99 ms   max ms")
        let delivered = arrivals.first.count
        let sustained = Double(delivered) / last
        let worst = latencies.last ?? Double.nan
        print(
            String(
                format: "%6d %7.0f %10d %5d %11d %12.0f %8.1f %8.1f %8.1f", events, rate, delivered,
                events - delivered, arrivals.duplicates, sustained, latencies.percentile(0.5),
                latencies.percentile(0.99), worst))
    }

    /// Receives the bench's log events until `count` distinct ids have come or `within` seconds pass: when each id
    /// first arrived, and how many came again.
    /// The broker at `url` (the started mosquitto's, or `--broker`, which `validate` checked).
    static func endpoint(_ url: String) throws -> MQTTEndpoint {
        guard let endpoint = MQTTEndpoint(url: url) else { throw CommandError("\(url) is not a broker URL") }
        return endpoint
    }

    private static func consume(url: String, count: Int, within seconds: Double) async throws -> (
        first: [Int64: ContinuousClock.Instant], duplicates: Int
    ) {
        let client = try MQTTClient(clientID: "sentinel-bench-consumer")
        try client.subscribe("sentinel/bench/#")
        try client.start(try endpoint(url))
        var first: [Int64: ContinuousClock.Instant] = [:]
        var duplicates = 0
        let deadline = ContinuousClock.now + .seconds(seconds)
        while first.count < count, ContinuousClock.now < deadline {
            let now = ContinuousClock.now
            for message in client.takeMessages() where message.topic.split(separator: "/").count == 4 {
                guard let object = try? JSONSerialization.jsonObject(with: message.payload) as? [String: Any],
                    let id = (object["id"] as? NSNumber)?.int64Value
                else { continue }
                if first[id] == nil { first[id] = now } else { duplicates += 1 }
            }
            try await Task.sleep(for: .milliseconds(2))
        }
        return (first, duplicates)
    }

    /// Debian's mosquitto on a free loopback port, for this run only.
    static func startMosquitto(in folder: URL) throws -> (String, Process) {
        let port = freeLoopbackPort()
        let config = folder.appendingPathComponent("mosquitto.conf")
        // 1,000 messages in flight to each client (Mosquitto's default is 20): a fleet that acknowledges once it has
        // stored takes what arrived while it committed in one go.
        let lines = [
            "listener \(port) 127.0.0.1", "allow_anonymous true", "log_dest none", "max_inflight_messages 1000",
            getuid() == 0 ? "user root" : "",
        ]
        try lines.joined(separator: "\n").appending("\n").write(to: config, atomically: true, encoding: .utf8)
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/mosquitto")
        process.arguments = ["-c", config.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        do { try process.run() } catch {
            throw CommandError("cannot start /usr/sbin/mosquitto (make deps installs it): \(error)")
        }
        Thread.sleep(forTimeInterval: 0.5)
        guard process.isRunning else {
            throw CommandError("mosquitto exited at once (status \(process.terminationStatus))")
        }
        return ("mqtt://127.0.0.1:\(port)", process)
    }
}
