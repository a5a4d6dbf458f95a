import Foundation
public import SentinelCore

/// The SQLite store of `sentinel run`, from the pipeline file's `store:` section.
public struct StoreSettings: Sendable, Equatable {
    /// The database file (relative paths are resolved against the pipeline file's folder).
    public var path: String
    /// Events held in memory while the database cannot be written; beyond this the oldest are dropped (and
    /// counted).
    public var bufferEvents = 10_000
    /// A group that may also read the database files (mode 0640 instead of 0600), such as a backup account's.
    public var group: String?

    public init(path: String) { self.path = path }

    /// By default the database sits beside its pipeline or fleet file, named after it.
    package init(beside file: String) {
        let url = URL(fileURLWithPath: file)
        self.init(
            path: url.deletingLastPathComponent().appendingPathComponent(
                url.deletingPathExtension().lastPathComponent + ".sqlite"
            ).standardizedFileURL.path)
    }

    /// The `store:` section's settings.
    public static let settings: [Setting<StoreSettings>] = [
        .path("path", \.path, "the database file (null: named after this file, beside it)"),
        .integer(
            "bufferEvents", \.bufferEvents, in: 10...10_000_000,
            "events held in memory while the database cannot be written; beyond, the oldest are dropped"),
        .optionalText(
            "group", \.group, "a group that may also read the database files (mode 0640), as a backup account's"),
    ]
}
