public import Foundation
import SentinelCore
public import SentinelPrivacy
public import SentinelWire
public import ServiceLifecycle

/// What a service stores into and serves from: the event log, visits, zone stays and gauge readings, whatever holds
/// them. `EventStore` is the embedded one (SQLite, a box's and a single fleet's); a fleet of replicas shares a
/// PostgreSQL one (`SentinelPostgres`). Both keep the same guarantees: a batch is one transaction, log ids and each
/// stream's sequence numbers increase in commit order without gaps a reader could pass, and a forwarded event's
/// origin (site, id) is stored once. A service group runs the log as its first service, stopped last: SQLite's
/// checkpoints, PostgreSQL's connection pool.
public protocol EventLog: RetentionTarget, Service, Sendable {
    /// Where the log is, for messages: a file's path, or a server's URL without its password.
    var location: String { get }
    /// The records of the visits a crash left open, closed as `interrupted` when the log was opened.
    var interrupted: [Data] { get }
    /// Whether other processes append to this log too (replicas of a fleet): what this one commits is then not all
    /// there is, and followers read the log rather than this process's commits.
    var isShared: Bool { get }

    /// A cheap query that fails when the log cannot be read.
    func check() async throws(StoreError)
    /// Writes a batch in one transaction and returns its log rows, ids assigned. A forwarded log entry whose
    /// origin is logged already is left out (and not returned).
    func append(_ batch: [LogEntry]) async throws(StoreError) -> [LoggedEvent]
    /// Log rows after `id`, oldest first: at most `limit`, and no more after the one whose payloads bring the page to
    /// `bytes` (a page holds at least one row).
    func events(after id: Int64, limit: Int, bytes: Int) async throws(StoreError) -> [LoggedEvent]
    /// What a resuming client can be given: ids after `floor` are all in the log (ids at or below it were deleted by
    /// retention), and `last` is the newest id ever assigned.
    func logBounds() async throws(StoreError) -> (floor: Int64, last: Int64)
    /// The published visitor events logged at or after `time`, oldest first (to rebuild the gauge's window).
    func visitorEvents(since time: Date) async throws(StoreError) -> [Data]
    /// A visit as published, with its zone stays.
    func visit(_ faceId: String) async throws(StoreError) -> StoredVisit?
    /// Visits that overlap `from..<to`, in order of first sighting, a page at a time: pass the returned cursor back
    /// for the next page (nil when there is none).
    func visits(from: Date, to: Date, after cursor: VisitCursor?, limit: Int) async throws(StoreError) -> (
        records: [Data], next: VisitCursor?
    )
    /// Gauge readings since `since`, oldest first, at most `limit` (the newest ones).
    func gaugeReadings(since: Date, limit: Int) async throws(StoreError) -> [Data]
    /// What a report of `from..<to` is made of: the visits that overlap it (of `source` alone, if given), their zone
    /// stays, and the gauge's overall readings in it.
    func reportInput(from: Date, to: Date, source: String?) async throws(StoreError) -> ReportInput
    /// The last log id stored from each site that forwarded events to this log.
    func received() async throws(StoreError) -> [String: Int64]
    /// Whether this process publishes what one process publishes for all (a fleet's gauge readings): always, for a
    /// log of its own; for a shared one, while this replica holds the lead.
    func leads() async -> Bool
    /// Gives up this process's claim on the log, once its service has stopped.
    func relinquish()
}

extension EventLog {
    /// Log rows after `id`, oldest first, at most `limit`.
    public func events(after id: Int64, limit: Int) async throws(StoreError) -> [LoggedEvent] {
        try await events(after: id, limit: limit, bytes: .max)
    }
}

/// A visit as published, with its zone stays.
public struct StoredVisit: Sendable, Equatable {
    public var record: Data
    public var exitReason: ExitReason?
    public var stays: [VisitorEvent.Stay]

    public init(record: Data, exitReason: ExitReason?, stays: [VisitorEvent.Stay]) {
        self.record = record
        self.exitReason = exitReason
        self.stays = stays
    }
}

/// What a report is made of (`EventLog.reportInput`).
public struct ReportInput: Sendable {
    public var visits: [ReportBuilder.Visit]
    public var stays: [ReportBuilder.Stay]
    public var moods: [(time: Date, overall: Aggregate<GaugeReading.Level>)]

    public init(
        visits: [ReportBuilder.Visit], stays: [ReportBuilder.Stay],
        moods: [(time: Date, overall: Aggregate<GaugeReading.Level>)]
    ) {
        self.visits = visits
        self.stays = stays
        self.moods = moods
    }
}

/// Where a page of visits ended. Written `firstSeen:row` (`firstSeen` as the shortest decimal that reads back
/// exactly; `row` the visit's row number in its store), opaque to clients.
public struct VisitCursor: Sendable, Equatable, LosslessStringConvertible {
    public var firstSeen: Double
    public var row: Int64

    public init(firstSeen: Double, row: Int64) {
        self.firstSeen = firstSeen
        self.row = row
    }

    /// Before every visit.
    public static let start = VisitCursor(firstSeen: -.greatestFiniteMagnitude, row: 0)

    public init?(_ text: String) {
        let parts = text.split(separator: ":")
        guard parts.count == 2, let firstSeen = Double(parts[0]), firstSeen.isFinite, let row = Int64(parts[1])
        else { return nil }
        self.init(firstSeen: firstSeen, row: row)
    }

    public var description: String { "\(firstSeen):\(row)" }
}

extension LogEntry {
    /// The stream a log entry is logged in: its camera's, or a gauge's (a site's readings are a stream of their own
    /// beside the fleet's).
    package var streamId: String {
        switch self {
        case .visitor(_, let published, _): published.event.visitor.sourceId
        case .gauge(_, let origin):
            origin.map { SiteSource.id(site: $0.site, source: LogEntry.gaugeStream) } ?? LogEntry.gaugeStream
        }
    }

    /// Its row of the log (id 0 until stored), the published copy as the payload.
    package func logRow(sequenceNumber: Int64, encoder: JSONEncoder) throws -> LoggedEvent {
        switch self {
        case .visitor(_, let published, _):
            let event = published.event
            return LoggedEvent(
                id: 0, sequenceNumber: sequenceNumber, streamId: streamId, type: .visitor(event.type), time: event.time,
                zone: event.stay?.zone ?? event.visitor.zone, payload: published.json)
        case .gauge(let reading, _):
            return LoggedEvent(
                id: 0, sequenceNumber: sequenceNumber, streamId: streamId, type: .gauge, time: reading.time, zone: nil,
                payload: try encoder.encode(reading))
        }
    }

    /// What a visitor event makes of its visit: the store's copy of the event, the visitor as published (the record
    /// the REST API serves), and how long the visit has lasted so far. Nil for a gauge reading.
    package func visit(encoder: JSONEncoder) throws -> (event: VisitorEvent, record: Data, span: Double)? {
        guard case .visitor(let stored, let published, _) = self else { return nil }
        let event = stored.event
        return (
            event, try encoder.encode(published.event.visitor),
            event.time.timeIntervalSince(event.visitor.firstSeen ?? event.time)
        )
    }
}
