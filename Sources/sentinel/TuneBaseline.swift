import Crypto
import Foundation
import SentinelCore
import Synchronization

/// What a sweep measured of the pipeline file's own settings, kept in `--out` as baseline.json: run again once every
/// trial is in trials.csv (to apply, or to read the report again), `tune` takes these figures instead of decoding and
/// detecting the recordings for them once more. They hold only for the same inputs: the pipeline file's bytes, the
/// `--set` overrides, each recording and any label file beside it (the file a link leads to, by its size, modification
/// time and a hash of its first and last MiB), and this build of Sentinel; anything else measures again. The file is
/// signed with a key of this machine's, kept outside `--out` (`tune.key` in the state directory, owner only): an
/// edited one is measured again, not believed.
struct TuneBaseline: Codable, Equatable {
    struct Inputs: Codable, Equatable {
        var pipeline: String
        var overrides: [String]
        /// Each file the figures rest on: its path, the file it leads to, size, modification time and the hash of
        /// its first and last MiB.
        var files: [String]

        init(pipeline: String, overrides: [String], recordings: [String]) throws {
            self.pipeline = try String(contentsOfFile: pipeline, encoding: .utf8)
            self.overrides = overrides
            let paths =
                [Bundle.main.executablePath ?? CommandLine.arguments[0]]
                + recordings.flatMap { [$0] + Labels.candidates(beside: $0) }
            files = paths.compactMap(Self.content)
        }

        /// What a file holds, cheaply: a recording replaced behind a link, or rewritten in place, reads otherwise.
        static func content(of path: String) -> String? {
            let resolved = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
            guard let attributes = try? FileManager.default.attributesOfItem(atPath: resolved),
                attributes[.type] as? FileAttributeType == .typeRegular,
                let handle = FileHandle(forReadingAtPath: resolved)
            else { return nil }
            defer { try? handle.close() }
            let size = (attributes[.size] as? NSNumber)?.int64Value ?? -1
            let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
            let mebibyte = 1 << 20
            var hash = SHA256()
            // A file that cannot be read has no key: its figures are measured again.
            guard let first = try? handle.bytes(upTo: mebibyte) else { return nil }
            hash.update(data: first)
            if size > Int64(mebibyte) {
                guard (try? handle.seek(toOffset: UInt64(size - Int64(mebibyte)))) != nil,
                    let last = try? handle.bytes(upTo: mebibyte)
                else { return nil }
                hash.update(data: last)
            }
            let digest = hash.finalize().map { String(format: "%02x", $0) }.joined()
            return "\(path) -> \(resolved) \(size) \(modified) \(digest)"
        }
    }

    var inputs: Inputs
    /// The file's settings: their objective, and what it moved between two runs (the sweep's noise).
    var objective: Double?
    var noise: Double
    /// Whether the two runs gave the same visits.
    var deterministic: Bool
    /// On the held-out recordings: the file's settings, and the trial kept (0: the file's settings).
    var heldOutObjective: Double?
    var heldOutBestTrial: Int?
    var heldOutBestObjective: Double?

    init(inputs: Inputs, objective: Double?, noise: Double, deterministic: Bool) {
        self.inputs = inputs
        self.objective = objective
        self.noise = noise
        self.deterministic = deterministic
    }

    static func url(in folder: URL) -> URL { folder.appendingPathComponent("baseline.json") }

    /// The figures kept in `folder` for these inputs, if any, signed by this machine's key.
    static func read(in folder: URL, for inputs: Inputs) -> TuneBaseline? {
        guard let data = try? Data(contentsOf: url(in: folder)),
            let signed = try? JSONDecoder().decode(Signed.self, from: data), signed.baseline.inputs == inputs,
            let key = key(), let expected = try? signed.baseline.signature(key), signed.signature == expected
        else { return nil }
        return signed.baseline
    }

    /// Writes the figures signed; without a key (no state directory can hold one) there is nothing to keep them by,
    /// and the next run measures again.
    func write(in folder: URL) throws {
        guard let key = Self.key() else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        let signed = Signed(baseline: self, signature: try signature(key))
        try OutputFile.write(try encoder.encode(signed), to: Self.url(in: folder).path)
    }

    /// The file: the figures and their HMAC-SHA256.
    struct Signed: Codable {
        var baseline: TuneBaseline
        var signature: String
    }

