import CoreMetrics
import Foundation
import Metrics
import SentinelCore
import SentinelPrivacy
import SentinelStore
import SentinelWire
import Synchronization

/// What one transaction put in the event log, typed: its rows as the log holds them (what SSE clients are sent)
/// and, in log order, the visitor events among them as published and the ticks of the clock that came with them.
/// The writer makes one from the hub's entries it committed, the follower of a shared log from what it reads back.
struct Commit: Sendable {
    enum Item: Sendable {
        case event(MaskedEvent)
        /// A frame was processed at this time (media time on the wall clock): the gauge may make a reading.
        case tick(Date)
    }

    var rows: [LoggedEvent]
    var items: [Item]
    /// The newest reading of the log's own gauge stream among the rows (not a site's forwarded one).
    var gauge: GaugeReading?
    /// When the frames the events came from were captured, where known (the latency metric).
    var capturedAt: [ContinuousClock.Instant] = []

    var events: [MaskedEvent] { items.compactMap { if case .event(let event) = $0 { event } else { nil } } }
    var isEmpty: Bool { rows.isEmpty && items.isEmpty }
}

extension Commit {
    /// What the writer committed of a batch of the hub's entries, `rows` being what the log returned for their
    /// log entries: a forwarded event the log holds already is left out of both. Ticks are kept when `ticks`
    /// (the replica leads, or the log is its own).
    init(rows: [LoggedEvent], of entries: [Hub.Entry], ticks: Bool) {
        let logged = Set(rows.lazy.filter { $0.type != .gauge }.map(\.payload))
        self.rows = rows
        items = entries.compactMap { entry -> Item? in
            switch entry {
            case .event(let masked, _, _):
                logged.contains(masked.published.json) ? .event(masked.published) : nil
            case .logEntry(.visitor(_, let published, _), _):
                logged.contains(published.json) ? .event(published) : nil
            case .logEntry(.gauge, _):
                nil
            case .tick(let time):
                ticks ? .tick(time) : nil
            }
        }
        gauge =
            entries.lazy.compactMap { entry -> GaugeReading? in
                if case .logEntry(.gauge(let reading, origin: nil), _) = entry { reading } else { nil }
            }.last
        capturedAt = entries.compactMap { entry in
            if case .event(_, let capturedAt?, _) = entry { capturedAt } else { nil }
        }
    }
}

/// Where commits go, in log order. The gauge votes with each visitor event and makes its readings at the ticks, so
/// the mood counts what the log holds, whichever replica wrote it; then who is present, the showroom's metrics and
/// the SSE clients. The readings are handed back to whoever published the commit, to be logged like any log entry.
final class Publisher: Sendable {
    let live: LiveState
    let broadcaster: Broadcaster
    let telemetry: Telemetry
    let gauge: Mutex<SentimentGauge>

    init(live: LiveState, broadcaster: Broadcaster, aggregation: Aggregation, telemetry: Telemetry) {
        self.live = live
        self.broadcaster = broadcaster
        self.telemetry = telemetry
        gauge = Mutex(aggregation.sentimentGauge())
    }

    /// How far back the gauge's window reaches.
    var window: TimeInterval { gauge.withLock { $0.settings.windowSeconds } }

    /// After a restart: the window's events, read back from the log, vote again (nothing is published).
    func restore(_ events: [VisitorEvent]) {
        gauge.withLock { gauge in
            for event in events { gauge.record(event) }
        }
    }

    /// Publishes `commit`; returns the gauge readings its ticks made, which the event log has yet to hold.
    func publish(_ commit: Commit) -> [GaugeReading] {
        let readings = gauge.withLock { gauge in
            commit.items.compactMap { item -> GaugeReading? in
                switch item {
                case .event(let event):
                    gauge.record(event)
                    return nil
                case .tick(let time):
                    return gauge.tick(now: time)
                }
            }
        }
        let events = commit.events
        live.commit(events, gauge: commit.gauge)
        telemetry.record(events)
        let published = ContinuousClock.now
        broadcaster.publish(commit.rows)
        telemetry.publishLatency.recordInterval(since: published)
        telemetry.eventsPublished.increment(by: commit.rows.count)
        for captured in commit.capturedAt { telemetry.captureToPublish.recordInterval(since: captured) }
        return readings
    }

    /// Ends the SSE streams: nothing more is published.
    func close() { broadcaster.close() }
}

extension CoreMetrics.Timer {
    func recordInterval(since start: ContinuousClock.Instant) { record(duration: ContinuousClock.now - start) }
}
