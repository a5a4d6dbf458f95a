import Foundation
public import SentinelConfig
import SentinelCore
import SentinelPrivacy
import SentinelVision
import SentinelVisitors
import Yams

/// What a sweep searches: each setting (a `--set` key) with the values it may take, how to search, and what for.
///
/// ```yaml
/// search: adaptive          # grid, random or adaptive (random first, then near the best)
/// trials: 120               # random and adaptive: how many; grid: every combination (at most this many)
/// seed: 1
/// objective: idf1           # idf1, hota, mota, dwell, splits or stability (label-free)
/// settings:
///   tracker.minIoU: [0.1, 0.2, 0.3]                    # these values
///   tracker.centerGate: { from: 0.3, to: 1.2, step: 0.3 }
///   tracker.visitTimeoutSeconds: { from: 1, to: 5 }     # grid: 5 steps; random: anywhere between
///   tracker.confirmFrames: range                        # the setting's declared range
///   sources[0].zones[*].grace.seconds: [0.3, 0.5, 1]
/// ```
public struct SearchSpace: Sendable {
    public enum Search: String, Sendable, CaseIterable { case grid, random, adaptive }

    public enum Objective: String, Sendable, CaseIterable {
        case idf1, hota, mota, dwell, splits, stability
        /// Whether a larger value is better.
        public var maximised: Bool { self != .dwell && self != .splits }
        /// Whether `a` is a better value than `b`.
        public func better(_ a: Double, than b: Double) -> Bool { maximised ? a > b : a < b }
        /// Whether it needs labels (and which).
        public var needsLabels: Bool { self != .stability }
        /// As a report's column names it.
        public var title: String {
            switch self {
            case .idf1: "IDF1"
            case .hota: "HOTA"
            case .mota: "MOTA"
            case .dwell: "dwell error (s)"
            case .splits: "splits a visitor"
            case .stability: "stability"
            }
        }
    }

    /// One dimension: a key and its values, or a continuous interval (integers if `whole`).
    public struct Dimension: Sendable {
        public var key: String
        public var values: [String]
        public var interval: (low: Double, high: Double, whole: Bool)?
        /// Where the space file gives it, for problems found in its values.
        var location: ConfigProblem?

        /// The values that stand for the whole dimension when it is checked: the list, or an interval's ends.
        var extremes: [String] { interval == nil ? values : [value(at: 0), value(at: 1)] }

        /// The value at `fraction` (0...1) of the dimension.
        func value(at fraction: Double) -> String {
            if let interval {
                let x = interval.low + (interval.high - interval.low) * min(max(fraction, 0), 1)
                return interval.whole && abs(x) < 1e15 ? String(Int(x.rounded())) : written(x)
            }
            let index = min(values.count - 1, Int((fraction * Double(values.count)).rounded(.down)))
            return values[max(0, index)]
        }

        /// Grid points: the values, or 5 steps over an interval.
        var gridValues: [String] {
            if interval == nil { return values }
            return Array(Set((0...4).map { value(at: Double($0) / 4) })).sorted { Double($0)! < Double($1)! }
        }
    }

    public var search = Search.adaptive
    public var trials = 100
    public var seed: UInt64 = 1
    public var objective = Objective.idf1
    public var dimensions: [Dimension] = []

    /// Reads a space file; problems are reported as a pipeline file's are, by line and field.
    public static func load(_ path: String) throws(ConfigError) -> SearchSpace {
        try ConfigFile.load(path) { root, reader in read(root, reader) }
    }

    public static func parse(_ text: String, file: String) throws(ConfigError) -> SearchSpace {
        try ConfigFile.parse(text, file: file) { root, reader in read(root, reader) }
    }

    static func read(_ root: Field, _ reader: ConfigReader) -> SearchSpace? {
        guard let top = reader.mapping(root, keys: ["search", "trials", "seed", "objective", "settings"]) else {
            return nil
        }
        var space = SearchSpace()
        if let f = top["search"], let v = reader.choice(f, Search.self) { space.search = v }
        if let f = top["objective"], let v = reader.choice(f, Objective.self) { space.objective = v }
        if let f = top["trials"], let v = reader.integer(f, in: 1...100_000) { space.trials = v }
        if let f = top["seed"], let v = reader.integer(f, in: 0...Int.max) { space.seed = UInt64(v) }
        guard let settings = top["settings"].flatMap({ reader.entries($0) }), !settings.isEmpty else {
            reader.report(top["settings"] ?? root, "settings: give at least one key with its values")
            return nil
        }
        for (key, field) in settings {
            guard ConfigOverride.isKeyPath(key) else {
                reader.report(field, "\"\(key)\" is not a key path, as tracker.minIoU or sources[0].zones[*].grace")
                continue
            }
            if var dimension = reader.dimension(key, field) {
                dimension.location = reader.location(of: field)
                space.dimensions.append(dimension)
            }
        }
        return space
    }

    /// The settings a pipeline file declares with a range or choices, by key (`tracker.minIoU`).
    public static let declared: [String: DeclaredDomain] = {
        var table: [String: DeclaredDomain] = [:]
        func add<Owner>(_ section: String, _ settings: [Setting<Owner>]) {
            for setting in settings {
                let domain: DeclaredDomain? =
                    switch setting.kind {
                    case .number(_, let range, _): .interval(range.lowerBound, range.upperBound, whole: false)
                    case .integer(_, let range):
                        .interval(Double(range.lowerBound), Double(range.upperBound), whole: true)
                    case .flag: .values(["false", "true"])
                    case .choice(let choices, _, _): .values(choices)
                    case .text, .optionalText, .path, .list: nil
                    }
                table["\(section).\(setting.key)"] = domain
            }
        }
        add("detector", DetectorSettings.settings)
        add("tracker", TrackerSettings.settings)
        add("emotion", EmotionSettings.settings)
        add("events", VisitorSettings.settings)
        return table
    }()

