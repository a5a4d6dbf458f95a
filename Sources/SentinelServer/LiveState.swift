import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelStore
import Synchronization

/// What the REST API reports about now, each part written by its one owner: who is present and the latest gauge
/// reading by the store writer (from committed publications only, so it agrees with the store), each source's
/// health by that source, the database's by the writer, the MQTT output's by that output; in a fleet, the sources
/// and zones known and each site's state by the fleet's ingest.
public final class LiveState: Sendable {
    private let state: Mutex<State>

    private struct State {
        var now: Now
        var sources: [String: SourceHealth]
        var database = DatabaseHealth()
        var mqtt: MQTTHealth?
        var catalogue: Catalogue
        var fleet: FleetHealth?
    }

    /// The sources and zones the API lists and filters by: a box's from its pipeline; a fleet's as its sites' events
    /// name them (`site/source`).
    public struct Catalogue: Sendable {
        public var sources: [String]
        public var zones: [HTTPAPI.Zone]
    }

    /// Who is present and the showroom's mood, as of the last committed batch.
    public struct Now: Sendable {
        public var occupancy: Occupancy
        public var gauge: GaugeReading?
    }

    /// `running` are the sources this process runs (their health is reported); `catalogue` every source and zone the
    /// API knows.
    public init(running: [String], catalogue: Catalogue, minGroupSize: Int) {
        state = Mutex(
            State(
                now: Now(occupancy: Occupancy(minGroupSize: minGroupSize)),
                sources: Dictionary(uniqueKeysWithValues: running.map { ($0, SourceHealth()) }), catalogue: catalogue))
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
    }

    public struct FrameCounts: Sendable, Codable, Equatable {
        public var captured = 0
        public var analysed = 0
        public var dropped = 0
    }

    /// The store's state.
    public struct DatabaseHealth: Sendable, Codable, Equatable {
        public var writable = true
        public var message: String?
        /// Publications waiting in memory for the database.
        public var buffered = 0
        /// Publications lost because the buffer was full.
        public var dropped = 0
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
        /// Messages the broker refused for good since start.
        public var rejected: Int
    }

    /// A fleet's state: its broker connection and each site it has heard of.
    public struct FleetHealth: Sendable, Codable, Equatable {
        public var connected: Bool
        public var message: String?
        public var failedAttempts: Int
        public var sites: [SiteHealth]
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
    }

    public var now: Now { state.withLock { $0.now } }

    public var catalogue: Catalogue { state.withLock { $0.catalogue } }

    func updateCatalogue(_ change: (inout Catalogue) -> Void) { state.withLock { change(&$0.catalogue) } }

    public var fleetHealth: FleetHealth? { state.withLock { $0.fleet } }

    func updateFleet(_ health: FleetHealth) { state.withLock { $0.fleet = health } }

    func publish(_ now: Now) { state.withLock { $0.now = now } }

    public var sourceHealth: [String: SourceHealth] { state.withLock { $0.sources } }

    public var databaseHealth: DatabaseHealth { state.withLock { $0.database } }

    func updateSource(_ id: String, _ change: (inout SourceHealth) -> Void) {
        state.withLock { change(&$0.sources[id, default: SourceHealth()]) }
    }

    public var mqttHealth: MQTTHealth? { state.withLock { $0.mqtt } }

    func updateMQTT(_ health: MQTTHealth) { state.withLock { $0.mqtt = health } }

    func updateDatabase(_ change: (inout DatabaseHealth) -> Void) {
        state.withLock { change(&$0.database) }
    }
}
