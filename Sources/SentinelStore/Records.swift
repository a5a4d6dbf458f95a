import Foundation
import GRDB
import SentinelCore
import SentinelWire

// One Codable record type per table, with the columns as the schema has them (times in Unix seconds). Reads go
// through these; the hot writes are cached statements over the same columns.

/// A row of `events`, the log.
struct EventRow: FetchableRecord, TableRecord {
    static let databaseTableName = "events"
    var id: Int64
    var streamId: String
    var sequenceNumber: Int64
    var type: LoggedEvent.Kind
    var time: Double
    var zone: String?
    var payload: String

    /// Read by column without the Decodable machinery: a resuming client is sent a million of these.
    init(row: Row) throws {
        id = row["id"]
        streamId = row["streamId"]
        sequenceNumber = row["sequenceNumber"]
        let type: String = row["type"]
        guard let kind = LoggedEvent.Kind(rawValue: type) else {
            throw DatabaseError(message: "event \(id as Int64) has an unknown type \"\(type)\"")
        }
        self.type = kind
        time = row["time"]
        zone = row["zone"]
        payload = row["payload"]
    }

    var logged: LoggedEvent {
        LoggedEvent(
            id: id, sequenceNumber: sequenceNumber, streamId: streamId, type: type,
            time: Date(timeIntervalSince1970: time), zone: zone, payload: Data(payload.utf8))
    }
}

/// A row of `visits`: one per visit, its published record kept up to date.
struct VisitRow: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "visits"
    var faceId: String
    var sourceId: String
    var state: VisitState
    var zone: String?
    var firstSeen: Double
    var lastSeen: Double
    var exitReason: ExitReason?
    /// The visitor as published (JSON).
    var record: String
}

/// A row of `zoneStays`: one stay of a visit in a zone; it belongs to its visit.
struct StayRow: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "zoneStays"
    var id: Int64
    var faceId: String
    var zone: String
    var enteredAt: Double
    var exitedAt: Double?
    var dwellSeconds: Double?

    var stay: VisitorEvent.Stay {
        VisitorEvent.Stay(
            zone: zone, enteredAt: Date(timeIntervalSince1970: enteredAt),
            exitedAt: exitedAt.map(Date.init(timeIntervalSince1970:)), dwellSeconds: dwellSeconds)
    }
}

/// A row of `gaugeReadings`: a reading as published, beside its log row.
struct GaugeRow: Codable, FetchableRecord, TableRecord {
    static let databaseTableName = "gaugeReadings"
    var eventId: Int64
    var time: Double
    var reading: String
}
