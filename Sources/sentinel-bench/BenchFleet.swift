import ArgumentParser
import Foundation
import GRDB
import Logging
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelMQTT
import SentinelStore
import SentinelVision
import SentinelWire
import Synchronization

/// The fleet bench: simulated sites publishing realistic envelopes (a box's
/// `visitor.updated`, log ids in order) at a fixed rate through Debian's mosquitto on loopback into `sentinel fleet`
/// processes (the build's binary beside this one): one on its SQLite file, or replicas sharing a throwaway Debian
/// PostgreSQL, one of which may be killed with -9 mid-run and started again. Latency runs from when each event was due
/// at its site to when the bench, following the store's log every 5 ms, first saw it committed.
struct BenchFleet: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fleet",
        abstract:
            "Fleet aggregators through a real broker: sustained events/s, latency p50/p99, lost, duplicates, RSS.")

    @Option(help: "Simulated sites.")
    var sites = 100

    @Option(help: "Events per second of each site.")
    var rate = 5.0

    @Option(help: "Seconds of events.")
    var seconds = 20.0

    @Flag(help: "Store into a throwaway PostgreSQL server (Debian's postgresql) instead of SQLite.")
    var postgres = false

    @Option(help: "sentinel fleet processes in one shared-subscription group (more than 1 needs --postgres).")
    var replicas = 1

    @Option(help: "Kill the first replica with -9 this many seconds into the events, and start it again at once.")
    var killAfter: Double?

    func validate() throws {
        try checkRange(sites, "sites", 1...2_000)
        try checkRange(rate, "rate", 0.1...1_000)
        try checkRange(seconds, "seconds", 1...3_600)
        try checkRange(replicas, "replicas", 1...8)
        if replicas > 1, !postgres { throw ValidationError("--replicas above 1 share a store: add --postgres") }
        if let killAfter, !(0..<seconds).contains(killAfter) {
            throw ValidationError("--kill-after must fall within the --seconds of events")
        }
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
        let database = postgres ? try ThrowawayPostgres(in: folder.appendingPathComponent("postgresql")) : nil
        defer { database?.stop() }

        // Each replica its own file: the same group and store, its own client id.
        var files: [URL] = []
        for replica in 0..<replicas {
            let file = folder.appendingPathComponent("fleet-\(replica).yml")
            try """
            version: 1
            broker: { url: "\(url)", clientId: bench-fleet-\(replica), group: bench }
            sites: { learn: \(sites) }
            store: { path: \(folder.appendingPathComponent("fleet.sqlite").path) }
            \(database.map { "database: { url: \"\($0.url)\", tls: disable }" } ?? "")
            """.write(to: file, atomically: true, encoding: .utf8)
            files.append(file)
        }
        var fleets = try files.map { try FleetProcess(file: $0, logs: folder) }
        defer { for fleet in fleets { fleet.kill() } }
        for fleet in fleets { try await fleet.waitUntilServing() }
        var logger = Logger(label: "bench-fleet")
        logger.logLevel = .error
        // The log as it grows; its connections run beside the bench, and stop with it.
        let (follow, shared) = try await Self.follower(database, folder: folder, logger: logger)
        async let _ = shared?.run()
        // Sites share at most 100 connections (site i on connection i % 100, so each site's events stay in order):
        // libmosquitto's loop waits with select(), which cannot watch a descriptor numbered past 1,023, and a
        // connection takes three of this process's descriptors.
        let publishers = try (0..<min(sites, 100)).map { i in
            let client = try MQTTClient(clientID: "bench-sites-\(i)")
            try client.start(try BenchMQTT.endpoint(url))
            return client
        }
        try await Task.sleep(for: .seconds(1))
        let before = ProcessUsage.of(fleets.map(\.pid))

        // Each site publishes its k-th event at start + k / rate (sites staggered across the first interval); the
        // event's dwell (kept to the millisecond, where its time is rounded to the second) says k, so the bench finds
        // each one in the log whatever replica stored it, in whatever order.
        let perSite = Int(rate * seconds)
        let clock = ContinuousClock()
        let start = clock.now + .milliseconds(100)
        func due(_ site: Int, _ k: Int) -> ContinuousClock.Instant {
            start + .seconds((Double(k) + Double(site) / Double(sites)) / rate)
        }
        let wallStart = Date()
        let counter = Counter()
        let watcher = Task { try await Self.watch(follow, clock: clock, rate: rate, sites: sites, counter: counter) }
        var killed: (at: Double, restarted: Double)?
        for k in 0..<perSite {
            if let killAfter, killed == nil, Double(k) / rate >= killAfter {
                let at = (clock.now - start).seconds
                fleets[0].kill()
                fleets[0] = try FleetProcess(file: files[0], logs: folder)
                killed = (at, (clock.now - start).seconds)
            }
            for site in 0..<sites {
                let at = due(site, k)
                if at > clock.now { try await Task.sleep(until: at) }
                let time = wallStart.addingTimeInterval((at - start).seconds)
                let envelope = try Self.envelope(
                    site: site, k: k, dwell: (at - start).seconds, since: wallStart, at: time)
                try publishers[site % publishers.count].publish(
                    topic: "sentinel/s\(site)/showroom/visitor.updated", payload: envelope,
                    properties: [("id", "\(k + 1)"), ("site", "s\(site)")])
            }
        }
        let total = perSite * sites
        let deadline = clock.now + .seconds(30)
        while clock.now < deadline, counter.count < total { try await Task.sleep(for: .milliseconds(50)) }
        try await Task.sleep(for: .milliseconds(200))
        watcher.cancel()
        let seen = try await watcher.value
        // A killed fleet's CPU went with it: no figure then.
        let after = ProcessUsage.of(fleets.map(\.pid))
        let cpu =
            killed == nil ? (after.cpuSeconds - before.cpuSeconds) / after.wall.timeIntervalSince(before.wall) : .nan
        for fleet in fleets { fleet.stop() }

        var latencies: [Double] = []
        for site in 0..<sites {
            for k in 0..<perSite {
                if let at = seen.first[Watch.Key(site: site, k: k)] {
                    latencies.append((at - due(site, k)).seconds * 1000)
                }
            }
        }
        latencies.sort()
        let stored = seen.first.count
        let last = seen.first.values.max().map { ($0 - start).seconds } ?? .nan
        print(
            "\(postgres ? "PostgreSQL" : "SQLite"), \(replicas) replica\(replicas == 1 ? "" : "s")"
                + (killed.map { String(format: ", the first killed with -9 at %.1f s and started again", $0.at) } ?? "")
        )
        print(
            "sites  rate/site  events  stored  lost  dupl  sustained/s   p50 ms   p99 ms   max ms  fleets' CPU %  fleets' RSS MB (before→after)"
        )
        print(
            String(
                format: "%5d %10.1f %7d %7d %5d %5d %12.0f %8.1f %8.1f %8.1f %14.0f  %.0f→%.0f", sites, rate, total,
                stored, total - stored, seen.rows - stored, Double(stored) / last, latencies.percentile(0.5),
                latencies.percentile(0.99), latencies.last ?? .nan, cpu * 100, before.residentMegabytes,
                after.residentMegabytes))
    }

    /// How the bench reads the log as it grows: from the shared PostgreSQL store (returned, for its connections to be
    /// run), or from the SQLite file beside the fleet that owns it.
    static func follower(_ database: ThrowawayPostgres?, folder: URL, logger: Logger) async throws -> (
        @Sendable (Int64) async throws -> [(id: Int64, streamId: String, type: String, payload: Data)],
        PostgresEventStore?
    ) {
        if let database {
            var server = DatabaseServer(url: database.url)
            server.tls = .disable
            let store = try await PostgresEventStore.open(server, logger: logger)
            return (
                { after in
                    try await store.events(after: after, limit: 10_000).map {
                        ($0.id, $0.streamId, $0.type.rawValue, $0.payload)
                    }
                }, store
            )
        }
        var configuration = Configuration()
        configuration.readonly = true
        let file = try DatabasePool(
            path: folder.appendingPathComponent("fleet.sqlite").path, configuration: configuration)
        return (
            { after in
                try await file.read { db in
                    try Row.fetchAll(
                        db, sql: "SELECT id, streamId, type, payload FROM events WHERE id > ? ORDER BY id LIMIT 10000",
                        arguments: [after]
                    ).map { ($0["id"], $0["streamId"], $0["type"], Data(($0["payload"] as String).utf8)) }
                }
            }, nil
        )
    }

    /// Site `site`'s `k`-th event as a box forwards it: its dwell says k, to the millisecond.
    static func envelope(site: Int, k: Int, dwell: Double, since first: Date, at time: Date) throws -> Data {
        let visitor = VisitorRecord(
            faceId: pseudonym(site * 1_000_000 + k / 20), sourceId: "showroom", zone: "display", state: .active,
            zones: [.init(zone: "display", dwellSeconds: dwell)], dwellSeconds: dwell, firstSeen: first, lastSeen: time,
            emotion: .known(.happy), emotionConfidence: 0.8, valence: 0.6)
        let payload = try JSONEncoder.sentinel().encode(VisitorEvent(type: .updated, time: time, visitor: visitor))
        return Data(
            ("{\"site\":\"s\(site)\",\"id\":\(k + 1),\"payload\":\(String(decoding: payload, as: UTF8.self)),"
                + "\"payloadType\":\"visitor.updated\",\"sequenceNumber\":\(k + 1),\"streamId\":\"showroom\","
                + "\"timestamp\":\"\(ISO8601.string(from: time))\"}").utf8)
    }

    /// What the bench saw in the log: when each (site, k) was first there, and how many visitor rows in all (more
    /// than the keys: a duplicate).
    struct Watch: Sendable {
        struct Key: Hashable, Sendable {
            var site: Int
            var k: Int
        }
        var first: [Key: ContinuousClock.Instant] = [:]
        var rows = 0
    }

    /// How many events the watcher has seen, for the publisher's wait at the end.
    final class Counter: Sendable {
        private let value = Mutex(0)
        var count: Int {
            get { value.withLock { $0 } }
            set { value.withLock { $0 = newValue } }
        }
    }

    /// Follows the log every 5 ms until cancelled.
    static func watch(
        _ follow: @Sendable (Int64) async throws -> [(id: Int64, streamId: String, type: String, payload: Data)],
        clock: ContinuousClock, rate: Double, sites: Int, counter: Counter
    ) async throws -> Watch {
        var watch = Watch()
        var after: Int64 = 0
        let decoder = JSONDecoder.sentinel()
        while !Task.isCancelled {
            let rows: [(id: Int64, streamId: String, type: String, payload: Data)]
            do {
                rows = try await follow(after)
            } catch  where Task.isCancelled {
                break  // PostgreSQL's client ends a query cancelled at the end of the run with CancellationError
            }
            let now = clock.now
            for row in rows where row.type == VisitorEvent.Kind.updated.rawValue {
                guard row.streamId.hasPrefix("s"), let site = Int(row.streamId.dropFirst().prefix { $0 != "/" }),
                    let dwell = try? decoder.decode(VisitorEvent.self, from: row.payload).visitor.dwellSeconds
                else { continue }
                // Its dwell is (k + site / sites) / rate.
                let k = Int((dwell * rate - Double(site) / Double(sites)).rounded())
                watch.rows += 1
                if watch.first[Watch.Key(site: site, k: k)] == nil { watch.first[Watch.Key(site: site, k: k)] = now }
            }
            after = rows.last?.id ?? after
            counter.count = watch.first.count
            if rows.isEmpty { try? await Task.sleep(for: .milliseconds(5)) }
        }
        return watch
    }
}

