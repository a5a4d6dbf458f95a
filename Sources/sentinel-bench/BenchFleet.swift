import ArgumentParser
import Foundation
import Logging
import SentinelCommandLine
import SentinelConfig
import SentinelCore
import SentinelFleet
import SentinelMQTT
import SentinelServer
import SentinelStore
import SentinelVision
import ServiceLifecycle

/// The fleet bench: simulated sites, each its own MQTT connection publishing realistic envelopes (a box's
/// `visitor.updated`, log ids in order) at a fixed rate through Debian's mosquitto on loopback into `sentinel fleet`,
/// run in this process. Latency runs from when each event was due at its site to when the fleet had committed it.
struct BenchFleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract: "Fleet aggregator through a real broker: sustained events/s, latency p50/p99, lost, RSS.")

    @Option(help: "Simulated sites.")
    var sites = 100

    @Option(help: "Events per second of each site.")
    var rate = 5.0

    @Option(help: "Seconds of events.")
    var seconds = 20.0

    func validate() throws {
        try checkRange(sites, "sites", 1...2_000)
        try checkRange(rate, "rate", 0.1...1_000)
        try checkRange(seconds, "seconds", 1...3_600)
    }

    /// A pseudonym as a box makes them (16 characters of base32), one per number: the fleet refuses anything else.
    static func pseudonym(_ number: Int) -> String {
        let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
        return String((0..<16).map { alphabet[(number >> (5 * (15 - $0))) & 31] })
    }

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sentinel-bench-fleet-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let (url, broker) = try BenchMQTT.startMosquitto(in: folder)
        defer { kill(broker.processIdentifier, SIGKILL) }

        let definition = try FleetDefinition.parse(
            "version: 1\nbroker: { url: \"\(url)\" }\nsites: { learn: \(sites) }\n",
            file: folder.appendingPathComponent("fleet.yml").path)
        var options = SentinelService.Options()
        options.port = 0
        var logger = Logger(label: "bench-fleet")
        logger.logLevel = .error
        let fleet = try await FleetService(definition: definition, options: options, logger: logger)
        let task = Task { try await fleet.run() }
        let publishers = try (0..<sites).map { i in
            let client = try MQTTClient(clientID: "bench-site-\(i)")
            try client.start(try BenchMQTT.endpoint(url))
            return client
        }
        try await Task.sleep(for: .seconds(1))
        let rssBefore = ProcessUsage.now().residentMegabytes

        // Each site publishes its k-th event at start + k / rate (sites staggered across the first interval).
        let perSite = Int(rate * seconds)
        let clock = ContinuousClock()
        let start = clock.now + .milliseconds(100)
        func due(_ site: Int, _ k: Int) -> ContinuousClock.Instant {
            start + .seconds((Double(k) + Double(site) / Double(sites)) / rate)
        }
        let encoder = JSONEncoder.sentinel()
        let wallStart = Date()
        var committed: [String: ContinuousClock.Instant] = [:]  // "site/id" → first seen committed
        let watcher = Task {
            var seen: [String: Int64] = [:]
            var times: [String: ContinuousClock.Instant] = [:]
            while !Task.isCancelled {
                let now = clock.now
                for (site, last) in try await fleet.store.received() where last > seen[site, default: 0] {
                    for id in (seen[site, default: 0] + 1)...last { times["\(site)/\(id)"] = now }
                    seen[site] = last
                }
                try? await Task.sleep(for: .milliseconds(5))
            }
            return times
        }
        for k in 0..<perSite {
            for site in 0..<sites {
                let at = due(site, k)
                if at > clock.now { try await Task.sleep(until: at) }
                let time = wallStart.addingTimeInterval((at - start).seconds)
                let visitor = VisitorRecord(
                    faceId: Self.pseudonym(site * 1_000_000 + k / 20), sourceId: "showroom", zone: "display",
                    state: .active,
                    zones: [.init(zone: "display", dwellSeconds: (at - start).seconds)],
                    dwellSeconds: (at - start).seconds,
                    firstSeen: wallStart, lastSeen: time, emotion: .known(.happy), emotionConfidence: 0.8,
                    valence: 0.6)
                let payload = try encoder.encode(VisitorEvent(type: .updated, time: time, visitor: visitor))
                let envelope =
                    "{\"site\":\"s\(site)\",\"id\":\(k + 1),\"payload\":\(String(decoding: payload, as: UTF8.self)),"
                    + "\"payloadType\":\"visitor.updated\",\"sequenceNumber\":\(k + 1),\"streamId\":\"showroom\","
                    + "\"timestamp\":\"\(ISO8601.string(from: time))\"}"
                try publishers[site].publish(
                    topic: "sentinel/s\(site)/showroom/visitor.updated", payload: Data(envelope.utf8),
                    properties: [("id", "\(k + 1)"), ("site", "s\(site)")])
            }
        }
        let total = perSite * sites
        let deadline = clock.now + .seconds(30)
        while clock.now < deadline {
            if try await fleet.store.received().values.reduce(0, +) >= Int64(total) { break }
            try await Task.sleep(for: .milliseconds(50))
        }
        try await Task.sleep(for: .milliseconds(20))
        watcher.cancel()
        committed = try await watcher.value
        let rssAfter = ProcessUsage.now().residentMegabytes
        // Counted in the fleet's log, not from the sites' last ids: a gap would not show there.
        let delivered = try await fleet.store.events(after: 0, limit: total * 2).filter {
            $0.streamId.hasSuffix("/showroom")
        }.count
        await fleet.group.triggerGracefulShutdown()
        try await task.value

        var latencies: [Double] = []
        for site in 0..<sites {
            for k in 0..<perSite {
                if let at = committed["s\(site)/\(k + 1)"] { latencies.append((at - due(site, k)).seconds * 1000) }
            }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let last = committed.values.max().map { ($0 - start).seconds } ?? .nan
        print("sites  rate/site  events  stored  lost  sustained/s   p50 ms   p99 ms   max ms  RSS MB (before→after)")
        print(
            String(
                format: "%5d %10.1f %7d %7d %5d %12.0f %8.1f %8.1f %8.1f  %.0f→%.0f", sites, rate, total, delivered,
                total - delivered, Double(delivered) / last, percentile(0.5), percentile(0.99), latencies.last ?? .nan,
                rssBefore, rssAfter))
    }
}
