import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelStore
import Synchronization

/// What the REST API reports about now: visitors present, zone counts, the latest gauge reading, and the health
/// of every source and of the database. Updated from committed publications only, so it agrees with the store.
public final class LiveState: Sendable {
    private let state: Mutex<State>

    private struct State {
        var visitors: [String: Data] = [:]
        var arrival: [String: Int] = [:]
        var arrivals = 0
        var occupancy: Occupancy
        var gauge: GaugeReading?
        var sources: [String: SourceHealth]
        var database = DatabaseHealth()
        /// Made once: encoding runs on every committed batch.
        let encoder = JSONEncoder.sentinel()
    }

    public init(sourceIDs: [String], minGroupSize: Int) {
        state = Mutex(
            State(
                occupancy: Occupancy(minGroupSize: minGroupSize),
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

    func apply(_ publications: [Publication]) {
        state.withLock { state in
            for publication in publications {
                switch publication {
                case .visitor(_, let published):
                    let visitor = published.event.visitor
                    state.occupancy.process(published)
                    if published.event.type == .exited {
                        state.visitors[visitor.faceId] = nil
                        state.arrival[visitor.faceId] = nil
                    } else {
                        state.visitors[visitor.faceId] = (try? state.encoder.encode(visitor)) ?? Data()
                        if state.arrival[visitor.faceId] == nil {
                            state.arrivals += 1
                            state.arrival[visitor.faceId] = state.arrivals
                        }
                    }
                case .gauge(let reading):
                    state.gauge = reading
                }
            }
        }
    }

    /// Visitors present now, as published, in order of arrival.
    public var currentVisitors: [Data] {
        state.withLock { state in state.visitors.sorted { state.arrival[$0.key]! < state.arrival[$1.key]! }.map(\.value)
        }
    }

    public func occupancy(zones: [ZoneID]) -> Occupancy.Snapshot {
        state.withLock { $0.occupancy.snapshot(zones: zones) }
    }

    public var latestGauge: GaugeReading? { state.withLock { $0.gauge } }

    public var sourceHealth: [String: SourceHealth] { state.withLock { $0.sources } }

    public var databaseHealth: DatabaseHealth { state.withLock { $0.database } }

    func updateSource(_ id: String, _ change: (inout SourceHealth) -> Void) {
        state.withLock { change(&$0.sources[id, default: SourceHealth()]) }
    }

    func updateDatabase(_ change: (inout DatabaseHealth) -> Void) {
        state.withLock { change(&$0.database) }
    }
}
