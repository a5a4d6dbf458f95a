import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelStore
import Synchronization

/// What the REST API reports about now, each part written by its one owner: who is present and the latest gauge
/// reading by the store writer (from committed publications only, so it agrees with the store), each source's
/// health by that source, the database's by the writer.
public final class LiveState: Sendable {
    private let state: Mutex<State>

    private struct State {
        var now: Now
        var sources: [String: SourceHealth]
        var database = DatabaseHealth()
        var mqtt: MQTTHealth?
    }

    /// Who is present and the showroom's mood, as of the last committed batch.
    public struct Now: Sendable {
        public var occupancy: Occupancy
        public var gauge: GaugeReading?
    }

    public init(sourceIDs: [String], minGroupSize: Int) {
        state = Mutex(
            State(
                now: Now(occupancy: Occupancy(minGroupSize: minGroupSize)),
                sources: Dictionary(uniqueKeysWithValues: sourceIDs.map { ($0, SourceHealth()) })))
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

    public var now: Now { state.withLock { $0.now } }

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
