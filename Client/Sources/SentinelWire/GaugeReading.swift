import Foundation

/// One reading of the gauge: overall and per zone, each k-suppressed.
public struct GaugeReading: Sendable, Equatable, Codable {
    /// Mood from 0 (every vote negative) to 100 (every vote positive), 50 being neutral, and its word.
    public struct Level: Sendable, Equatable, Codable {
        public var score: Int
        public var label: String

        /// Each label's scores, coldest first.
        public static let bands: [(label: String, scores: ClosedRange<Int>)] = [
            ("cold", 0...19), ("cool", 20...39), ("neutral", 40...59), ("warm", 60...79), ("hot", 80...100),
        ]

        public init(score: Int) {
            self.score = score
            label = Self.bands.first { $0.scores.upperBound >= score }?.label ?? "hot"
        }

        /// The level of a mean valence (-1 to 1): 0 to 100, clamped; a value that is not a number reads neutral.
        public init(valence: Double) {
            let score = ((valence + 1) * 50).rounded()
            self.init(score: score.isNaN ? 50 : Int(min(100, max(0, score))))
        }
    }

    public var time: Date
    /// Over every visitor who voted in the window; `visitors` counts the votes.
    public var overall: Aggregate<Level>
    /// Over the votes cast at each camera, by source id.
    public var sources: [String: Aggregate<Level>]
    /// Over every visitor who was in each zone during the window (each once, with its latest vote there; a visitor
    /// who crossed two zones counts in both), by source id, then zone name.
    public var zones: [String: [String: Aggregate<Level>]]
    /// True when nobody has been seen for `staleAfterSeconds`.
    public var stale: Bool
    public var windowSeconds: Double

    public init(
        time: Date, overall: Aggregate<Level>, sources: [String: Aggregate<Level>],
        zones: [String: [String: Aggregate<Level>]], stale: Bool, windowSeconds: Double
    ) {
        self.time = time
        self.overall = overall
        self.sources = sources
        self.zones = zones
        self.stale = stale
        self.windowSeconds = windowSeconds
    }
}

extension GaugeReading {
    /// Whether two readings show the same figures (their times aside).
    public func sameFigures(as other: GaugeReading) -> Bool {
        overall == other.overall && sources == other.sources && zones == other.zones && stale == other.stale
    }
}
