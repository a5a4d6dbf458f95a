public import Foundation
public import SentinelCore
public import SentinelWire

/// Builds `Report`s from the store's visits, zone stays and gauge readings (masked records only: pseudonymous ids).
/// Every count is over distinct visitors and published only from `minGroupSize` up.
public struct ReportBuilder: Sendable {
    public struct Visit: Sendable {
        public var faceId: String
        public var sourceId: String
        public var firstSeen: Date
        public var lastSeen: Date
        public init(faceId: String, sourceId: String, firstSeen: Date, lastSeen: Date) {
            self.faceId = faceId
            self.sourceId = sourceId
            self.firstSeen = firstSeen
            self.lastSeen = lastSeen
        }
    }

    public struct Stay: Sendable {
        public var faceId: String
        public var sourceId: String
        public var zone: String
        public var enteredAt: Date
        /// Nil while the visitor is still in the zone (its visit's last sighting then ends it).
        public var exitedAt: Date?
        public var dwellSeconds: Double?
        public init(
            faceId: String, sourceId: String, zone: String, enteredAt: Date, exitedAt: Date?, dwellSeconds: Double?
        ) {
            self.faceId = faceId
            self.sourceId = sourceId
            self.zone = zone
            self.enteredAt = enteredAt
            self.exitedAt = exitedAt
            self.dwellSeconds = dwellSeconds
        }
    }

    public var minGroupSize: Int
    public var calendar: Calendar

    public init(minGroupSize: Int, timeZone: TimeZone = .current) {
        self.minGroupSize = minGroupSize
        var calendar = Calendar(identifier: .gregorian)
        calendar.timeZone = timeZone
        self.calendar = calendar
    }

    /// The start of the bucket holding `date`: a day from local midnight, an hour from its start, five minutes from
    /// a multiple of five.
    public func bucketStart(_ date: Date, _ bucket: Report.Bucket) -> Date {
        switch bucket {
        case .day: return calendar.startOfDay(for: date)
        case .hour, .fiveMinutes:
            let hour = calendar.dateInterval(of: .hour, for: date)?.start ?? date
            guard bucket == .fiveMinutes else { return hour }
            return hour.addingTimeInterval((date.timeIntervalSince(hour) / 300).rounded(.down) * 300)
        }
    }

    /// The buckets' starts from the one holding `from` to the one holding the instant before `to`.
    public func starts(from: Date, to: Date, _ bucket: Report.Bucket) -> [Date] {
        var starts: [Date] = []
        var start = bucketStart(from, bucket)
        while start < to {
            starts.append(start)
            // A day is not always 86,400 s (daylight saving): step past the bucket and align again.
            start = bucketStart(start.addingTimeInterval(bucket.seconds * 1.5), bucket)
        }
        return starts
    }

