public import Foundation
public import SentinelCore

/// Everything published over masked events, from one place: the sentiment gauge, who is present and the reports,
/// all under one group size k (`minGroupSize`, the privacy policy's) and the policy's time resolution. `run`,
/// `replay` and `fleet` each make one from their definition; the store writer, the live state and the REST handlers
/// take it, never a bare k.
public struct Aggregation: Sendable {
    /// Aggregates over fewer visitors are published as suppressed.
    public let minGroupSize: Int
    public let timestampResolution: Double
    public let gauge: GaugeSettings
    /// The cameras and zones every gauge reading covers (a fleet learns its sites' from their events).
    public let sources: [String]
    public let zones: [ZoneID]

    public init(policy: PrivacyPolicy, gauge: GaugeSettings, sources: [String] = [], zones: [ZoneID] = []) {
        minGroupSize = policy.minGroupSize
        timestampResolution = policy.timestampResolution
        self.gauge = gauge
        self.sources = sources
        self.zones = zones
    }

    /// A gauge with no votes yet.
    public func sentimentGauge() -> SentimentGauge {
        SentimentGauge(
            settings: gauge, minGroupSize: minGroupSize, sources: sources, zones: zones,
            timestampResolution: timestampResolution)
    }

    /// Nobody present yet.
    public func occupancy() -> Occupancy { Occupancy(minGroupSize: minGroupSize) }

    /// Reports over the store's visits, with periods and hours in `timeZone`.
    public func reports(timeZone: TimeZone = .current) -> ReportBuilder {
        ReportBuilder(minGroupSize: minGroupSize, timeZone: timeZone)
    }
}
