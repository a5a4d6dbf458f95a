public import CoreMetrics
import Foundation
import Metrics
public import Prometheus
import SentinelCore
import SentinelPrivacy
public import SentinelWire
import Synchronization

/// Every metric `/metrics` shows, made through swift-metrics on a registry of this server's own (no global
/// bootstrap, so several servers can live in one process, as in tests).
public final class Telemetry: Sendable {
    public let registry = PrometheusCollectorRegistry()
    private let factory: PrometheusMetricsFactory

    public init() {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.defaultDurationHistogramBuckets = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10),
            .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .seconds(2.5),
        ]
        // The dwell bins are the reports' and the dashboard's: one set of edges everywhere.
        factory.valueHistogramBuckets["sentinel_zone_dwell_seconds"] = Report.dwellBins
        self.factory = factory
        sseSubscribers = CoreMetrics.Gauge(
            label: Self.named("sentinel_sse_subscribers", "SSE clients connected now."), factory: factory)
        storeQueueDepth = CoreMetrics.Gauge(
            label: Self.named("sentinel_queue_depth", "Publications waiting to be written to the store."),
            dimensions: [("queue", "store")], factory: factory)
        eventsPublished = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_events_published_total", "Events committed to the log and offered to the SSE clients."),
            factory: factory)
        droppedByStoreBuffer = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_events_dropped_total",
                "Events lost: the store buffer overflowed while the database could not be written, or a slow SSE client was cut off."
            ), dimensions: [("reason", "store_buffer_full")], factory: factory)
        droppedBySlowClient = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_events_dropped_total",
                "Events lost: the store buffer overflowed while the database could not be written, or a slow SSE client was cut off."
            ), dimensions: [("reason", "slow_client")], factory: factory)
        httpConnections = CoreMetrics.Gauge(
            label: Self.named(
                "sentinel_http_connections", "HTTP connections open now (server.maxConnections at most)."),
            factory: factory)
        idleConnectionsClosed = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_http_idle_connections_closed_total",
                "Idle connections closed to make room for a new one (server.maxConnections reached)."), factory: factory
        )
        mqttPublished = CoreMetrics.Counter(
            label: Self.named("sentinel_mqtt_published_total", "Log events sent to the MQTT broker."), factory: factory)
        mqttBacklog = CoreMetrics.Gauge(
            label: Self.named("sentinel_mqtt_backlog_events", "Log events the MQTT broker has not acknowledged yet."),
            factory: factory)
        fleetReceived = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_fleet_messages_total",
                "Messages a fleet received from its sites, by outcome: stored, duplicate (dropped), rejected (malformed)."
            ), dimensions: [("outcome", "stored")], factory: factory)
        fleetDuplicates = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_fleet_messages_total",
                "Messages a fleet received from its sites, by outcome: stored, duplicate (dropped), rejected (malformed)."
            ), dimensions: [("outcome", "duplicate")], factory: factory)
        fleetRejected = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_fleet_messages_total",
                "Messages a fleet received from its sites, by outcome: stored, duplicate (dropped), rejected (malformed)."
            ), dimensions: [("outcome", "rejected")], factory: factory)
        fleetMissing = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_fleet_missing_events_total", "Site log ids a fleet never received (gaps in a site's ids)."),
            factory: factory)
        retainedByAge = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_retention_deleted_total",
                "Stored records retention deleted, by reason: age (past privacy.retention.days) or size (the oldest, beyond maxMegabytes)."
            ), dimensions: [("reason", "age")], factory: factory)
        retainedBySize = CoreMetrics.Counter(
            label: Self.named(
                "sentinel_retention_deleted_total",
                "Stored records retention deleted, by reason: age (past privacy.retention.days) or size (the oldest, beyond maxMegabytes)."
            ), dimensions: [("reason", "size")], factory: factory)
        storeLatency = CoreMetrics.Timer(
            label: Self.named(
                "sentinel_stage_duration_seconds",
                "Time one pipeline stage took, per frame (per batch for store and publish)."),
            dimensions: [("stage", "store")], preferredDisplayUnit: .seconds,
            factory: factory)
        publishLatency = CoreMetrics.Timer(
            label: Self.named(
                "sentinel_stage_duration_seconds",
                "Time one pipeline stage took, per frame (per batch for store and publish)."),
            dimensions: [("stage", "publish")],
            preferredDisplayUnit: .seconds, factory: factory)
        captureToPublish = CoreMetrics.Timer(
            label: Self.named(
                "sentinel_capture_to_publish_seconds",
                "From the capture of the frame an event came from to the event's being committed and offered to SSE clients."
            ), preferredDisplayUnit: .seconds, factory: factory)
    }

    /// SSE clients connected now.
    public let sseSubscribers: CoreMetrics.Gauge
    /// Publications waiting to be written to the store.
    public let storeQueueDepth: CoreMetrics.Gauge
    /// Events committed to the log and offered to the SSE clients.
    public let eventsPublished: CoreMetrics.Counter
    /// Publications dropped because the store could not be written for so long that the buffer filled.
    public let droppedByStoreBuffer: CoreMetrics.Counter
    /// Messages a slow SSE client did not get because it was cut off.
    public let droppedBySlowClient: CoreMetrics.Counter
    /// HTTP connections open now (`server.maxConnections` at most).
    public let httpConnections: CoreMetrics.Gauge
    /// Idle connections closed to make room for a new one, `server.maxConnections` being reached.
    public let idleConnectionsClosed: CoreMetrics.Counter
    /// Log events sent to the MQTT broker (again after a crash, so at least the events forwarded).
    public let mqttPublished: CoreMetrics.Counter
    /// Log events the broker has not acknowledged yet.
    public let mqttBacklog: CoreMetrics.Gauge
    /// A fleet's messages from its sites: stored, dropped as duplicates, rejected as malformed.
    public let fleetReceived: CoreMetrics.Counter
    public let fleetDuplicates: CoreMetrics.Counter
    public let fleetRejected: CoreMetrics.Counter
    /// Site log ids a fleet never received (gaps in a site's ids).
    public let fleetMissing: CoreMetrics.Counter
    /// Records retention deleted, by why: past `privacy.retention.days`, or the oldest beyond `maxMegabytes`.
    public let retainedByAge: CoreMetrics.Counter
    public let retainedBySize: CoreMetrics.Counter
    public let storeLatency: CoreMetrics.Timer
    public let publishLatency: CoreMetrics.Timer
    /// From the capture of the frame an event came from to the event's being committed and offered to SSE clients.
    public let captureToPublish: CoreMetrics.Timer

    /// A fleet's refusals by site (`unknown` for a site it never heard of: names from outside must not grow the
    /// metric without bound) and reason.
    public func fleetRejections(site: String, reason: InvalidEvent.Reason) -> CoreMetrics.Counter {
        CoreMetrics.Counter(
            label: Self.named(
                "sentinel_fleet_rejected_total",
                "Messages a fleet refused, by site (unknown: a site it never heard of) and reason (format, topic, id, number, time, faceId, name)."
            ), dimensions: [("site", site), ("reason", reason.rawValue)],
            factory: factory)
    }

    /// Latency of one pipeline stage per frame (or per batch, for the store and the fan-out).
    public func stage(_ name: String) -> CoreMetrics.Timer {
        CoreMetrics.Timer(
            label: Self.named(
                "sentinel_stage_duration_seconds",
                "Time one pipeline stage took, per frame (per batch for store and publish)."),
            dimensions: [("stage", name)], preferredDisplayUnit: .seconds,
            factory: factory)
    }

    /// Frames per second one source analysed, over the last second.
    public func fps(source: String) -> CoreMetrics.Gauge {
        CoreMetrics.Gauge(
            label: Self.named("sentinel_source_fps", "Frames one source analysed per second, over the last second."),
            dimensions: [("source_id", source)], factory: factory)
    }

    /// Emotion readings of one source refused because the model's output was no reading (not a number, out of range).
    public func refusedReadings(source: String) -> CoreMetrics.Counter {
        CoreMetrics.Counter(
            label: Self.named(
                "sentinel_emotion_readings_refused_total",
                "Emotion readings refused because the model's output was no reading (not a number, out of range)."),
            dimensions: [("source_id", source)], factory: factory)
    }

    /// Faces of one source due an emotion reading that were not read, by why (`EmotionSettings.Unreadable`).
    public func unreadFaces(source: String, why: String) -> CoreMetrics.Counter {
        CoreMetrics.Counter(
            label: Self.named(
                "sentinel_emotion_faces_unread_total",
                "Faces due an emotion reading that were not read, by reason: small, weak, cut, turned, blurred."),
            dimensions: [("source_id", source), ("reason", why)],
            factory: factory)
    }

    /// Frames one source's capture edge received, handed to analysis, and dropped because analysis was behind: exact
    /// counts, not estimates.
    public func frames(source: String) -> (
        captured: CoreMetrics.Counter, analysed: CoreMetrics.Counter, dropped: CoreMetrics.Counter
    ) {
        func counter(_ name: String, _ help: String) -> CoreMetrics.Counter {
            CoreMetrics.Counter(
                label: Self.named("sentinel_frames_\(name)_total", help), dimensions: [("source_id", source)],
                factory: factory)
        }
        return (
            counter("captured", "Frames a source's capture edge received."),
            counter("analysed", "Frames a source's capture edge handed to analysis."),
            counter("dropped", "Frames dropped at a source's capture edge because analysis was behind.")
        )
    }

    /// The showroom's figures from one committed batch of published visitor events: visits started, visits ended
    /// by reason, and the dwell of each finished zone stay (by camera and zone).
    func record(_ events: [MaskedEvent]) {
        for masked in events {
            let event = masked.event
            switch event.type {
            case .entered:
                CoreMetrics.Counter(
                    label: Self.named("sentinel_visits_started_total", "Visits that began (visitor.entered)."),
                    factory: factory
                ).increment()
            case .exited:
                CoreMetrics.Counter(
                    label: Self.named(
                        "sentinel_visits_ended_total",
                        "Visits that ended (visitor.exited), by reason: lost, endOfStream, shutdown, interrupted."),
                    dimensions: [("reason", event.reason?.rawValue ?? "unknown")],
                    factory: factory
                ).increment()
            case .zoneExited:
                if let stay = event.stay, let dwell = stay.dwellSeconds {
                    CoreMetrics.Recorder(
                        label: Self.named(
                            "sentinel_zone_dwell_seconds", "Dwell of each finished stay in a zone, by camera and zone."),
                        dimensions: [("source_id", event.visitor.sourceId), ("zone", stay.zone)], factory: factory
                    ).record(dwell)
                }
            default:
                break
            }
        }
    }

    /// Who is present and the mood, as `/api/zones` and `/api/sentiment` publish them: a figure suppressed for
    /// having fewer than `minGroupSize` visitors behind it is NaN (no value in Prometheus), never its count. Set when
    /// scraped, from the live state: a fleet following a thousand sites would otherwise set a thousand gauges a batch.
    private func record(_ occupancy: Occupancy.Snapshot, _ gauge: GaugeReading?) {
        func value<V>(_ aggregate: Aggregate<V>?, _ number: (V) -> Double) -> Double {
            aggregate?.value.map(number) ?? .nan
        }
        CoreMetrics.Gauge(
            label: Self.named(
                "sentinel_visitors_present",
                "Visitors present now; NaN while fewer than privacy.minGroupSize (suppressed, as on /api/zones)."),
            factory: factory
        ).record(
            value(occupancy.visitors) { Double($0) })
        for (zone, count) in occupancy.zones {
            CoreMetrics.Gauge(
                label: Self.named(
                    "sentinel_zone_visitors_present",
                    "Visitors present in a zone now; NaN while suppressed (fewer than privacy.minGroupSize, or complementary)."
                ),
                dimensions: [("source_id", zone.sourceId), ("zone", zone.name)],
                factory: factory
            ).record(value(count) { Double($0) })
        }
        guard let gauge else { return }
        CoreMetrics.Gauge(
            label: Self.named(
                "sentinel_mood_score",
                "The showroom's mood, 0 (cold) to 100 (hot), over the gauge's window; NaN while suppressed."),
            factory: factory
        ).record(
            value(gauge.overall) { Double($0.score) })
        for (source, zones) in gauge.zones {
            for (zone, level) in zones {
                CoreMetrics.Gauge(
                    label: Self.named(
                        "sentinel_zone_mood_score",
                        "A zone's mood, 0 to 100, over the gauge's window; NaN while suppressed."),
                    dimensions: [("source_id", source), ("zone", zone)],
                    factory: factory
                ).record(value(level) { Double($0.score) })
            }
        }
    }

    /// What each metric means, as `# HELP` says it, by name: swift-metrics has no place for help text, so every metric
    /// is made with its name given through `named`, which takes its help with it. No metric is made without.
    private static let helps = Mutex<[String: String]>([:])

    /// `name`, its help text `help` kept for the exposition.
    static func named(_ name: String, _ help: String) -> String {
        helps.withLock { $0[name] = help }
        return name
    }

    /// Every metric made so far in the process and its help text.
    public static var declared: [String: String] { helps.withLock { $0 } }

    /// The Prometheus text exposition, each metric with its `# HELP` and `# TYPE`; who is present and the mood as
    /// `live` has them now.
    public func exposition(_ live: LiveState) -> String {
        let now = live.now
        record(now.occupancy.snapshot(zones: live.catalogue.zones.map(\.id)), now.gauge)
        return registry.emitToString().split(separator: "\n", omittingEmptySubsequences: false).map { line in
            guard line.hasPrefix("# TYPE "), let name = line.split(separator: " ").dropFirst(2).first,
                let text = Self.declared[String(name)]
            else { return String(line) }
            return "# HELP \(name) \(text)\n\(line)"
        }.joined(separator: "\n")
    }
}
