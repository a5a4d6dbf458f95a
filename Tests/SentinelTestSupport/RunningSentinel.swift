public import Foundation
import GRDB
public import NIOCore
public import SentinelClient
import SentinelLoopback
import Synchronization

/// `sentinel run` as a user starts it: the real binary on a short rendered clip, looping, with the showroom pipeline's
/// zones and the default privacy policy.
public final class RunningSentinel: @unchecked Sendable {
    public let process = Process()
    public let folder: URL
    public let database: String
    public let logFile: URL
    public let port: Int

    /// The clip, rendered once on a thread of its own by whichever test asks first, and awaited by the others.
    public static let clip = Task { try await Fixtures.onOwnThread { try Fixtures.showroomClip(seconds: 12) } }

    /// The showroom pipeline's text, its source reading the short rendered clip.
    public static func showroomOnClip() async throws -> String {
        let showroom = try String(
            contentsOf: Fixtures.root.appendingPathComponent("Pipelines/showroom.yml"), encoding: .utf8)
        return showroom.replacingOccurrences(
            of: "input: ../Recordings/out/showroom-640x480.mp4", with: "input: \(try await clip.value.path)")
    }

    /// The showroom pipeline on a short rendered clip, looping, at `pace`.
    public convenience init(pace: String) async throws {
        try await self.init(
            pipeline: try await Self.showroomOnClip(), arguments: ["--pace", pace, "--loop", "--verbose"])
    }

    /// `sentinel run` on a pipeline file with this text, on a free port and a fresh database (or `database`, as a
    /// restart would).
    public convenience init(pipeline text: String, arguments: [String], database: String? = nil) async throws {
        let folder = try Fixtures.temporaryFolder()
        let database = database ?? folder.appendingPathComponent("sentinel.sqlite").path
        let pipeline = folder.appendingPathComponent("pipeline.yml")
        try text.write(to: pipeline, atomically: true, encoding: .utf8)
        try await self.init(
            arguments: ["run", pipeline.path, "--port", "0", "--database", database] + arguments, folder: folder,
            database: database)
    }

    /// `executable` (the build's sentinel by default) with these arguments, in `directory` (the checkout), with
    /// `environment` added to the test's; `folder` holds its log.
    public init(
        executable: URL = Fixtures.sentinel, arguments: [String], folder: URL, database: String,
        directory: URL = Fixtures.root, environment: [String: String] = [:]
    ) async throws {
        self.folder = folder
        self.database = database
        logFile = folder.appendingPathComponent("log.txt")
        _ = FileManager.default.createFile(atPath: logFile.path, contents: nil)
        let log = try FileHandle(forWritingTo: logFile)
        process.executableURL = executable
        process.arguments = arguments
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.standardOutput = log
        process.standardError = log
        try process.run()
        let pid = process.processIdentifier
        Self.running.withLock { _ = $0.insert(pid) }
        // The banner names the port it bound.
        let deadline = Date().addingTimeInterval(60)
        var found: Int?
        while found == nil, Date() < deadline, process.isRunning {
            try await Task.sleep(for: .milliseconds(100))
            let text = (try? String(contentsOf: logFile, encoding: .utf8)) ?? ""
            found = text.firstMatch(of: /on http:\/\/127\.0\.0\.1:(\d+)/).flatMap { Int($0.1) }
        }
        guard let found else {
            process.terminate()
            throw TestSupportError(
                "sentinel run did not start: \((try? String(contentsOf: logFile, encoding: .utf8)) ?? "")")
        }
        port = found
    }

    public var log: String { (try? String(contentsOf: logFile, encoding: .utf8)) ?? "" }

    /// Reads `/events` from the start until `count` events have arrived (or the stream ends).
    public func events(count: Int) async throws -> [EventStreamParser.Message] {
        try await events { $0.ids.count >= count }
    }

    /// Reads `/events` from the start until `enough` says so (or the stream ends, or `timeout` passes: a camera
    /// played in real time on a loaded machine needs more than a recording's length). A connection that fails is
    /// resumed with the last id received, as EventSource does (at most three times, each one printed): the SSE
    /// guarantee under test is that no event is lost or repeated across a reconnect.
    public func events(
        timeout: TimeAmount = .seconds(60), until enough: @escaping ([EventStreamParser.Message]) -> Bool
    ) async throws -> [EventStreamParser.Message] {
        var messages: [EventStreamParser.Message] = []
        for attempt in 0...3 {
            var parser = EventStreamParser()
            let resume = messages.ids.last ?? 0
            let started = ContinuousClock.now
            do {
                try await LoopbackClient.get(port: port, path: "/events?lastEventId=\(resume)", timeout: timeout) {
                    chunk in
                    messages += parser.feed(chunk.readableBytesView)
                    return !enough(messages)
                }
                return messages
            } catch  where attempt < 3 {
                // What the service said about its SSE streams (at debug level, with --verbose), for the next look.
                let said = log.split(separator: "\n").filter { $0.contains("SSE") }.suffix(6).joined(separator: "\n")
                print(
                    "SSE stream to sentinel run from id \(resume) failed after \(ContinuousClock.now - started) and "
                        + "id \(messages.ids.last ?? 0), \(messages.count) messages in all (\(error)); resuming. "
                        + "The service's log on SSE:\n\(said)")
            }
        }
        return messages
    }

