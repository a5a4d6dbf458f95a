import Foundation

/// What a sweep measured of the pipeline file's own settings, kept in `--out` as baseline.json: run again once every
/// trial is in trials.csv (to apply, or to read the report again), `tune` takes these figures instead of decoding and
/// detecting the recordings for them once more. They hold only for the same inputs: the pipeline file's bytes, the
/// `--set` overrides, each recording and any label file beside it (size and modification time), and this build of
/// Sentinel; anything else measures again.
struct TuneBaseline: Codable, Equatable {
    struct Inputs: Codable, Equatable {
        var pipeline: String
        var overrides: [String]
        /// Path, size and modification time of each file the figures rest on.
        var files: [String]

        init(pipeline: String, overrides: [String], recordings: [String]) throws {
            self.pipeline = try String(contentsOfFile: pipeline, encoding: .utf8)
            self.overrides = overrides
            let paths =
                [Bundle.main.executablePath ?? CommandLine.arguments[0]]
                + recordings.flatMap { [$0] + Labels.candidates(beside: $0) }
            files = paths.compactMap { path in
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
                let size = (attributes[.size] as? NSNumber)?.int64Value ?? -1
                let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
                return "\(path) \(size) \(modified)"
            }
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

    /// The figures kept in `folder` for these inputs, if any.
    static func read(in folder: URL, for inputs: Inputs) -> TuneBaseline? {
        guard let data = try? Data(contentsOf: url(in: folder)),
            let kept = try? JSONDecoder().decode(TuneBaseline.self, from: data), kept.inputs == inputs
        else { return nil }
        return kept
    }

    func write(in folder: URL) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try OutputFile.write(try encoder.encode(self), to: Self.url(in: folder).path)
    }
}