    /// The report of `from..<to`; `zones` lists every zone to report (those of the pipeline, in its order), so a
    /// zone nobody entered is there with its zeros, suppressed like any small count.
    public func report(
        from: Date, to: Date, bucket: Report.Bucket, zones: [ZoneID], visits: [Visit], stays: [Stay],
        moods: [(time: Date, overall: Aggregate<GaugeReading.Level>)]
    ) -> Report {
        func aggregate(_ count: Int) -> Aggregate<Int> { Aggregate(count, visitors: count, minGroupSize: minGroupSize) }
        let lastSeen = Dictionary(visits.map { ($0.faceId, $0.lastSeen) }) { a, _ in a }
        func end(_ stay: Stay) -> Date { stay.exitedAt ?? lastSeen[stay.faceId] ?? stay.enteredAt }
        let starts = starts(from: from, to: to, bucket)
        let periods = starts.enumerated().map { i, start in
            let stop = min(i + 1 < starts.count ? starts[i + 1] : to, to)
            let begin = max(start, from)
            let present = visits.filter { $0.firstSeen < stop && $0.lastSeen >= begin }
            let started = visits.filter { $0.firstSeen >= begin && $0.firstSeen < stop }
            let inPeriod = stays.filter { $0.enteredAt < stop && end($0) >= begin }
            let figures = zones.map { id in
                let faces = Set(inPeriod.filter { $0.sourceId == id.sourceId && $0.zone == id.name }.map(\.faceId))
                return Report.ZoneFigure(sourceId: id.sourceId, zone: id.name, visitors: aggregate(faces.count))
            }
            let readings = moods.filter { $0.time >= begin && $0.time < stop }.compactMap {
                mood -> (score: Int, visitors: Int)? in
                // A store written before events were checked may hold any number: clamped, they cannot overflow.
                if case .value(let level, let visitors) = mood.overall {
                    (min(100, max(0, level.score)), max(0, visitors))
                } else {
                    nil
                }
            }
            let all = moods.contains { $0.time >= begin && $0.time < stop }
            let mood: Aggregate<GaugeReading.Level>? =
                !all
                ? nil
                : readings.isEmpty
                    ? .suppressed
                    : .value(
                        GaugeReading.Level(
                            score: Int((Double(readings.map(\.score).reduce(0, +)) / Double(readings.count)).rounded())),
                        visitors: readings.map(\.visitors).max() ?? 0)
            return Report.Period(
                start: start, visits: aggregate(started.count), visitors: aggregate(Set(present.map(\.faceId)).count),
                mood: mood, zones: figures)
        }
        let summaries = zones.map { id in
            // Each visitor's time in the zone over its stays that began in the period.
            var dwell: [String: Double] = [:]
            for stay in stays
            where stay.sourceId == id.sourceId && stay.zone == id.name && stay.enteredAt >= from && stay.enteredAt < to
            {
                let seconds = stay.dwellSeconds ?? end(stay).timeIntervalSince(stay.enteredAt)
                // As `EventCheck` bounds a dwell (a store written before it may hold any number).
                dwell[stay.faceId, default: 0] += seconds.isNaN ? 0 : min(max(seconds, 0), EventCheck.maxDwellSeconds)
            }
            let values = dwell.values.sorted()
            let mean = values.reduce(0, +) / Double(max(values.count, 1))
            let median =
                values.isEmpty
                ? 0
                : values.count % 2 == 1
                    ? values[values.count / 2]
                    : (values[values.count / 2 - 1] + values[values.count / 2]) / 2
            let bins = Report.dwellBins
            let histogram = (0...bins.count).map { bin in
                let low = bin == 0 ? -Double.infinity : bins[bin - 1]
                let high = bin < bins.count ? bins[bin] : .infinity
                return aggregate(values.filter { $0 >= low && $0 < high }.count)
            }
            return Report.ZoneSummary(
                sourceId: id.sourceId, zone: id.name, visitors: aggregate(values.count),
                meanDwellSeconds: Aggregate(
                    (mean * 10).rounded() / 10, visitors: values.count, minGroupSize: minGroupSize),
                medianDwellSeconds: Aggregate(
                    (median * 10).rounded() / 10, visitors: values.count, minGroupSize: minGroupSize),
                dwellHistogram: histogram)
        }
        var byHour = [Int](repeating: 0, count: 24)
        for visit in visits where visit.firstSeen >= from && visit.firstSeen < to {
            byHour[calendar.component(.hour, from: visit.firstSeen)] += 1
        }
        let busiest = byHour.enumerated().filter { $0.element > 0 && aggregate($0.element) != .suppressed }
            .sorted { ($0.element, -$0.offset) > ($1.element, -$1.offset) }
            .map { Report.Hour(hour: $0.offset, visits: aggregate($0.element)) }
        return Report(
            from: from, to: to, bucket: bucket, timeZone: calendar.timeZone.identifier, minGroupSize: minGroupSize,
            periods: periods, zones: summaries, busiestHours: busiest)
    }
}