    /// Runs `body`; an error it throws comes back with the end of the service's log, so a failure says what the
    /// service saw.
    public func explained<T>(_ body: () async throws -> T) async throws -> T {
        do {
            return try await body()
        } catch {
            throw TestSupportError(
                "\(error); running: \(process.isRunning); the service's log ends: \(log.suffix(4000))")
        }
    }

    /// A JSON document the running service answers at `path`.
    public func json(_ path: String) async throws -> [String: Any] {
        let body = try await LoopbackClient.fetch(port: port, path: path).1
        guard let object = try JSONSerialization.jsonObject(with: body) as? [String: Any] else {
            throw TestSupportError("\(path) did not answer a JSON object: \(String(decoding: body, as: UTF8.self))")
        }
        return object
    }

    /// Waits until a visitor is present with the clip at least 5 s from the end of its playback (its visitors stay to
    /// the end), so that a stop then has an open visit to close; an error saying what was last seen if that does not
    /// come within `seconds`. A visitor merely present is not enough: on a loaded machine the clip's end can close it
    /// before a signal is handled.
    public func waitForVisitorsMidClip(seconds: Double = 60) async throws {
        var seen = "nothing"
        let found = try await waitFor(seconds: seconds) {
            let health = try JSONDecoder.sentinel().decode(
                ServiceHealth.self, from: try await LoopbackClient.fetch(port: port, path: "/healthz").1)
            guard let frames = health.sources?.first?.frames else { return false }
            let visitors = String(
                decoding: try await LoopbackClient.fetch(port: port, path: "/api/visitors").1, as: UTF8.self)
            // The clip is 12 s at 15 fps (180 frames a playback); a frame is analysed or dropped once.
            let position = (frames.analysed + frames.dropped) % 180
            seen =
                "frame \(position) of a playback, \(frames.analysed) analysed, \(frames.dropped) dropped; \(visitors)"
            return (30..<105).contains(position) && visitors.contains("\"faceId\"")
        }
        guard found else {
            throw TestSupportError(
                "no visitor mid-clip within \(seconds) s; last seen: \(seen); the log ends: \(log.suffix(3000))")
        }
    }

    /// Waits for the process to end; its exit status, or nil after `seconds`.
    public func exitStatus(within seconds: Double) async throws -> Int32? {
        await process.ended(within: seconds) ? process.terminationStatus : nil
    }

    /// Every row of every table, as text.
    public func dump() throws -> [String: [String]] {
        let queue = try DatabaseQueue(path: database)
        return try queue.read { db in
            var tables: [String: [String]] = [:]
            for table in try String.fetchAll(
                db,
                sql:
                    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name != 'grdb_migrations'"
            ) {
                tables[table] = try Row.fetchAll(db, sql: "SELECT * FROM \(table)").map { row in
                    row.databaseValues.map { "\($0)" }.joined(separator: " | ")
                }
            }
            return tables
        }
    }

    deinit {
        if process.isRunning { kill(process.processIdentifier, SIGKILL) }
        let pid = process.processIdentifier
        Self.running.withLock { _ = $0.remove(pid) }
    }

    /// The services the test process started and has not released. A test that exceeds its time limit is abandoned,
    /// not ended, so its service is never released: each is killed when the test process exits, or it would go on
    /// serving (a looping clip in real time) and load every later run on the machine.
    private static let running: Mutex<Set<pid_t>> = {
        atexit {
            for pid in RunningSentinel.running.withLock({ $0 }) { kill(pid, SIGKILL) }
        }
        return Mutex([])
    }()
}

/// The tests' one way to wait for a condition: polls `condition` every 20 ms until it holds (true) or `seconds`
/// pass; an error counts as not yet (a server still starting) until the last try, whose error is thrown.
public func waitFor(seconds: Double = 10, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = ContinuousClock.now + .seconds(seconds)
    while ContinuousClock.now < deadline {
        if (try? await condition()) == true { return true }
        try await Task.sleep(for: .milliseconds(20))
    }
    return try await condition()
}

extension Array where Element == EventStreamParser.Message {
    /// The messages' ids, as numbers.
    public var ids: [Int64] { compactMap { $0.id.flatMap { Int64($0) } } }
}
