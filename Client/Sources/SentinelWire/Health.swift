import Foundation

/// `GET /healthz`: the service's state, one entry per source, the store, and the MQTT output or fleet when there is
/// one. `status` is `ok`, `behind` (every source up, one dropping frames at its edge) or `degraded` (answered 503).
public struct ServiceHealth: Sendable, Codable, Equatable {
    public struct Source: Sendable, Codable, Equatable {
        public var sourceId: String
        public var state: SourceHealth.State
        public var up: Bool
        /// Seconds since its last frame; absent before the first.
        public var lastFrameAgeSeconds: Double?
        /// Frames analysed per second, over the last second.
        public var fps: Double
        public var frames: FrameCounts
        /// Seconds from capture to the start of analysis, for the latest frame.
        public var lagSeconds: Double
        public var reconnectAttempt: Int?
        public var nextRetryAt: Date?
        public var message: String?

        public init(
            sourceId: String, state: SourceHealth.State, up: Bool, lastFrameAgeSeconds: Double?, fps: Double,
            frames: FrameCounts, lagSeconds: Double, reconnectAttempt: Int?, nextRetryAt: Date?, message: String?
        ) {
            self.sourceId = sourceId
            self.state = state
            self.up = up
            self.lastFrameAgeSeconds = lastFrameAgeSeconds
            self.fps = fps
            self.frames = frames
            self.lagSeconds = lagSeconds
            self.reconnectAttempt = reconnectAttempt
            self.nextRetryAt = nextRetryAt
            self.message = message
        }
    }
    /// Up and keeping up; up, but a source cannot keep its rate (200 still); a source or the store is down, or a
    /// fleet cannot reach its broker (503).
    public enum Status: String, Sendable, Codable {
        case ok, behind, degraded
    }

    public var status: Status
    /// The details, for the visitor scope (or a server without tokens) only: they count frames and events, which
    /// a probe or the aggregate scope has no need of. Absent otherwise.
    public var sources: [Source]?
    public var database: DatabaseHealth?
    public var mqtt: MQTTHealth?
    public var fleet: FleetHealth?

    public init(
        status: Status, sources: [Source]?, database: DatabaseHealth?, mqtt: MQTTHealth?, fleet: FleetHealth?
    ) {
        self.status = status
        self.sources = sources
        self.database = database
        self.mqtt = mqtt
        self.fleet = fleet
    }
}

/// One source's state.
public struct SourceHealth: Sendable, Codable, Equatable {
    public enum State: String, Sendable, Codable {
        /// `behind`: running, but analysis cannot keep the source's rate (frames dropped at its edge, or late).
        case starting, running, behind, reconnecting, ended, failed
    }
    public var state = State.starting
    public var lastFrameAt: Date?
    /// Frames analysed per second, over the last second.
    public var fps = 0.0
    /// Frames captured, analysed (detected or carried) and dropped at the capture edge since start.
    public var frames = FrameCounts()
    /// Seconds from capture to the start of analysis, for the latest frame.
    public var lagSeconds = 0.0
    /// While reconnecting: the attempt about to be made, and when.
    public var reconnectAttempt: Int?
    public var nextRetryAt: Date?
    /// Why it ended, failed or is reconnecting.
    public var message: String?

    public init() {}
}

public struct FrameCounts: Sendable, Codable, Equatable {
    public var captured = 0
    public var analysed = 0
    public var dropped = 0

    public init(captured: Int = 0, analysed: Int = 0, dropped: Int = 0) {
        self.captured = captured
        self.analysed = analysed
        self.dropped = dropped
    }
}

/// The store's state.
public struct DatabaseHealth: Sendable, Codable, Equatable {
    public var writable = true
    public var message: String?
    /// Publications waiting in memory for the database.
    public var buffered = 0
    /// Publications lost because the buffer was full.
    public var dropped = 0

    public init() {}
}

/// The MQTT output's state, when there is one.
public struct MQTTHealth: Sendable, Codable, Equatable {
    public var connected: Bool
    /// Why it is not connected.
    public var message: String?
    /// Failed connection attempts since the last success.
    public var failedAttempts: Int
    /// Every log id up to this one is acknowledged by the broker.
    public var acknowledged: Int64
    /// Log events not acknowledged yet, and how old the oldest is.
    public var backlog: Int
    public var oldestUnacknowledgedSeconds: Double?
    /// Messages the broker refused for good since start (not authorised for their topic, say), and the topics it
    /// refused (the first 20).
    public var rejected: Int
    public var rejectedTopics: [String]

    public init(
        connected: Bool, message: String? = nil, failedAttempts: Int, acknowledged: Int64, backlog: Int,
        oldestUnacknowledgedSeconds: Double? = nil, rejected: Int, rejectedTopics: [String] = []
    ) {
        self.connected = connected
        self.message = message
        self.failedAttempts = failedAttempts
        self.acknowledged = acknowledged
        self.backlog = backlog
        self.oldestUnacknowledgedSeconds = oldestUnacknowledgedSeconds
        self.rejected = rejected
        self.rejectedTopics = rejectedTopics
    }
}

/// A fleet's state: its broker connection and each site it has heard of.
public struct FleetHealth: Sendable, Codable, Equatable {
    public var connected: Bool
    public var message: String?
    public var failedAttempts: Int
    public var sites: [SiteHealth]
    /// Messages refused before any site could be held to them (a site never heard of, a topic of no site), by reason.
    public var rejected: [InvalidEvent.Reason: Int]

    public init(
        connected: Bool, message: String?, failedAttempts: Int, sites: [SiteHealth],
        rejected: [InvalidEvent.Reason: Int] = [:]
    ) {
        self.connected = connected
        self.message = message
        self.failedAttempts = failedAttempts
        self.sites = sites
        self.rejected = rejected
    }
}

public struct SiteHealth: Sendable, Codable, Equatable {
    public var site: String
    /// `online` or `offline` as the site's box last said (retained; `offline` is its last will), nil before it spoke.
    public var availability: String?
    public var lastEventAt: Date?
    public var lastEventAgeSeconds: Double?
    /// The site's last log id stored here.
    public var lastId: Int64
    /// Events stored since start, messages dropped as duplicates, and log ids never received (a gap in the
    /// site's ids: lost between the box and here).
    public var received: Int
    public var duplicates: Int
    public var missing: Int64
    /// Messages refused since start (`EventCheck`), by reason: nothing of them was stored.
    public var rejected: [InvalidEvent.Reason: Int]

    public init(
        site: String, availability: String? = nil, lastEventAt: Date? = nil, lastEventAgeSeconds: Double? = nil,
        lastId: Int64, received: Int, duplicates: Int, missing: Int64, rejected: [InvalidEvent.Reason: Int] = [:]
    ) {
        self.site = site
        self.availability = availability
        self.lastEventAt = lastEventAt
        self.lastEventAgeSeconds = lastEventAgeSeconds
        self.lastId = lastId
        self.received = received
        self.duplicates = duplicates
        self.missing = missing
        self.rejected = rejected
    }
}
