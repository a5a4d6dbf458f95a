import Foundation

/// `GET /api/reports`: what the store says about a period, in buckets, every figure k-suppressed (a figure over
/// fewer than `minGroupSize` visitors is `{"suppressed": true}`, as everywhere else).
public struct Report: Sendable, Codable, Equatable {
    public enum Bucket: String, Sendable, Codable, CaseIterable {
        case fiveMinutes = "5m"
        case hour, day

        public var seconds: Double {
            switch self {
            case .fiveMinutes: 300
            case .hour: 3_600
            case .day: 86_400
            }
        }
    }

    public struct Period: Sendable, Codable, Equatable {
        public var start: Date
        /// Visits that started in the period.
        public var visits: Aggregate<Int>
        /// Visitors seen in the period (a visit that spans two periods counts in both).
        public var visitors: Aggregate<Int>
        /// The mean of the gauge's overall readings in the period that were not suppressed, over the most voters any
        /// of them had; suppressed when all were; absent when there was no reading (nothing was measured).
        public var mood: Aggregate<GaugeReading.Level>?
        /// Per zone: visitors seen in it during the period.
        public var zones: [ZoneFigure]

        public init(
            start: Date, visits: Aggregate<Int>, visitors: Aggregate<Int>, mood: Aggregate<GaugeReading.Level>?,
            zones: [ZoneFigure]
        ) {
            self.start = start
            self.visits = visits
            self.visitors = visitors
            self.mood = mood
            self.zones = zones
        }
    }

    public struct ZoneFigure: Sendable, Codable, Equatable {
        public var sourceId: String
        public var zone: String
        public var visitors: Aggregate<Int>

        public init(sourceId: String, zone: String, visitors: Aggregate<Int>) {
            self.sourceId = sourceId
            self.zone = zone
            self.visitors = visitors
        }
    }

    /// A zone over the whole period: its stays that ended in it, their dwell, and how the dwell is spread.
    public struct ZoneSummary: Sendable, Codable, Equatable {
        public var sourceId: String
        public var zone: String
        public var visitors: Aggregate<Int>
        public var meanDwellSeconds: Aggregate<Double>
        public var medianDwellSeconds: Aggregate<Double>
        /// Visitors by their time in the zone, one count per `dwellBins` range (each k-suppressed).
        public var dwellHistogram: [Aggregate<Int>]

        public init(
            sourceId: String, zone: String, visitors: Aggregate<Int>, meanDwellSeconds: Aggregate<Double>,
            medianDwellSeconds: Aggregate<Double>, dwellHistogram: [Aggregate<Int>]
        ) {
            self.sourceId = sourceId
            self.zone = zone
            self.visitors = visitors
            self.meanDwellSeconds = meanDwellSeconds
            self.medianDwellSeconds = medianDwellSeconds
            self.dwellHistogram = dwellHistogram
        }
    }

    /// Visits started in one hour of the day (the box's time zone) over the period.
    public struct Hour: Sendable, Codable, Equatable {
        public var hour: Int
        public var visits: Aggregate<Int>

        public init(hour: Int, visits: Aggregate<Int>) {
            self.hour = hour
            self.visits = visits
        }
    }

    /// The upper bounds, in seconds, of the dwell histogram's ranges; the last range is open.
    public static let dwellBins: [Double] = [10, 30, 60, 120, 300]

    /// Each dwell range's name, from its edges: `0-10s`, `10-30s`, … `300s+`.
    public static var dwellBinNames: [String] {
        let edges = [0] + dwellBins
        return zip(edges, dwellBins).map { "\(Int($0))-\(Int($1))s" } + ["\(Int(dwellBins.last ?? 0))s+"]
    }

    public var from: Date
    public var to: Date
    public var bucket: Bucket
    /// The time zone days and hours are counted in (the box's).
    public var timeZone: String
    public var minGroupSize: Int
    /// The dwell histogram's edges (`dwellBins`), so that a reader need not know them.
    public var dwellBinEdgesSeconds = Report.dwellBins
    public var periods: [Period]
    public var zones: [ZoneSummary]
    /// The hours of the day with the most visits, busiest first (hours with suppressed counts left out).
    public var busiestHours: [Hour]

    public init(
        from: Date, to: Date, bucket: Bucket, timeZone: String, minGroupSize: Int, periods: [Period],
        zones: [ZoneSummary], busiestHours: [Hour]
    ) {
        self.from = from
        self.to = to
        self.bucket = bucket
        self.timeZone = timeZone
        self.minGroupSize = minGroupSize
        self.periods = periods
        self.zones = zones
        self.busiestHours = busiestHours
    }
}
