import Dispatch
public import Foundation
public import Logging
public import SentinelConfig
import SentinelCore
public import SentinelEval
public import SentinelModels
public import SentinelPipeline
import Synchronization

/// A search over a pipeline's settings on recordings: each candidate (a set of `--set` values) is run over every
/// recording's cached detections on every core, scored, and written to `trials.csv` as it completes, so an
/// interrupted sweep resumes where it stopped. Detections are computed once per recording and detector setting.
public final class Sweep: Sendable {
    public struct Recording: Sendable {
        public var path: String
        public var labels: RecordingLabels?
        public init(path: String, labels: RecordingLabels?) {
            self.path = path
            self.labels = labels
        }
        public var name: String { URL(fileURLWithPath: path).lastPathComponent }
    }

    /// One candidate's figures over the tuned recordings (combined) and each one.
    public struct Result: Sendable {
        public var number: Int
        public var settings: [String: String]
        /// Nil when the candidate is not a valid pipeline (the message says why).
        public var objective: Double?
        public var problem: String?
        public var combined: Figures
        public var perRecording: [String: Figures]
    }

    /// What a trial measured, over one recording or several combined.
    public struct Figures: Sendable {
        public var metrics: TrackMetrics?
        public var dwellError: Double?
        public var splits: Double?
        public var stability = Stability()
        public var fps = 0.0
        public var lines: [Data] = []

        public func value(of objective: SearchSpace.Objective) -> Double? {
            switch objective {
            case .idf1: metrics?.idf1
            case .hota: metrics?.hota
            case .mota: metrics?.mota
            case .dwell: dwellError
            case .splits: splits
            case .stability: stability.score
            }
        }
    }

    public let pipeline: String
    public let base: [ConfigOverride]
    public let space: SearchSpace
    public let recordings: [Recording]
    public let models: ModelStore
    public let workers: Int
    let logger: Logger
    private let caches = Mutex<[String: DetectionCache]>([:])
    private let cacheSeconds = Mutex(0.0)
    /// Held while a cache is made lazily, so that two workers do not make the same one.
    private let making = Mutex(())

    public init(
        pipeline: String, base: [ConfigOverride], space: SearchSpace, recordings: [Recording], models: ModelStore,
        workers: Int = ProcessInfo.processInfo.activeProcessorCount, logger: Logger
    ) {
        self.pipeline = pipeline
        self.base = base
        self.space = space
        self.recordings = recordings
        self.models = models
        self.workers = max(1, workers)
        self.logger = logger
    }

    /// Seconds spent decoding and detecting, over every cache made.
    public var detectionSeconds: Double { cacheSeconds.withLock { $0 } }

    /// Detector settings the caches were made for.
    public var detectorSettings: Int {
        max(1, Set(caches.withLock { $0.keys.map { $0.split(separator: "\u{0}").last.map(String.init) ?? "" } }).count)
    }

    /// The definition a candidate makes.
    public func definition(_ settings: [String: String]) throws -> PipelineDefinition {
        let overrides = try settings.keys.sorted().map { try ConfigOverride("\($0)=\(settings[$0]!)") }
        return try PipelineDefinition.load(pipeline, overrides: base + overrides)
    }

    /// Every value of the space written alone over the pipeline and read as the pipeline is, and into the pipeline's
    /// text as a winner would be (`--apply`, best.yml), before anything is decoded: a key the pipeline lacks, a value it
    /// refuses or a key its text cannot take is reported at its line in the space file, once for all the values it
    /// concerns.
    public func checkSpace() throws(ConfigError) {
        var problems: [ConfigProblem] = []
        let text = try? String(contentsOfFile: pipeline, encoding: .utf8)
        for dimension in space.dimensions {
            var found: [(message: String, values: [String])] = []
            let values = dimension.extremes
            for value in values {
                do {
                    _ = try definition([dimension.key: value])
                    if let text { _ = try SettingsEditor.apply([(dimension.key, value)], to: text, file: pipeline) }
                } catch let error as ConfigError {
                    for problem in error.problems {
                        let message = problem.path == dimension.key ? problem.message : problem.description
                        if let i = found.firstIndex(where: { $0.message == message }) {
                            found[i].values.append(value)
                        } else {
                            found.append((message, [value]))
                        }
                    }
                } catch {
                    found.append(("\(error)", [value]))
                }
            }
            for (message, refused) in found {
                var problem = dimension.location ?? ConfigProblem(file: "", path: "", message: "")
                problem.path = problem.path.isEmpty ? dimension.key : problem.path
                problem.message =
                    refused.count == values.count
                    ? message : "with \(refused.joined(separator: ", ")): \(message)"
                problems.append(problem)
            }
        }
        if !problems.isEmpty { throw ConfigError(problems: problems) }
    }