/// A `sentinel fleet` process: the build's binary beside this one, its output in a log file of its own.
final class FleetProcess {
    let process = Process()
    let log: URL
    var pid: pid_t { process.processIdentifier }

    init(file: URL, logs: URL) throws {
        let binary = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
            .appendingPathComponent("sentinel")
        log = logs.appendingPathComponent(
            file.deletingPathExtension().lastPathComponent + "-\(UUID().uuidString.prefix(6)).log")
        guard FileManager.default.createFile(atPath: log.path, contents: nil) else {
            throw CommandError("cannot create \(log.path)")
        }
        let handle = try FileHandle(forWritingTo: log)
        process.executableURL = binary
        process.arguments = ["fleet", file.path, "--port", "0"]
        process.standardOutput = handle
        process.standardError = handle
        do { try process.run() } catch { throw CommandError("cannot start \(binary.path) (build it first): \(error)") }
    }

    /// Waits until its banner names the port it serves on.
    func waitUntilServing() async throws {
        for _ in 0..<300 {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if text.contains("on http://127.0.0.1:") { return }
            guard process.isRunning else { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        throw CommandError("sentinel fleet did not start: \((try? String(contentsOf: log, encoding: .utf8)) ?? "")")
    }

    func kill() {
        guard process.isRunning else { return }
        Foundation.kill(pid, SIGKILL)
        process.waitUntilExit()
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}

/// Debian's PostgreSQL on a throwaway cluster: initdb in `folder` (user `sentinel`, trust authentication, loopback
/// only, the server's default durability), a free port, and the `postgres` user when this runs as root (PostgreSQL
/// refuses to run as root). Stopped with a fast shutdown.
final class ThrowawayPostgres {
    let port: Int
    let data: URL
    let bin: String
    let server: Process

    var url: String { "postgres://sentinel@127.0.0.1:\(port)/postgres" }

    init(in folder: URL) throws {
        let versions = ((try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? [])
            .compactMap(Int.init).sorted()
        guard let version = versions.last else {
            throw CommandError("no PostgreSQL server in /usr/lib/postgresql (apt install postgresql; make deps does)")
        }
        bin = "/usr/lib/postgresql/\(version)/bin"
        data = folder.appendingPathComponent("data")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if getuid() == 0 {
            guard let owner = getpwnam("postgres") else {
                throw CommandError("no postgres user (apt install postgresql)")
            }
            chown(folder.path, owner.pointee.pw_uid, owner.pointee.pw_gid)
        }
        try Self.run(
            Self.asPostgres([
                "\(bin)/initdb", "-D", data.path, "-U", "sentinel", "-A", "trust", "-E", "UTF8",
                "--no-instructions",
            ]))
        port = freeLoopbackPort()
        server = Process()
        let command = Self.asPostgres([
            "\(bin)/postgres", "-D", data.path, "-p", "\(port)", "-k", folder.path, "-c", "listen_addresses=127.0.0.1",
        ])
        server.executableURL = URL(fileURLWithPath: command[0])
        server.arguments = Array(command.dropFirst())
        server.standardOutput = FileHandle.nullDevice
        server.standardError = FileHandle.nullDevice
        try server.run()
        for _ in 0..<300 {
            if (try? Self.run(["\(bin)/pg_isready", "-q", "-h", "127.0.0.1", "-p", "\(port)"])) != nil { return }
            Thread.sleep(forTimeInterval: 0.1)
        }
        stop()
        throw CommandError("PostgreSQL did not answer on port \(port)")
    }

    func stop() {
        _ = try? Self.run(Self.asPostgres(["\(bin)/pg_ctl", "-D", data.path, "-m", "fast", "-w", "stop"]))
        if server.isRunning { server.terminate() }
    }

    private static func asPostgres(_ command: [String]) -> [String] {
        getuid() == 0 ? ["/usr/sbin/runuser", "-u", "postgres", "--"] + command : command
    }

    /// Runs a command to its end; throws when it fails.
    @discardableResult
    private static func run(_ command: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: command[0])
        process.arguments = Array(command.dropFirst())
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw CommandError("\(command.joined(separator: " ")) failed (status \(process.terminationStatus))")
        }
        return process.terminationStatus
    }
}
