import ArgumentParser
import Foundation
import Logging
import NIOCore
import SentinelAssembly
import SentinelClient
import SentinelConfig
import SentinelCore
import SentinelLoopback
import SentinelModels
import SentinelPrivacy
import SentinelStore
import SentinelVision
import ServiceLifecycle
import Synchronization

/// The store soak bench: a database filled with 30 days of a busy four-camera showroom, then served by the same
/// service as `sentinel run` while visitor events are written at a busy rate, REST clients read, and a client
/// resumes from far back.
struct BenchStore: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "store",
        abstract: "A store after 30 days of a busy showroom: write and REST latency, resume rate, file size, memory.",
        discussion: """
            Fills the database (if it holds fewer events) with visits of four cameras over the last 30 days, each \
            visit about ten events, through the privacy mask and the store's own batched writes; then, for \
            --seconds, writes visitor events at --rate in batches of a fifth of a second while REST clients read \
            /api/visitors (history of the last day) and /api/sentiment, each --rest-rate times a second (a busy \
            showroom's dashboards; 0 sends them back to back, which measures saturation rather than latency), and \
            prints the latencies; then resumes an \
            SSE stream from --resume events back and prints its rate. Keep the database (--database) to run again \
            without filling.
            """)

    @Option(help: "Events in the filled store.")
    var events = 10_000_000

    @Option(help: "The database to fill and use (default: a temporary one, deleted at the end).")
    var database: String?

    @Option(help: "Seconds of live writing and reading.")
    var seconds = 30.0

    @Option(help: "Visitor events written per second while live.")
    var rate = 200.0

    @Option(help: "Requests per second to each REST endpoint while live (0: back to back).")
    var restRate = 50.0

    @Option(help: "How many events back the resuming client starts.")
    var resume = 1_000_000

    func validate() throws {
        try checkRange(events, "events", 1_000...1_000_000_000)
        try checkRange(seconds, "seconds", 1...3_600)
        try checkRange(rate, "rate", 1...100_000)
        try checkRange(resume, "resume", 1...1_000_000_000)
    }

    static let cameras = ["door", "floor", "lounge", "counter"]
    static let zones = ["entrance", "display", "counter"]

    func run() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sentinel-bench-store-\(getpid())")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let path = database ?? folder.appendingPathComponent("soak.sqlite").path
        defer { if database == nil { try? FileManager.default.removeItem(at: folder) } }
        let definition = try ServiceDefinition.parse(
            "version: 1\nsources:\n"
                + Self.cameras.map { camera in
                    "  - id: \(camera)\n    input: \(camera).mp4\n    zones:\n"
                        + Self.zones.enumerated().map { i, zone in
                            "      - name: \(zone)\n        polygon: [[\(Double(i) / 3), 0], [\(Double(i + 1) / 3), 0], "
                                + "[\(Double(i + 1) / 3), 1], [\(Double(i) / 3), 1]]\n"
                        }.joined()
                }.joined(),
            file: folder.appendingPathComponent("soak.yml").path)
        var mask = PrivacyMask(policy: definition.pipeline.privacy, keys: try PseudonymKeyRing())

        let filled = try await fill(path, mask: &mask, policy: definition.pipeline.privacy)
        var options = SentinelService.Options()
        options.sources = []
        options.hosting.port = 0
        options.hosting.databasePath = path
        var logger = Logger(label: "sentinel.bench")
        logger.logLevel = .warning
        let (service, port, server) = try await SentinelService.start(
            definition: definition, models: try ModelStore.located(folder: nil), options: options, logger: logger)

        // The gauge's history asks for the last stored hour of readings, however long ago the fill ended (a
        // store filled yesterday has none in the last hour): a busy showroom's hour is the answer to measure.
        let newestReading = try await service.store.gaugeReadings(since: .distantPast, limit: 1).first.flatMap {
            try? JSONDecoder.sentinel().decode(GaugeReading.self, from: $0).time
        }
        let minutes = min(10_080, 60 + max(0, Int(-(newestReading ?? Date()).timeIntervalSinceNow / 60)))

        // Live: a writer at `rate`, two REST readers, memory sampled each second, and two canaries that only sleep
        // 10 ms at a time: a thread of its own, so that a pause of the whole process or machine shows apart from the
        // store's, and a task, so that Swift's pool held up (every task waits then) shows apart from the store's.
        let end = Date().addingTimeInterval(seconds)
        let live = ContinuousClock.now
        let stealBefore = Self.stealSeconds()
        let canary = Canary()
        async let writes = write(to: service.store, until: end, mask: mask, policy: definition.pipeline.privacy)
        async let visitors = read(port: port, until: end, rate: restRate) { _ in
            "/api/visitors?from=\(ISO8601.string(from: Date().addingTimeInterval(-86_400)))&limit=100"
        }
        async let sentiment = read(port: port, until: end, rate: restRate) { _ in "/api/sentiment?minutes=\(minutes)" }
        async let taskCanary = { () async throws -> [Timed] in
            var late: [Timed] = []
            while Date() < end {
                let start = ContinuousClock.now
                try await Task.sleep(for: .milliseconds(10))
                late.append(Timed(at: start, took: ContinuousClock.now - start - .milliseconds(10)))
            }
            return late
        }()
        var memory: [Double] = []
        while Date() < end {
            memory.append(ProcessUsage.now().residentMegabytes)
            try await Task.sleep(for: .seconds(1))
        }
        let (written, writeTimes) = try await writes
        let visitorTimes = try await visitors
        let sentimentTimes = try await sentiment
        let canaryTimes = canary.stop()
        let taskCanaryTimes = try await taskCanary
        let steal = Self.stealSeconds() - stealBefore

        // Resume from far back, as a dashboard that was away for a while.
        let last = try await service.store.logBounds().last
        let resumed = try await Self.resume(port: port, from: max(0, last - Int64(resume)), to: last)
        await service.group.triggerGracefulShutdown()
        try await server.value

        let size = ["", "-wal"].reduce(0.0) { total, suffix in
            total + ((try? FileManager.default.attributesOfItem(atPath: path + suffix)[.size] as? Double) ?? 0)
        }
        print("store: \(path)")
        print(
            String(
                format: "filled: %d events in the log (%@), file %.2f GB", last,
                filled.map {
                    String(
                        format: "%d written in %.0f s, %.0f events/s", $0.count, $0.seconds,
                        Double($0.count) / $0.seconds)
                }
                    ?? "already filled", size / 1e9))
        let report = LiveReport(
            start: live, seconds: seconds, written: written, writes: writeTimes,
            reads: [
                ("/api/visitors?from=(a day ago)&limit=100", "/api/visitors", visitorTimes),
                ("/api/sentiment?minutes=\(minutes) (the last stored hour)", "/api/sentiment", sentimentTimes),
            ], threadCanary: canaryTimes, taskCanary: taskCanaryTimes)
        report.print()
        print(String(format: "CPU time stolen by the hypervisor during the live phase: %.2f s", steal))
        print(
            String(
                format: "resume: %d events from id %d in %.1f s, %.0f events/s", resumed.received, resumed.from,
                resumed.seconds, Double(resumed.received) / resumed.seconds))
        print(
            "memory (RSS, MB) every 10 s of the live phase: "
                + stride(from: 0, to: memory.count, by: 10).map { String(format: "%.0f", memory[$0]) }.joined(
                    separator: " "))
        print(
            String(
                format: "memory (RSS) during the live phase: first %.0f MB, last %.0f MB, max %.0f MB",
                memory.first ?? 0, memory.last ?? 0, memory.max() ?? 0))
    }

    /// `/events?lastEventId=from` read through `last`, as a dashboard that was away for a while resumes: how many
    /// events came, in how long.
    static func resume(port: Int, from: Int64, to last: Int64) async throws -> (
        received: Int, from: Int64, seconds: Double
    ) {
        var parser = EventStreamParser()
        var received = 0
        var reached = from
        let start = ContinuousClock.now
        try await LoopbackClient.get(port: port, path: "/events?lastEventId=\(from)", timeout: .seconds(600)) { chunk in
            for message in parser.feed(chunk.readableBytesView) {
                guard let id = message.id.flatMap({ Int64($0) }) else { continue }
                received += 1
                reached = id
            }
            return reached < last
        }
        return (received, from, (ContinuousClock.now - start).seconds)
    }

    /// What the live phase measured: the batch writes, the REST readers and the two canaries, each in percentiles
    /// and with its pauses above 100 ms (time into the phase: duration).
    struct LiveReport {
        let start: ContinuousClock.Instant
        let seconds: Double
        let written: Int
        let writes: [Timed]
        /// Each reader as the figures name it, as the pause list names it, and its request times.
        let reads: [(name: String, short: String, times: [Timed])]
        let threadCanary: [Timed]
        let taskCanary: [Timed]

        func percentile(_ timed: [Timed], _ p: Double) -> Double {
            timed.map { $0.took.seconds * 1000 }.sorted().percentile(p)
        }

        func pauses(_ timed: [Timed]) -> String {
            let long = timed.filter { $0.took > .milliseconds(100) }
            guard !long.isEmpty else { return "none" }
            // A queue that fell behind makes hundreds: the first ten, and how many more up to how long.
            var listed = long.prefix(10).map {
                String(format: "%.1f s: %.0f ms", ($0.at - start).seconds, $0.took.seconds * 1000)
            }
            if let longest = long.dropFirst(10).map(\.took).max() {
                listed.append(String(format: "and %d more up to %.0f ms", long.count - 10, longest.seconds * 1000))
            }
            return listed.joined(separator: ", ")
        }

        func print() {
            Swift.print(
                String(
                    format:
                        "writes: %d events in %d batches over %.0f s; batch write p50 %.2f ms, p99 %.2f ms, max %.2f ms",
                    written, writes.count, seconds, percentile(writes, 0.5), percentile(writes, 0.99),
                    percentile(writes, 1)))
            for read in reads {
                Swift.print(
                    String(
                        format: "%@: %d requests, p50 %.2f ms, p99 %.2f ms, max %.2f ms", read.name, read.times.count,
                        percentile(read.times, 0.5), percentile(read.times, 0.99), percentile(read.times, 1)))
            }
            for (what, times) in [("a thread", threadCanary), ("a task", taskCanary)] {
                Swift.print(
                    String(
                        format: "canary (%@ sleeping 10 ms at a time): %d sleeps, late by p99 %.2f ms, max %.2f ms",
                        what, times.count, percentile(times, 0.99), percentile(times, 1)))
            }
            Swift.print("above 100 ms (time into the live phase: duration):")
            Swift.print("  batch writes: " + pauses(writes))
            for read in reads { Swift.print("  \(read.short): " + pauses(read.times)) }
            Swift.print("  thread canary lateness: " + pauses(threadCanary))
            Swift.print("  task canary lateness: " + pauses(taskCanary))
        }
    }

    /// The events of one visit: entered, a stay in a zone with updates, its exit, then exited; about ten events.
    static func visit(_ n: Int, at start: Date, source: String) -> [VisitorEvent] {
        let zone = zones[n % zones.count]
        let emotions: [Emotion] = [.happy, .neutral, .surprise, .sad]
        var events: [VisitorEvent] = []
        func record(_ t: Double, state: VisitState, inZone: Bool) -> VisitorRecord {
            VisitorRecord(
                faceId: "\(source)#0#\(n)", sourceId: source, zone: inZone ? zone : nil, state: state,
                zones: [.init(zone: zone, dwellSeconds: max(0, t - 2))], dwellSeconds: t, firstSeen: start,
                lastSeen: start.addingTimeInterval(t), emotion: .known(emotions[n % emotions.count]),
                emotionConfidence: 0.8,
                emotionDistribution: ["happy": 0.5, "neutral": 0.3, "surprise": 0.2], valence: 0.5)
        }
        events.append(VisitorEvent(type: .entered, time: start, visitor: record(0, state: .active, inZone: false)))
        events.append(
            VisitorEvent(
                type: .zoneEntered, time: start.addingTimeInterval(2), visitor: record(2, state: .active, inZone: true),
                stay: .init(zone: zone, enteredAt: start.addingTimeInterval(2))))
        for k in 1...6 {
            let t = 2 + Double(k) * 5
            events.append(
                VisitorEvent(
                    type: .updated, time: start.addingTimeInterval(t), visitor: record(t, state: .active, inZone: true))
            )
        }
        events.append(
            VisitorEvent(
                type: .zoneExited, time: start.addingTimeInterval(34),
                visitor: record(34, state: .active, inZone: false),
                stay: .init(
                    zone: zone, enteredAt: start.addingTimeInterval(2), exitedAt: start.addingTimeInterval(34),
                    dwellSeconds: 32)))
        var exited = VisitorEvent(
            type: .exited, time: start.addingTimeInterval(36), visitor: record(36, state: .exited, inZone: false))
        exited.reason = .lost
        events.append(exited)
        return events
    }

    /// Fills the store up to `events` with visits spread evenly over the last 30 days (and a gauge reading every
    /// 30 s of them); nil when it already holds that many.
    private func fill(_ path: String, mask: inout PrivacyMask, policy: PrivacyPolicy) async throws -> (
        count: Int, seconds: Double
    )? {
        let store = try EventStore(path: path)
        let have = Int(try await store.logBounds().last)
        guard have < events else { return nil }
        // Its checkpoints run while it is filled: a log never checkpointed grows by the whole fill.
        let checkpoints = Task { await store.run() }
        defer { checkpoints.cancel() }
        let perVisit = Self.visit(0, at: Date(), source: "door").count
        let visits = (events - have) / perVisit
        let span = 30 * 86_400.0
        let first = Date().addingTimeInterval(-span)
        var gauge = Aggregation(
            policy: policy, gauge: GaugeSettings(), sources: Self.cameras,
            zones: Self.cameras.flatMap { camera in Self.zones.map { ZoneID(sourceId: camera, name: $0) } }
        ).sentimentGauge()
        var batch: [LogEntry] = []
        var written = 0
        let clock = ContinuousClock()
        let start = clock.now
        for n in 0..<visits {
            let at = first.addingTimeInterval(span * Double(n) / Double(visits))
            for event in Self.visit(have + n, at: at, source: Self.cameras[n % Self.cameras.count]) {
                let masked = try mask.mask(event)
                gauge.record(masked.published)
                batch.append(.visitor(stored: masked.stored, published: masked.published))
            }
            if let reading = gauge.tick(now: at) { batch.append(.gauge(reading)) }
            if batch.count >= 5_000 {
                written += try await store.append(batch).count
                batch.removeAll(keepingCapacity: true)
                if n % 50_000 < 500 {
                    FileHandle.standardError.write(Data("filling: \(have + written) events\r".utf8))
                }
            }
        }
        written += try await store.append(batch).count
        FileHandle.standardError.write(Data("\n".utf8))
        return (written, (clock.now - start).seconds)
    }

    /// Writes visitor events at `rate` in batches every 0.2 s until `end`; the count and each batch's write time.
    private func write(to store: EventStore, until end: Date, mask: PrivacyMask, policy: PrivacyPolicy) async throws
        -> (Int, [Timed])
    {
        var mask = mask
        var times: [Timed] = []
        var count = 0
        var n = 10_000_000
        let perBatch = max(1, Int(rate / 5))
        while Date() < end {
            let due = ContinuousClock.now + .milliseconds(200)
            var batch: [LogEntry] = []
            while batch.count < perBatch {
                for event in Self.visit(n, at: Date(), source: Self.cameras[n % Self.cameras.count]) {
                    let masked = try mask.mask(event)
                    batch.append(.visitor(stored: masked.stored, published: masked.published))
                }
                n += 1
            }
            let start = ContinuousClock.now
            count += try await store.append(batch).count
            times.append(Timed(at: start, took: ContinuousClock.now - start))
            try await Task.sleep(until: due)
        }
        return (count, times)
    }

    /// GETs the path `path` gives until `end`, one request after another, and returns each request's time. At `rate`
    /// a request is due every 1/rate s and timed from when it was due, so a slow answer that delays the next one
    /// shows in that one too; at rate 0 they go back to back.
    private func read(
        port: Int, until end: Date, rate: Double, path: @escaping @Sendable (Int) -> String
    ) async throws -> [Timed] {
        var times: [Timed] = []
        var k = 0
        var due = ContinuousClock.now
        while Date() < end {
            var start = ContinuousClock.now
            if rate > 0 {
                try await Task.sleep(until: due)
                start = due
                due += .seconds(1 / rate)
            }
            let (head, _) = try await LoopbackClient.fetch(port: port, path: path(k))
            guard head.status == 200 else { throw CommandError("\(path(k)) answered \(head.status)") }
            times.append(Timed(at: start, took: ContinuousClock.now - start))
            k += 1
        }
        return times
    }
}

