import ArgumentParser
import Foundation
import NIOCore
import SentinelClient
import SentinelCommandLine
import SentinelCore
import SentinelLoopback
import SentinelPrivacy
import SentinelRuntime
import SentinelServer
import ServiceLifecycle

/// The SSE fan-out bench: this process is the server, fed visitor events at a fixed rate through the same hub,
/// store and broadcaster as `sentinel run`; the subscribers live in a child process, so the server's CPU and memory
/// are its own.
///
/// Latency is measured from when each event was due (start + k / rate), as load tools that avoid coordinated
/// omission do: a server that falls behind is charged for it.
struct BenchSSE: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sse",
        abstract: "SSE fan-out on loopback: delivery latency p50/p99, lost events, server RSS and CPU.")

    @Option(parsing: .upToNextOption, help: "Subscriber counts to measure, one run each.")
    var subscribers: [Int] = [100, 1000]

    @Option(help: "Visitor events per second.")
    var rate = 50.0

    @Option(help: "Seconds of events per run.")
    var seconds = 10.0

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
        print(
            "subscribers  events  rate/s   p50 ms   p99 ms   max ms   lost (clients keeping up)  cut off  server RSS MB  server CPU %"
        )
        for count in subscribers { try await measure(subscribers: count) }
    }

    private func measure(subscribers count: Int) async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "sentinel-bench-sse-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        var (service, port, server, mask) = try await startBenchService(in: folder)

        let events = Int(rate * seconds)
        let child = Process()
        child.executableURL = URL(fileURLWithPath: CommandLine.arguments[0])
        child.arguments = [
            "sse", "--clients-of", "\(port)", "--subscribers", "\(count)", "--rate", "\(rate)", "--seconds",
            "\(seconds)",
        ]
        let input = Pipe()
        let output = Pipe()
        child.standardInput = input
        child.standardOutput = output
        try child.run()
        let deadline = Date().addingTimeInterval(60)
        while service.broadcaster.subscriberCount < count {
            guard Date() < deadline, child.isRunning else {
                throw CommandError("only \(service.broadcaster.subscriberCount) of \(count) subscribers connected")
            }
            try await Task.sleep(for: .milliseconds(50))
        }

        let before = ProcessUsage.now()
        let start = Date()
        for k in 0..<events {
            let due = start.addingTimeInterval(Double(k) / rate)
            if due > Date() { try await Task.sleep(for: .seconds(due.timeIntervalSinceNow)) }
            let visitor = VisitorRecord(
                faceId: "showroom#0#\(k % 12)", sourceId: "showroom", zone: "display", state: .active,
                zones: [.init(zone: "display", dwellSeconds: Double(k) / rate)], dwellSeconds: Double(k) / rate,
                firstSeen: start,
                lastSeen: due, emotion: .known(.happy), emotionConfidence: 0.9, valence: 1)
            service.hub.submit(try mask.mask(VisitorEvent(type: .updated, time: due, visitor: visitor)))
        }
        let atEnd = ProcessUsage.now()
        // The child reads when the run began, then reports once every subscriber has everything (or gave up).
        input.fileHandleForWriting.write(Data("\(start.timeIntervalSince1970)\n".utf8))
        let report = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        child.waitUntilExit()
        let after = ProcessUsage.now()
        await service.group.triggerGracefulShutdown()
        try await server.value
        guard let result = try? JSONDecoder().decode(Clients.Report.self, from: Data(report.utf8)) else {
            throw CommandError("the subscriber process failed: \(report)")
        }
        let cpu = (after.cpuSeconds - before.cpuSeconds) / after.wall.timeIntervalSince(before.wall) * 100
        print(
            String(
                format: "%11d %7d %7.0f %8.2f %8.2f %8.2f   %24d %8d %14.1f %13.1f",
                count, events, rate, result.p50, result.p99, result.max, result.lost, result.cutOff,
                atEnd.residentMegabytes, cpu))
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
        for arrivals in results {
            if arrivals.last?.isNaN == true {
                cut += 1
                continue
            }
            lost += events - arrivals.count
            for (k, arrival) in arrivals.enumerated() {
                latencies.append((arrival - (start + Double(k) / rate)) * 1000)
            }
        }
        latencies.sort()
        func percentile(_ p: Double) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int(Double(latencies.count) * p))]
        }
        let report = Report(
            p50: percentile(0.5), p99: percentile(0.99), max: latencies.last ?? .nan, lost: lost, cutOff: cut)
        FileHandle.standardOutput.write(try JSONEncoder().encode(report))
    }

    /// Wall times at which events 1, 2, ... arrived; a last NaN marks a client the server cut off.
    func receive() async throws -> [Double] {
        var parser = EventStreamParser()
        var arrivals: [Double] = []
        try await LoopbackClient.get(port: port, path: "/events", timeout: .seconds(Int64(Double(events) / rate) + 120))
        { chunk in
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

/// This process's CPU time and resident memory.
struct ProcessUsage {
    var wall: Date
    var cpuSeconds: Double
    var residentMegabytes: Double

    static func now() -> ProcessUsage {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        let cpu =
            Double(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) + Double(
                usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6
        // The second field of statm: resident pages.
        let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
        let pages = statm.split(separator: " ").dropFirst().first.flatMap { Double($0) } ?? 0
        return ProcessUsage(
            wall: Date(), cpuSeconds: cpu, residentMegabytes: pages * Double(sysconf(Int32(_SC_PAGESIZE))) / 1_048_576)
    }
}
