public import Foundation
public import SentinelModels
public import SentinelVision

/// Where tests find the repository's own files, and ../shared when it sits beside the checkout.
///
/// Required tests use only what `make setup` puts in the repository (models, Debian photos, sample
/// recordings); evaluation tests that need ../shared skip with a message when it is absent.
public enum Fixtures {
    public static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    public static let photos = root.appendingPathComponent("Recordings/faces")
    public static let recordings = root.appendingPathComponent("Recordings/out")
    public static let shared = root.deletingLastPathComponent().appendingPathComponent("shared")
    public static let hasShared = FileManager.default.fileExists(atPath: shared.appendingPathComponent("models").path)

    public static let store: ModelStore = {
        do {
            return try ModelStore(root: root.appendingPathComponent("Models").path)
        } catch {
            fatalError("Models/models.yml does not load: \(error)")
        }
    }()

    /// The path of a model `make setup` obtains, or an error telling how to get it.
    public static func model(_ name: String) throws -> String {
        try store.path(of: name)
    }

    /// The classifier `name` as its description in Models/models.yml says to run it.
    public static func classifier(_ name: String = "emotion", align: Bool = true, mirror: Bool = false) throws
        -> FaceClassifier
    {
        try FaceClassifier(
            modelPath: try model(name), model: try store.classifier(named: name), align: align, mirror: mirror)
    }

    public static func hasModel(_ name: String) -> Bool { (try? store.path(of: name)) != nil }

    public static func photo(_ name: String) -> String { photos.appendingPathComponent(name).path }

    public static func recording(_ name: String = "showroom-640x480.mp4") -> String {
        recordings.appendingPathComponent(name).path
    }

    public static func sharedFile(_ relative: String) -> String { shared.appendingPathComponent(relative).path }

    /// The sample's first `frames` frames written to `path` at 15 fps by python3-opencv, in the codec `fourcc` names
    /// (`MJPG` in an .avi, `mp4v` in an .mp4): a short clip the tests shape further (cut, looped).
    public static func sampleClip(frames: Int, fourcc: String, to path: String) async throws {
        let made = try await run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                """
                import cv2, sys
                source = cv2.VideoCapture(sys.argv[1])
                writer = cv2.VideoWriter(sys.argv[2], cv2.VideoWriter_fourcc(*sys.argv[3]), 15, (640, 480))
                for _ in range(int(sys.argv[4])):
                    writer.write(source.read()[1])
                writer.release()
                """,
                recording(), path, fourcc, "\(frames)",
            ], timeout: 120)
        guard made.status == 0 else { throw TestSupportError("\(path): python3-opencv wrote no clip: \(made.errors)") }
    }

    /// A fresh folder under the system's temporary directory.
    public static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sentinel-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

extension Fixtures {
    /// Runs `body` on a thread of its own: a test that waits for a process or sleeps must not hold one of the test
    /// run's few task threads (two on a 2-core machine), or every other test waits with it.
    public static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// `onOwnThread` for work that cannot fail.
    public static func onOwnThread<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in Thread { continuation.resume(returning: body()) }.start() }
    }

    /// Runs a program from the repository's root to its end; returns its exit status, standard output and error.
    public static func run(_ executable: URL, _ arguments: [String]) async throws -> (
        status: Int32, output: String, errors: String
    ) {
        let outcome = try await run(executable, arguments, timeout: nil)
        return (outcome.status, outcome.output, outcome.errors)
    }

    /// How a program ended.
    public struct Outcome: Sendable {
        public var status: Int32
        /// Killed by a signal (a crash, or the timeout): `status` is then the signal's number.
        public var signalled: Bool
        public var timedOut: Bool
        public var output: String
        public var errors: String
    }

    /// Runs a program from the repository's root; one still running after `timeout` seconds is killed (SIGKILL). Its end
    /// is awaited, not waited for: no task thread is held meanwhile.
    public static func run(
        _ executable: URL, _ arguments: [String], timeout: Double?, in directory: URL = root,
        environment: [String: String] = [:]
    ) async throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.currentDirectoryURL = directory
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        process.arguments = arguments
        // Both streams go to files, so that neither can fill a pipe and block the program.
        let folder = try temporaryFolder()
        let files = ["stdout", "stderr"].map { folder.appendingPathComponent($0) }
        for file in files { _ = FileManager.default.createFile(atPath: file.path, contents: nil) }
        let handles = try files.map { try FileHandle(forWritingTo: $0) }
        process.standardOutput = handles[0]
        process.standardError = handles[1]
        let killer = DispatchWorkItem { kill(process.processIdentifier, SIGKILL) }
        let started = Date()
        try await withCheckedThrowingContinuation { (ended: CheckedContinuation<Void, any Error>) in
            process.terminationHandler = { _ in ended.resume() }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                ended.resume(throwing: error)
                return
            }
            if let timeout { DispatchQueue.global().asyncAfter(deadline: .now() + timeout, execute: killer) }
        }
        killer.cancel()
        for handle in handles { try handle.close() }
        let signalled = process.terminationReason == .uncaughtSignal
        let texts = try files.map { String(decoding: try Data(contentsOf: $0), as: UTF8.self) }
        try? FileManager.default.removeItem(at: folder)
        return Outcome(
            status: process.terminationStatus, signalled: signalled,
            timedOut: signalled && timeout.map { Date().timeIntervalSince(started) >= $0 } == true,
            output: texts[0], errors: texts[1])
    }

    /// The `sentinel` executable built beside the test bundle, for tests that run the real command.
    public static var sentinel: URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "sentinel")
        return FileManager.default.isExecutableFile(atPath: beside.path)
            ? beside : root.appendingPathComponent(".build/debug/sentinel")
    }
}