/// When something started, and how long it took.
struct Timed: Sendable {
    var at: ContinuousClock.Instant
    var took: Duration
}

extension BenchStore {
    /// The machine's stolen CPU time so far (/proc/stat's steal column, all CPUs): time a virtual machine's CPUs were
    /// ready to run but the hypervisor ran something else.
    static func stealSeconds() -> Double {
        let stat = (try? String(contentsOfFile: "/proc/stat", encoding: .utf8)) ?? ""
        guard let line = stat.split(separator: "\n").first(where: { $0.hasPrefix("cpu ") }) else { return .nan }
        let fields = line.split(separator: " ")
        guard fields.count > 8, let ticks = Double(fields[8]) else { return .nan }
        return ticks / Double(sysconf(Int32(_SC_CLK_TCK)))
    }
}

/// A thread that sleeps 10 ms at a time and records how late each wake-up was.
final class Canary: Sendable {
    private let state = Mutex((stopped: false, late: [Timed]()))

    init() {
        let thread = Thread { [self] in
            while true {
                let start = ContinuousClock.now
                Thread.sleep(forTimeInterval: 0.01)
                let late = ContinuousClock.now - start - .milliseconds(10)
                let stopped = state.withLock { state in
                    state.late.append(Timed(at: start, took: late))
                    return state.stopped
                }
                if stopped { return }
            }
        }
        thread.name = "canary"
        thread.start()
    }

    func stop() -> [Timed] {
        state.withLock { state in
            state.stopped = true
            return state.late
        }
    }
}
