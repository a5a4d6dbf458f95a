import Foundation
import SentinelModels

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

    public static func hasModel(_ name: String) -> Bool { (try? store.path(of: name)) != nil }

    public static func photo(_ name: String) -> String { photos.appendingPathComponent(name).path }

    public static func recording(_ name: String = "showroom-640x480.mp4") -> String {
        recordings.appendingPathComponent(name).path
    }

    public static func sharedFile(_ relative: String) -> String { shared.appendingPathComponent(relative).path }

    /// A fresh folder under the system's temporary directory.
    public static func temporaryFolder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sentinel-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }
}

extension Fixtures {
    /// Runs a program from the repository's root to its end; returns its exit status, standard output and error.
    public static func run(_ executable: URL, _ arguments: [String]) throws -> (
        status: Int32, output: String, errors: String
    ) {
        let process = Process()
        process.executableURL = executable
        process.currentDirectoryURL = root
        process.arguments = arguments
        // Standard error goes to a file, so that neither stream can fill a pipe and block the program.
        let errorFile = try temporaryFolder().appendingPathComponent("stderr")
        _ = FileManager.default.createFile(atPath: errorFile.path, contents: nil)
        let errors = try FileHandle(forWritingTo: errorFile)
        let output = Pipe()
        process.standardOutput = output
        process.standardError = errors
        try process.run()
        let outputText = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        try errors.close()
        let errorString = try String(contentsOf: errorFile, encoding: .utf8)
        return (process.terminationStatus, outputText, errorString)
    }

    /// The `sentinel` executable built beside the test bundle, for tests that run the real command.
    public static var sentinel: URL {
        let beside = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent(
            "sentinel")
        return FileManager.default.isExecutableFile(atPath: beside.path)
            ? beside : root.appendingPathComponent(".build/debug/sentinel")
    }
}