    /// The cache of `recording` for `definition`'s detector, made once: a worker that needs one being made waits for
    /// it (the caches of the file's own detector settings are made before the trials, one recording per core).
    func cache(_ recording: Recording, _ definition: PipelineDefinition) throws -> DetectionCache {
        let key = recording.path + "\u{0}" + DetectionCache.key(definition)
        if let cached = caches.withLock({ $0[key] }) { return cached }
        return try making.withLock { _ in
            if let cached = caches.withLock({ $0[key] }) { return cached }
            let made = try DetectionCache.make(
                recording: recording.path, definition: definition, models: models, logger: logger)
            cacheSeconds.withLock { $0 += made.seconds }
            caches.withLock { $0[key] = made }
            return made
        }
    }

    /// Makes the caches of the file's own detector settings, the recordings side by side.
    public func prepare(_ recordings: [Recording]) throws {
        let definition = try definition([:])
        let failures = Mutex<[String]>([])
        let next = Atomic(0)
        DispatchQueue.concurrentPerform(iterations: min(workers, recordings.count)) { _ in
            while case let i = next.wrappingAdd(1, ordering: .relaxed).oldValue, i < recordings.count {
                let recording = recordings[i]
                let key = recording.path + "\u{0}" + DetectionCache.key(definition)
                do {
                    let made = try DetectionCache.make(
                        recording: recording.path, definition: definition, models: models, logger: logger)
                    cacheSeconds.withLock { $0 += made.seconds }
                    caches.withLock { $0[key] = made }
                } catch {
                    failures.withLock { $0.append("\(recording.path): \(error)") }
                }
            }
        }
        if let failure = failures.withLock({ $0.first }) { throw TuneError(failure) }
    }

    /// Runs one candidate over `recordings` (the tuned ones by default).
    public func evaluate(_ settings: [String: String], number: Int, on recordings: [Recording]? = nil) -> Result {
        let recordings = recordings ?? self.recordings
        var result = Result(
            number: number, settings: settings, objective: nil, problem: nil, combined: Figures(), perRecording: [:])
        do {
            let definition = try definition(settings)
            var outcomes: [(Recording, TrialOutcome)] = []
            for recording in recordings {
                outcomes.append(
                    (recording, try Trial.run(definition, on: cache(recording, definition), labels: recording.labels)))
            }
            for (recording, outcome) in outcomes {
                result.perRecording[recording.name] = Figures(
                    metrics: outcome.metrics, dwellError: outcome.dwellError, splits: outcome.splits,
                    stability: outcome.stability, fps: outcome.estimatedFPS, lines: outcome.lines)
            }
            result.combined = Self.combine(outcomes.map(\.1))
            result.objective = result.combined.value(of: space.objective)
            if result.objective == nil {
                result.problem = "\(space.objective.rawValue) needs labels (Sentinel's own truth for dwell and splits)"
            }
        } catch {
            result.problem = "\(error)"
        }
        return result
    }

