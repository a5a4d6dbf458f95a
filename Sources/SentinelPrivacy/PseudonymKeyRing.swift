import Crypto
public import Foundation
import Synchronization

/// The secret keys behind pseudonymous ids: one random 256-bit key per rotation period.
///
/// A key is made when its period begins (by the processing clock, not media time) and forgotten once the
/// period is over and no open visit still uses it, so ids from different periods cannot be linked, even by
/// whoever later reads the process's memory. With a key file, the current key is also kept on disk (mode 0600)
/// so that a restart within the period keeps the ids; the file is rewritten at each rotation and never holds
/// more than the current key. Thread-safe: sources on several threads may share one ring.
public final class PseudonymKeyRing: Sendable {
    public let settings: PseudonymSettings
    private let clock: @Sendable () -> Date
    private let keys = Mutex<[Int64: SymmetricKey]>([:])

    public init(settings: PseudonymSettings = PseudonymSettings(), clock: @escaping @Sendable () -> Date = { Date() })
        throws(PrivacyError)
    {
        self.settings = settings
        self.clock = clock
        let epoch = epoch(at: clock())
        if let path = settings.keyFile, let stored = try Self.read(path, rotationSeconds: settings.rotationSeconds),
            stored.epoch == epoch
        {
            keys.withLock { $0[epoch] = stored.key }
        } else {
            try rotate(to: epoch)
        }
    }

    /// Whether `settings.keyFile`, if there is one, can be used: absent, or a Sentinel key file only its owner may
    /// read. Reads nothing else and writes nothing (`sentinel check`).
    public static func check(_ settings: PseudonymSettings) throws(PrivacyError) {
        if let path = settings.keyFile { _ = try read(path, rotationSeconds: settings.rotationSeconds) }
    }

    /// The rotation period that `date` falls in.
    public func epoch(at date: Date) -> Int64 {
        Int64((date.timeIntervalSince1970 / settings.rotationSeconds).rounded(.down))
    }

    /// The current period, making its key (and rewriting the key file) when it has just begun.
    public func currentEpoch() throws(PrivacyError) -> Int64 {
        let epoch = epoch(at: clock())
        let known = keys.withLock { $0[epoch] != nil }
        if !known { try rotate(to: epoch) }
        return epoch
    }

    /// HMAC-SHA256 of `message` under the key of `epoch`, or nil when that key has been forgotten.
    func authenticate(_ message: String, epoch: Int64) -> [UInt8]? {
        guard let key = keys.withLock({ $0[epoch] }) else { return nil }
        return Array(HMAC<SHA256>.authenticationCode(for: Data(message.utf8), using: key))
    }

    /// Forgets every key but the current one and those in `inUse`.
    func forget(keeping inUse: Set<Int64>) {
        let current = epoch(at: clock())
        keys.withLock { $0 = $0.filter { $0.key == current || inUse.contains($0.key) } }
    }

    /// How many keys are held: the current one plus those of periods with visits still open.
    public var heldKeys: Int { keys.withLock { $0.count } }

    /// Makes the key of `epoch` unless another thread just did (the first one wins, so every source uses the same
    /// key), then keeps it in the key file.
    private func rotate(to epoch: Int64) throws(PrivacyError) {
        let key = keys.withLock { keys in
            if let made = keys[epoch] { return made }
            let key = SymmetricKey(size: .bits256)
            keys[epoch] = key
            return key
        }
        if let path = settings.keyFile {
            try Self.write(path, epoch: epoch, key: key, rotationSeconds: settings.rotationSeconds)
        }
    }

    private struct Stored: Codable {
        var epoch: Int64
        var rotationSeconds: Double
        var key: String
    }

    private static func read(_ path: String, rotationSeconds: Double) throws(PrivacyError) -> (
        epoch: Int64, key: SymmetricKey
    )? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw PrivacyError(.keyFile, "pseudonym key file \(path): \(String(cString: strerror(errno)))")
        }
        guard info.st_mode & 0o077 == 0 else {
            throw PrivacyError(
                .keyFile,
                "pseudonym key file \(path) is readable by others (mode \(String(info.st_mode & 0o777, radix: 8))); run chmod 600 on it or delete it"
            )
        }
        guard let data = FileManager.default.contents(atPath: path),
            let stored = try? JSONDecoder().decode(Stored.self, from: data),
            let bytes = Data(base64Encoded: stored.key), bytes.count == 32
        else {
            throw PrivacyError(
                .keyFile, "pseudonym key file \(path) is not a Sentinel key file; delete it and a new one is made")
        }
        // A file written under another rotation period belongs to a different schedule: start afresh.
        guard stored.rotationSeconds == rotationSeconds else { return nil }
        return (stored.epoch, SymmetricKey(data: bytes))
    }

    /// Writes the key to a 0600 file beside `path` and renames it over, so a crash never leaves half a key.
    private static func write(_ path: String, epoch: Int64, key: SymmetricKey, rotationSeconds: Double)
        throws(PrivacyError)
    {
        let text = key.withUnsafeBytes { Data($0).base64EncodedString() }
        let data: Data
        do { data = try JSONEncoder().encode(Stored(epoch: epoch, rotationSeconds: rotationSeconds, key: text)) } catch
        {
            // An empty key file would be refused at the next start, and the ids of this one lost with it.
            throw PrivacyError(.keyFile, "cannot write pseudonym key file \(path): \(error)")
        }
        let temporary = path + ".new"
        unlink(temporary)  // O_CREAT keeps an existing file's mode
        let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        guard fd >= 0 else {
            throw PrivacyError(
                .keyFile, "cannot write pseudonym key file \(temporary): \(String(cString: strerror(errno)))")
        }
        let written = data.withUnsafeBytes { Foundation.write(fd, $0.baseAddress, $0.count) }
        let synced = fsync(fd) == 0
        close(fd)
        guard written == data.count, synced, rename(temporary, path) == 0 else {
            unlink(temporary)
            throw PrivacyError(.keyFile, "cannot write pseudonym key file \(path): \(String(cString: strerror(errno)))")
        }
    }
}
