import ArgumentParser
import Foundation
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelCore
import SentinelLoopback
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import ServiceLifecycle
import Synchronization

/// The SSE fan-out bench: the same load against Sentinel and against nchan (nginx's pub/sub module, Debian's
/// `libnginx-mod-nchan`), one after the other. Sentinel is this process, fed visitor events at a fixed rate through
/// the same hub, store and broadcaster as `sentinel run`; nchan is an nginx the bench starts and stops, fed the same
/// events' envelopes by HTTP POST as they fall due. The subscribers live in a child process (the same code for
/// both), so a server's CPU and memory are its own.
///
/// Latency is measured from when each event was due (start + k / rate), as load tools that avoid coordinated
/// omission do: a server that falls behind is charged for it.
struct BenchSSE: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sse",
        abstract:
            "SSE fan-out on loopback, Sentinel beside nchan: delivered messages/s, latency p50/p99, lost events, server RSS and CPU."
    )

    @Option(parsing: .upToNextOption, help: "Subscriber counts to measure, one run each.")
    var subscribers: [Int] = [100, 1000]

    @Option(help: "Visitor events per second.")
    var rate = 50.0

    @Option(help: "Seconds of events per run.")
    var seconds = 10.0

    @Flag(inversion: .prefixedNo, help: "Run the same load against nchan (needs nginx and libnginx-mod-nchan).")
    var nchan = true

    @Option(help: .hidden)
    var clientsOf: Int?

    func validate() throws {
        guard !subscribers.isEmpty else { throw ValidationError("--subscribers: give at least one count") }
        for count in subscribers { try checkRange(count, "subscribers", 1...100_000) }
        try checkRange(rate, "rate", 0.1...100_000)
        try checkRange(seconds, "seconds", 1...3600)
        try checkRange(clientsOf, "clients-of", 1...65_535)
    }

    func run() async throws {
        if let port = clientsOf {
            try await Clients(port: port, count: subscribers[0], events: Int(rate * seconds), rate: rate).run()
            return
        }
        if nchan { try NchanServer.check() }
        print(
            "server    subscribers  events  rate/s  delivered/s   p50 ms   p99 ms   max ms   lost  cut off  server RSS MB  server CPU %  clients CPU %"
        )
        for count in subscribers {
            let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
                "sentinel-bench-sse-\(UUID().uuidString)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            // A run that fails stops its server: no nginx outlives the bench.
            func measured(_ server: some FanOutServer) async throws -> (
                delivered: Double, p99: Double, cpu: Double, rss: Double
            ) {
                do {
                    return try await measure(server, subscribers: count)
                } catch {
                    try? await server.stop()
                    throw error
                }
            }
            let ours = try await measured(try await SentinelServer(in: folder))
            guard nchan else { continue }
            let theirs = try await measured(try await NchanServer(in: folder))
            print(
                String(
                    format: "Sentinel / nchan: delivered %.2fx, p99 %.2fx, CPU %.2fx, RSS %.2fx",
                    ours.delivered / theirs.delivered, ours.p99 / theirs.p99, ours.cpu / theirs.cpu,
                    ours.rss / theirs.rss))
        }
    }

    /// One run: `count` subscribers connect, `rate * seconds` events are published as they fall due, and the
    /// subscriber process reports once every subscriber has every event (or was cut off). Prints the row.
    private func measure(_ server: some FanOutServer, subscribers count: Int) async throws -> (
        delivered: Double, p99: Double, cpu: Double, rss: Double
    ) {
        let events = Int(rate * seconds)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = [
            "sse", "--clients-of", "\(server.port)", "--subscribers", "\(count)", "--rate", "\(rate)", "--seconds",
            "\(seconds)",
        ]
        let input = Pipe()
        let output = Pipe()
        child.standardInput = input
        child.standardOutput = output
        let reaped = ProcessUsage.reapedChildren()
        try child.run()
        let deadline = Date().addingTimeInterval(60)
        while try await server.subscribers() < count {
            guard Date() < deadline, child.isRunning else {
                child.terminate()
                try await server.stop()
                throw CommandError(
                    "\(server.name): only \(try await server.subscribers()) of \(count) subscribers connected")
            }
            try await Task.sleep(for: .milliseconds(50))
        }

        let before = server.usage()
        let clientsBefore = ProcessUsage.of([child.processIdentifier])
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing())
        let start = Date()
        for k in 0..<events {
            let due = start.addingTimeInterval(Double(k) / rate)
            if due > Date() { try await Task.sleep(for: .seconds(due.timeIntervalSinceNow)) }
            let visitor = VisitorRecord(
                faceId: "showroom#0#\(k % 12)", sourceId: "showroom", zone: "display", state: .active,
                zones: [.init(zone: "display", dwellSeconds: Double(k) / rate)], dwellSeconds: Double(k) / rate,
                firstSeen: start,
                lastSeen: due, emotion: .known(.happy), emotionConfidence: 0.9, valence: 1)
            server.publish(try mask.mask(VisitorEvent(type: .updated, time: due, visitor: visitor)), id: k + 1)
        }
        let atEnd = server.usage()
        // The child reads when the run began, then reports once every subscriber has everything (or gave up).
        input.fileHandleForWriting.write(Data("\(start.timeIntervalSince1970)\n".utf8))
        // Read on a thread of its own: blocking one of the concurrency pool's threads (one per core) would leave the
        // server under test one thread to deliver the rest with.
        let report = await withCheckedContinuation { continuation in
            Thread {
                continuation.resume(
                    returning: String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self))
            }.start()
        }
        child.waitUntilExit()
        let after = server.usage()
        // The subscriber process's CPU from when all were connected to its end: what it used in all, less what it had
        // used by then (an earlier run's nginx, reaped before this child started, is in both sums).
        let clientsSeconds = ProcessUsage.reapedChildren() - reaped - clientsBefore.cpuSeconds
        let clientsCPU = clientsSeconds / after.wall.timeIntervalSince(before.wall) * 100
        try await server.stop()
        guard let result = try? JSONDecoder().decode(Clients.Report.self, from: Data(report.utf8)) else {
            throw CommandError("the subscriber process failed: \(report)")
        }
        let cpu = (after.cpuSeconds - before.cpuSeconds) / after.wall.timeIntervalSince(before.wall) * 100
        let delivered = Double(result.delivered) / max(seconds, result.lastArrival - start.timeIntervalSince1970)
        print(
            server.name.padding(toLength: 9, withPad: " ", startingAt: 0)
                + String(
                    format: " %11d %7d %7.0f %12.0f %8.2f %8.2f %8.2f %6d %8d %14.1f %13.1f %14.1f",
                    count, events, rate, delivered, result.p50, result.p99, result.max, result.lost, result.cutOff,
                    atEnd.residentMegabytes, cpu, clientsCPU))
        return (delivered, result.p99, cpu, atEnd.residentMegabytes)
    }
}