    static func combine(_ outcomes: [TrialOutcome]) -> Figures {
        var figures = Figures()
        let metrics = outcomes.compactMap(\.metrics)
        if metrics.count == outcomes.count, !metrics.isEmpty { figures.metrics = TrackMetrics.combined(metrics) }
        func weighted(_ pick: (TrialOutcome) -> Double?, by weight: (TrialOutcome) -> Double) -> Double? {
            let pairs = outcomes.compactMap { o in pick(o).map { ($0, weight(o)) } }
            guard pairs.count == outcomes.count, !pairs.isEmpty else { return nil }
            let total = pairs.reduce(0) { $0 + $1.1 }
            return total > 0
                ? pairs.reduce(0) { $0 + $1.0 * $1.1 } / total : pairs.map(\.0).reduce(0, +) / Double(pairs.count)
        }
        let visitors = { (o: TrialOutcome) in Double(o.visitors?.visitors.count ?? 0) }
        figures.dwellError = weighted(\.dwellError, by: visitors)
        figures.splits = weighted(\.splits, by: visitors)
        let visits = { (o: TrialOutcome) in Double(o.stability.visits) }
        var stability = Stability()
        stability.suspectedSplits = weighted({ $0.stability.suspectedSplits }, by: visits) ?? 0
        stability.shortVisits = weighted({ $0.stability.shortVisits }, by: visits) ?? 0
        stability.zoneFlicker = weighted({ $0.stability.zoneFlicker }, by: visits) ?? 0
        stability.emotionChurn = weighted({ $0.stability.emotionChurn }, by: visits) ?? 0
        stability.detectionGaps = weighted({ $0.stability.detectionGaps }, by: visits) ?? 0
        stability.visits = outcomes.reduce(0) { $0 + $1.stability.visits }
        figures.stability = stability
        let frames = outcomes.reduce(0) { $0 + $1.frames }
        let seconds = outcomes.reduce(0) { $0 + Double($1.frames) / max($1.estimatedFPS, 1e-9) }
        figures.fps = seconds > 0 ? Double(frames) / seconds : 0
        return figures
    }

    /// The search: candidates from the space, run on every core in batches, each result handed to `record` as it
    /// comes (in completion order) and skipped when `done` already holds its settings (a resumed sweep).
    public func run(done: [Result], record: @escaping @Sendable (Result) -> Void) throws -> [Result] {
        try prepare(recordings)
        var results = done
        var generator = SeededGenerator(seed: space.seed)
        var known = Set(done.map { Self.key($0.settings) })
        func runBatch(_ candidates: [[String: String]]) {
            var fresh: [[String: String]] = []
            for candidate in candidates where known.insert(Self.key(candidate)).inserted { fresh.append(candidate) }
            let first = results.count
            let candidates = fresh
            let collected = Mutex<[Result]>([])
            let next = Atomic(0)
            // `workers` threads, each taking the next candidate until none is left.
            DispatchQueue.concurrentPerform(iterations: min(workers, candidates.count)) { _ in
                while case let i = next.wrappingAdd(1, ordering: .relaxed).oldValue, i < candidates.count {
                    var result = evaluate(candidates[i], number: first + i + 1)
                    record(result)
                    // The events are not kept: memory stays bounded however many trials run.
                    result.combined.lines = []
                    for name in result.perRecording.keys { result.perRecording[name]?.lines = [] }
                    collected.withLock { $0.append(result) }
                }
            }
            results += collected.withLock { $0 }.sorted { $0.number < $1.number }
        }
        switch space.search {
        case .grid:
            let grid = space.grid(limit: space.trials)
            guard !grid.isEmpty else {
                throw TuneError(
                    "the grid has more than \(space.trials) combinations: fewer values, or raise trials, or search random or adaptive"
                )
            }
            runBatch(grid)
        case .random:
            runBatch((0..<space.trials).map { _ in space.random(&generator) })
        case .adaptive:
            // A third at random, then batches near the best so far, narrowing.
            let explore = max(workers, space.trials / 3)
            var candidates = (0..<explore).map { _ in space.random(&generator) }
            runBatch(candidates)
            var remaining = space.trials - explore
            var radius = 0.25
            while remaining > 0 {
                let ranked = results.filter { $0.objective != nil }.sorted {
                    space.objective.better($0.objective!, than: $1.objective!)
                }
                guard !ranked.isEmpty else { break }
                let batch = min(remaining, max(workers * 2, 8))
                candidates = (0..<batch).map { i in
                    space.near(ranked[i % min(3, ranked.count)].settings, radius: radius, &generator)
                }
                runBatch(candidates)
                remaining -= batch
                radius = max(radius * 0.7, 0.03)
            }
        }
        return results
    }

    /// A candidate's settings as one text, for resuming.
    public static func key(_ settings: [String: String]) -> String {
        settings.keys.sorted().map { "\($0)=\(settings[$0]!)" }.joined(separator: " ")
    }
}

public struct TuneError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
