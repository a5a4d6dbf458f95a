import Foundation

// The bodies of Sentinel's REST API and event stream, as the server writes them and SentinelClient reads them: one
// definition for both (openapi.json describes the same shapes for other languages). Every date is ISO-8601 UTC with
// milliseconds (`JSONDecoder.sentinel()` reads them).

/// `GET /api/visitors`: who is here now, or (with `from`/`to`) the visits in a period, a page at a time.
public struct VisitorPage: Sendable, Codable, Equatable {
    public var visitors: [VisitorRecord]
    /// Present while more visits follow: pass it as `cursor` for the next page.
    public var nextCursor: String?

    public init(visitors: [VisitorRecord], nextCursor: String? = nil) {
        self.visitors = visitors
        self.nextCursor = nextCursor
    }
}

/// `GET /api/visitors/{faceId}`: one visit, with every zone stay.
public struct VisitorDetail: Sendable, Codable, Equatable {
    public var visitor: VisitorRecord
    public var exitReason: ExitReason?
    public var stays: [VisitorEvent.Stay]

    public init(visitor: VisitorRecord, exitReason: ExitReason?, stays: [VisitorEvent.Stay]) {
        self.visitor = visitor
        self.exitReason = exitReason
        self.stays = stays
    }
}

/// `GET /api/sentiment`: the current gauge reading and the readings of the last minutes.
public struct SentimentHistory: Sendable, Codable, Equatable {
    public var current: GaugeReading?
    public var series: [GaugeReading]

    public init(current: GaugeReading?, series: [GaugeReading]) {
        self.current = current
        self.series = series
    }
}

/// `GET /api/zones`: every zone with its polygon and who is in it now (k-suppressed), and the mood mix of those
/// present.
public struct ZoneList: Sendable, Codable, Equatable {
    public struct Zone: Sendable, Codable, Equatable {
        public var name: String
        public var sourceId: String
        /// False where emotion is not measured (staff areas).
        public var emotion: Bool
        /// The polygon as the pipeline file writes it, `[x, y]` points in `units` (`normalized` fractions of the frame
        /// or `pixels`); absent where it is not known (a fleet learns zones from events).
        public var polygon: [[Double]]?
        public var units: PolygonUnits?
        public var visitors: Aggregate<Int>

        public init(
            name: String, sourceId: String, emotion: Bool, polygon: [[Double]]?, units: PolygonUnits?,
            visitors: Aggregate<Int>
        ) {
            self.name = name
            self.sourceId = sourceId
            self.emotion = emotion
            self.polygon = polygon
            self.units = units
            self.visitors = visitors
        }
    }
    public var zones: [Zone]
    public var visitors: Aggregate<Int>
    /// The share of each expression among present visitors whose expression is known.
    public var emotions: Aggregate<[String: Double]>
    /// k: a figure over fewer visitors is withheld, here and in every aggregate.
    public var minGroupSize: Int

    public init(zones: [Zone], visitors: Aggregate<Int>, emotions: Aggregate<[String: Double]>, minGroupSize: Int) {
        self.zones = zones
        self.visitors = visitors
        self.emotions = emotions
        self.minGroupSize = minGroupSize
    }
}

/// Every error the API answers: `{"error": "what was wrong"}` with the HTTP status.
public struct APIErrorBody: Sendable, Codable, Equatable {
    public var error: String
    public init(error: String) { self.error = error }
}

/// One message of `GET /events` (and of a site's MQTT events topic): a logged event in the log's order. Encodable as
/// well, so that an app can keep what it received, or a test or a relay write it, in the same shape.
public struct EventEnvelope: Sendable, Codable, Equatable {
    /// The log id: strictly increasing, what `Last-Event-ID` resumes after.
    public var id: Int64
    /// The event's number within its stream (`streamId`: a source, or `gauge`).
    public var sequenceNumber: Int64
    public var streamId: String
    public var payloadType: String
    public var timestamp: Date
    /// The site a fleet heard it from (absent on a box's own stream).
    public var site: String?
    public var payload: Payload

    public enum Payload: Sendable, Equatable {
        /// `visitor.entered`, `visitor.zoneEntered`, `visitor.zoneExited`, `visitor.updated`, `visitor.exited`.
        case visitor(VisitorEvent)
        /// `sentiment.gauge`.
        case gauge(GaugeReading)
    }

    public static let gaugeType = "sentiment.gauge"

    /// An envelope; its `payloadType` is the payload's (`sentiment.gauge`, or the visitor event's type).
    public init(
        id: Int64, sequenceNumber: Int64, streamId: String, timestamp: Date, site: String? = nil, payload: Payload
    ) {
        self.id = id
        self.sequenceNumber = sequenceNumber
        self.streamId = streamId
        self.timestamp = timestamp
        self.site = site
        self.payload = payload
        switch payload {
        case .visitor(let event): payloadType = event.type.rawValue
        case .gauge: payloadType = Self.gaugeType
        }
    }

    private enum Keys: String, CodingKey {
        case id, sequenceNumber, streamId, payloadType, timestamp, site, payload
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        id = try container.decode(Int64.self, forKey: .id)
        sequenceNumber = try container.decode(Int64.self, forKey: .sequenceNumber)
        streamId = try container.decode(String.self, forKey: .streamId)
        payloadType = try container.decode(String.self, forKey: .payloadType)
        timestamp = try container.decode(Date.self, forKey: .timestamp)
        site = try container.decodeIfPresent(String.self, forKey: .site)
        if payloadType == Self.gaugeType {
            payload = .gauge(try container.decode(GaugeReading.self, forKey: .payload))
        } else if VisitorEvent.Kind(rawValue: payloadType) != nil {
            payload = .visitor(try container.decode(VisitorEvent.self, forKey: .payload))
        } else {
            throw DecodingError.dataCorruptedError(
                forKey: .payloadType, in: container, debugDescription: "unknown payloadType \(payloadType)")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(id, forKey: .id)
        try container.encode(sequenceNumber, forKey: .sequenceNumber)
        try container.encode(streamId, forKey: .streamId)
        try container.encode(payloadType, forKey: .payloadType)
        try container.encode(timestamp, forKey: .timestamp)
        try container.encodeIfPresent(site, forKey: .site)
        switch payload {
        case .visitor(let event): try container.encode(event, forKey: .payload)
        case .gauge(let reading): try container.encode(reading, forKey: .payload)
        }
    }
}

/// The body of a `stream.reset` or `stream.cutoff` message (control messages carry no id, so a client's last event id
/// stays where it was).
public struct StreamNotice: Sendable, Codable, Equatable {
    /// reset: `expired` (the id was deleted by retention) or `unknown` (not in this log); cutoff: why the server
    /// closed the stream.
    public var reason: String
    public var message: String?
    /// reset: the id the client asked for (as it sent it: it may not be a number), and the log id the stream
    /// continues after.
    public var requestedId: String?
    public var resumeAfter: Int64?
    /// cutoff: the last log id sent before the stream was closed.
    public var lastEventId: Int64?

    public static let resetType = "stream.reset"
    public static let cutoffType = "stream.cutoff"

    public init(
        reason: String, message: String? = nil, requestedId: String? = nil, resumeAfter: Int64? = nil,
        lastEventId: Int64? = nil
    ) {
        self.reason = reason
        self.message = message
        self.requestedId = requestedId
        self.resumeAfter = resumeAfter
        self.lastEventId = lastEventId
    }
}