/// A server under the bench's load: it serves `/events` on loopback and publishes each event given.
protocol FanOutServer {
    var name: String { get }
    var port: Int { get }
    /// How many subscribers are connected.
    func subscribers() async throws -> Int
    /// Publishes a masked visitor event, the `id`th of the run, without waiting for the server's answer (a
    /// publisher that waited would fall behind the schedule on the server's latency, and that be charged to it).
    func publish(_ event: Masked, id: Int)
    /// The server's processes' CPU time and memory.
    func usage() -> ProcessUsage
    func stop() async throws
}

/// Sentinel: the service in this process, its hub fed directly, as a camera's events are.
struct SentinelServer: FanOutServer {
    let name = "Sentinel"
    let service: SentinelService
    let port: Int
    let task: Task<Void, any Error>

    init(in folder: URL) async throws {
        (service, port, task, _) = try await startBenchService(in: folder)
    }

    func subscribers() -> Int { service.broadcaster.subscriberCount }
    func publish(_ event: Masked, id: Int) { service.hub.submit(event) }
    func usage() -> ProcessUsage { .of([getpid()]) }

    func stop() async throws {
        await service.group.triggerGracefulShutdown()
        try await task.value
    }
}

/// nchan in Debian's nginx, with as many workers as cores: one channel, published by POST, subscribed to as an
/// EventSource. Each event is POSTed as the envelope Sentinel's stream carries, with its `event:` type, on a
/// connection of its own.
struct NchanServer: FanOutServer {
    let name = "nchan"
    static let module = "/usr/lib/nginx/modules/ngx_nchan_module.so"
    let port: Int
    let nginx: Process
    /// The POSTs under way.
    let posts = Posts()