    /// HMAC-SHA256 of the figures as encoded with sorted keys.
    func signature(_ key: SymmetricKey) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        return HMAC<SHA256>.authenticationCode(for: try encoder.encode(self), using: key)
            .map { String(format: "%02x", $0) }.joined()
    }

    private static let warned = Mutex(false)

    /// Says `message` on standard error, once a process.
    private static func warnOnce(_ message: String) {
        let said = warned.withLock { said in
            defer { said = true }
            return said
        }
        guard !said else { return }
        FileHandle.standardError.write(Data("warning: \(message)\n".utf8))
    }

    /// This machine's key for baselines, made on first use in the first state directory that can hold it.
    static func key() -> SymmetricKey? {
        for folder in Installation.stateDirectories() {
            let path = folder.appendingPathComponent("tune.key").path
            if let bytes = FileManager.default.contents(atPath: path), bytes.count == 32 {
                // A key others may read or write signs nothing: anyone could sign figures with it.
                var status = stat()
                guard stat(path, &status) == 0, status.st_mode & 0o077 == 0 else {
                    warnOnce(
                        "\(path) is open to others (mode \(String(status.st_mode & 0o777, radix: 8))): kept figures and trials are not trusted, and every run measures again; chmod 600 \(path)"
                    )
                    return nil
                }
                return SymmetricKey(data: bytes)
            }
            try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            // Made whole or not at all: two tunes at once agree on the one that lands first.
            let made = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }
            let temporary = path + ".\(getpid())"
            guard
                FileManager.default.createFile(
                    atPath: temporary, contents: made, attributes: [.posixPermissions: 0o600])
            else { continue }
            defer { unlink(temporary) }
            if link(temporary, path) == 0 || errno == EEXIST,
                let bytes = FileManager.default.contents(atPath: path), bytes.count == 32
            {
                return SymmetricKey(data: bytes)
            }
        }
        return nil
    }
}

/// trials.csv's seal, in trials.seal beside it: the inputs its trials were measured on (`TuneBaseline.Inputs`) and an
/// HMAC-SHA256 of them and of the file's bytes under this machine's key, brought up to date with each row written.
/// A resume takes the trials only when both hold: a recording swapped, a label file changed or a row edited, and the
/// trials are run again rather than believed.
struct TrialsSeal {
    static func url(in folder: URL) -> URL { folder.appendingPathComponent("trials.seal") }

    private struct File: Codable {
        var inputs: TuneBaseline.Inputs
        var signature: String
    }

    private let url: URL
    private let inputs: TuneBaseline.Inputs
    private var mac: HMAC<SHA256>?

    /// A seal for `inputs` over the bytes to come, starting with `bytes` (the header, or the trials already there).
    init(inputs: TuneBaseline.Inputs, in folder: URL, bytes: Data) {
        url = Self.url(in: folder)
        self.inputs = inputs
        mac = Self.start(inputs)
        mac?.update(data: bytes)
    }

    private static func start(_ inputs: TuneBaseline.Inputs) -> HMAC<SHA256>? {
        guard let key = TuneBaseline.key() else { return nil }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        guard let encoded = try? encoder.encode(inputs) else { return nil }
        var mac = HMAC<SHA256>(key: key)
        mac.update(data: encoded)
        return mac
    }

    private static func hex(_ mac: HMAC<SHA256>) -> String {
        mac.finalize().map { String(format: "%02x", $0) }.joined()
    }

    /// Whether `bytes`, trials.csv as found in `folder`, are sealed for `inputs`.
    static func holds(_ bytes: Data, in folder: URL, for inputs: TuneBaseline.Inputs) -> Bool {
        guard let data = try? Data(contentsOf: url(in: folder)),
            let file = try? JSONDecoder().decode(File.self, from: data), file.inputs == inputs,
            var mac = start(inputs)
        else { return false }
        mac.update(data: bytes)
        return hex(mac) == file.signature
    }

    /// Takes `row` (as written to the file) into the seal and writes the seal anew.
    mutating func add(_ row: Data) throws {
        mac?.update(data: row)
        try write()
    }

    /// Writes the seal for the bytes taken so far (nothing without a key: the trials are then never resumed).
    func write() throws {
        guard let mac else { return }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try OutputFile.write(try encoder.encode(File(inputs: inputs, signature: Self.hex(mac))), to: url.path)
    }
}