    public enum DeclaredDomain: Sendable {
        case interval(Double, Double, whole: Bool)
        case values([String])
    }

    /// How far `settings` lie from `file`'s values (`PipelineReference.values`): each dimension's difference as a
    /// share of its extent (a value that is not a number: 0 or 1), summed. A key the file does not list counts 0.
    public func distance(_ settings: [String: String], from file: [String: String]) -> Double {
        dimensions.reduce(0) { sum, dimension in
            guard let value = settings[dimension.key], let current = file[dimension.key], value != current else {
                return sum
            }
            guard let a = Double(value), let b = Double(current) else { return sum + 1 }
            let numbers = dimension.values.compactMap(Double.init)
            let extent =
                dimension.interval.map { $0.high - $0.low } ?? ((numbers.max() ?? 0) - (numbers.min() ?? 0))
            return sum + min(1, abs(a - b) / max(extent, 1e-12))
        }
    }

    /// The candidates of a grid: every combination, in order (empty if there are more than `limit`).
    public func grid(limit: Int) -> [[String: String]] {
        var combinations: [[String: String]] = [[:]]
        for dimension in dimensions {
            combinations = combinations.flatMap { partial in
                dimension.gridValues.map { partial.merging([dimension.key: $0]) { $1 } }
            }
            if combinations.count > limit { return [] }
        }
        return combinations
    }

    /// A random candidate: each dimension at a uniform fraction.
    func random(_ generator: inout some RandomNumberGenerator) -> [String: String] {
        Dictionary(
            uniqueKeysWithValues: dimensions.map { ($0.key, $0.value(at: Double.random(in: 0...1, using: &generator))) }
        )
    }

    /// A candidate near `center`: each dimension moved by up to `radius` of its extent (a list: to a neighbour).
    func near(_ center: [String: String], radius: Double, _ generator: inout some RandomNumberGenerator)
        -> [String: String]
    {
        Dictionary(
            uniqueKeysWithValues: dimensions.map { dimension in
                let current = center[dimension.key] ?? dimension.value(at: 0.5)
                if let interval = dimension.interval, let x = Double(current) {
                    let fraction = (x - interval.low) / max(interval.high - interval.low, 1e-12)
                    return (
                        dimension.key,
                        dimension.value(at: fraction + Double.random(in: -radius...radius, using: &generator))
                    )
                }
                let index = dimension.values.firstIndex(of: current) ?? 0
                let step = Int.random(in: -1...1, using: &generator)
                return (dimension.key, dimension.values[min(max(index + step, 0), dimension.values.count - 1)])
            })
    }
}

/// A seeded generator (SplitMix64): the same space and seed search the same candidates.
public struct SeededGenerator: RandomNumberGenerator, Sendable {
    private var state: UInt64
    public init(seed: UInt64) { state = seed &+ 0x9E37_79B9_7F4A_7C15 }
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// A number as a file writes it: whole numbers without a fraction, others with at most 4 decimals.
func written(_ value: Double) -> String {
    let rounded = (value * 10_000).rounded() / 10_000
    return rounded == rounded.rounded() && abs(rounded) < 1e15 ? String(Int(rounded)) : String(rounded)
}

extension ConfigReader {
    /// One dimension of a space: a list of values, `{ from, to[, step] }`, or `range` (the declared one).
    func dimension(_ key: String, _ field: Field) -> SearchSpace.Dimension? {
        if let list = field.node.sequence {
            let values = list.compactMap(\.string)
            guard !values.isEmpty, values.count == list.count else {
                report(field, "expected a list of values")
                return nil
            }
            return .init(key: key, values: values)
        }
        if field.node.string == "range" {
            switch SearchSpace.declared[key] {
            case .interval(let low, let high, let whole)?:
                return .init(key: key, values: [], interval: (low, high, whole))
            case .values(let values)?: return .init(key: key, values: values)
            case nil:
                report(field, "\(key) has no declared range: give its values, or { from, to }")
                return nil
            }
        }
        guard let fields = mapping(field, keys: ["from", "to", "step"]),
            let fromField = required(fields, "from", in: field), let toField = required(fields, "to", in: field),
            let from = number(fromField), let to = number(toField)
        else { return nil }
        guard from < to else {
            report(field, "from must be below to")
            return nil
        }
        // Checked here, whole, before anything is decoded: within the setting's declared range, and a finite width.
        var whole = false
        if case .interval(let low, let high, let isWhole)? = SearchSpace.declared[key] {
            whole = isWhole
            guard low <= from, to <= high else {
                report(
                    field,
                    "{ from: \(written(from)), to: \(written(to)) } goes beyond \(key)'s range \(written(low))...\(written(high))"
                )
                return nil
            }
        }
        guard (to - from).isFinite else {
            report(field, "from and to are too far apart to search between")
            return nil
        }
        if let stepField = fields["step"], let step = number(stepField, in: 1e-9...Double.greatestFiniteMagnitude) {
            let steps = ((to - from) / step + 1e-9).rounded(.down)
            guard steps <= 1_000 else {
                report(stepField, "more than 1000 steps")
                return nil
            }
            let count = Int(steps)
            return .init(key: key, values: (0...count).map { written(from + Double($0) * step) })
        }
        return .init(key: key, values: [], interval: (from, to, whole))
    }
}