    final class Posts: Sendable {
        let tasks = Mutex<[Task<Void, any Error>]>([])
    }

    static func check() throws {
        guard FileManager.default.isExecutableFile(atPath: "/usr/sbin/nginx"),
            FileManager.default.fileExists(atPath: module)
        else {
            throw CommandError(
                "nchan is not installed (Debian: nginx and libnginx-mod-nchan; make bench installs them), or pass --no-nchan"
            )
        }
    }

    init(in folder: URL) async throws {
        port = freeLoopbackPort()
        let prefix = folder.appendingPathComponent("nchan").path
        try FileManager.default.createDirectory(atPath: prefix, withIntermediateDirectories: true)
        // As root, nginx's workers would otherwise run as nobody, who cannot write in the bench's folder.
        let user = geteuid() == 0 ? "user root;" : ""
        let conf = """
            load_module \(Self.module);
            daemon off;
            \(user)
            worker_processes auto;
            worker_rlimit_nofile 65536;
            pid \(prefix)/nginx.pid;
            error_log \(prefix)/error.log warn;
            events { worker_connections 16384; }
            http {
              access_log off;
              client_body_temp_path \(prefix)/body;
              proxy_temp_path \(prefix)/proxy;
              fastcgi_temp_path \(prefix)/fastcgi;
              uwsgi_temp_path \(prefix)/uwsgi;
              scgi_temp_path \(prefix)/scgi;
              nchan_shared_memory_size 256M;
              server {
                listen 127.0.0.1:\(port);
                location = /pub { nchan_publisher; nchan_channel_id showroom; }
                location = /events {
                  nchan_subscriber eventsource;
                  nchan_channel_id showroom;
                  nchan_subscriber_first_message newest;
                }
              }
            }
            """
        let file = prefix + "/nginx.conf"
        try conf.write(toFile: file, atomically: true, encoding: .utf8)
        nginx = Process()
        nginx.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        nginx.arguments = ["-p", prefix, "-c", file, "-e", prefix + "/error.log"]
        try nginx.run()
        let deadline = Date().addingTimeInterval(10)
        while (try? await LoopbackClient.fetch(port: port, path: "/pub", headers: [("Accept", "text/json")])) == nil {
            guard nginx.isRunning, Date() < deadline else {
                let log = (try? String(contentsOfFile: prefix + "/error.log", encoding: .utf8)) ?? ""
                nginx.terminate()
                throw CommandError("nginx with nchan did not start: \(log)")
            }
            try await Task.sleep(for: .milliseconds(50))
        }
    }

    /// The channel's subscribers, from its publisher endpoint's JSON (404 until the first subscriber makes it).
    func subscribers() async throws -> Int {
        let (head, body) = try await LoopbackClient.fetch(port: port, path: "/pub", headers: [("Accept", "text/json")])
        guard head.status == 200 else { return 0 }
        struct Info: Decodable { var subscribers: Int }
        return (try? JSONDecoder().decode(Info.self, from: body).subscribers) ?? 0
    }

    func publish(_ event: Masked, id: Int) {
        let logged = LoggedEvent(
            id: Int64(id), sequenceNumber: Int64(id), streamId: event.published.event.visitor.sourceId,
            type: .visitor(event.published.event.type), time: event.published.event.time,
            zone: event.published.event.visitor.zone, payload: event.published.json)
        let body = Data(ServerSentEvents.envelope(for: logged).utf8)
        let post = Task { [port] in
            let (head, _) = try await LoopbackClient.fetch(
                port: port, path: "/pub",
                headers: [("Accept", "text/json"), ("X-EventSource-Event", logged.type.description)], body: body)
            guard (200..<300).contains(head.status) else {
                throw CommandError("nchan refused a message: \(head.status)")
            }
        }
        posts.tasks.withLock { $0.append(post) }
    }

    /// nginx's master and its workers.
    private var processes: [pid_t] {
        let master = nginx.processIdentifier
        let children = (try? String(contentsOfFile: "/proc/\(master)/task/\(master)/children", encoding: .utf8)) ?? ""
        return [master] + children.split(separator: " ").compactMap { pid_t($0) }
    }

    func usage() -> ProcessUsage { .of(processes) }

    /// SIGTERM to the master, which stops its workers (killed, its workers would be left serving).
    func stop() async throws {
        for post in posts.tasks.withLock({ $0 }) { try await post.value }
        let all = processes
        nginx.terminate()
        let deadline = Date().addingTimeInterval(10)
        while nginx.isRunning, Date() < deadline { try await Task.sleep(for: .milliseconds(50)) }
        guard !nginx.isRunning else {
            for pid in all { kill(pid, SIGKILL) }
            throw CommandError("nginx did not stop within 10 s: killed")
        }
    }
}

/// The subscribers of one bench run: `count` SSE clients on loopback, each recording when every event arrived.
struct Clients {
    let port: Int
    let count: Int
    let events: Int
    let rate: Double

    struct Report: Codable {
        var p50: Double
        var p99: Double
        var max: Double
        /// Events not received by clients that were not cut off.
        var lost: Int
        var cutOff: Int
        /// Messages received by clients that were not cut off, and when the last of them arrived (Unix time).
        var delivered: Int
        var lastArrival: Double
    }

    func run() async throws {
        let results = try await withThrowingTaskGroup(of: [Double].self) { group in
            for _ in 0..<count {
                group.addTask { try await receive() }
                // Connect in steps, so the listen backlog never overflows.
                try await Task.sleep(for: .milliseconds(2))
            }
            var all: [[Double]] = []
            for try await arrivals in group { all.append(arrivals) }
            return all
        }
        guard let line = readLine(), let start = Double(line) else {
            throw CommandError("no start time on standard input")
        }
        var latencies: [Double] = []
        var lost = 0
        var cut = 0
        var lastArrival = 0.0
        for arrivals in results {
            if arrivals.last?.isNaN == true {
                cut += 1
                continue
            }
            lost += events - arrivals.count
            lastArrival = max(lastArrival, arrivals.last ?? 0)
            for (k, arrival) in arrivals.enumerated() {
                latencies.append((arrival - (start + Double(k) / rate)) * 1000)
            }
        }
        latencies.sort()
        let report = Report(
            p50: latencies.percentile(0.5), p99: latencies.percentile(0.99), max: latencies.last ?? .nan, lost: lost,
            cutOff: cut,
            delivered: latencies.count, lastArrival: lastArrival)
        FileHandle.standardOutput.write(try JSONEncoder().encode(report))
    }

    /// Wall times at which events 1, 2, ... arrived; a last NaN marks a client the server cut off.
    func receive() async throws -> [Double] {
        var parser = EventStreamParser()
        var arrivals: [Double] = []
        try await LoopbackClient.get(
            port: port, path: "/events", headers: [("Accept", "text/event-stream")],
            timeout: .seconds(Int64(Double(events) / rate) + 120)
        ) { chunk in
            let now = Date().timeIntervalSince1970
            for message in parser.feed(chunk.readableBytesView) {
                if message.id != nil { arrivals.append(now) }
                if message.event == StreamNotice.cutoffType { arrivals.append(.nan) }
            }
            return arrivals.count < events
        }
        return arrivals
    }
}

/// The CPU time and resident memory of some processes, from /proc.
struct ProcessUsage {
    var wall: Date
    var cpuSeconds: Double
    var residentMegabytes: Double

    static func now() -> ProcessUsage { of([getpid()]) }

    /// The CPU seconds of this process's children that have ended and been waited for.
    static func reapedChildren() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_CHILDREN.rawValue, &usage)
        return Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec)
            + Double(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
    }

    static func of(_ pids: [pid_t]) -> ProcessUsage {
        let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
        let page = Double(sysconf(Int32(_SC_PAGESIZE)))
        var cpu = 0.0
        var pages = 0.0
        for pid in pids {
            // stat: utime and stime are the 14th and 15th fields, counted after the command's closing parenthesis.
            let stat = (try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)) ?? ""
            let fields = stat.split(separator: ")").last.map { $0.split(separator: " ") } ?? []
            if fields.count > 12 { cpu += ((Double(fields[11]) ?? 0) + (Double(fields[12]) ?? 0)) / ticks }
            // statm: the second field is resident pages.
            let statm = (try? String(contentsOfFile: "/proc/\(pid)/statm", encoding: .utf8)) ?? ""
            pages += statm.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
        }
        return ProcessUsage(wall: Date(), cpuSeconds: cpu, residentMegabytes: pages * page / 1_048_576)
    }
}
