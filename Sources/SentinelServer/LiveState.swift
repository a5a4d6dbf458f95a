import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelStore

/// What the REST API reports about now: visitors present, zone counts, the latest gauge reading, and the health
/// of every source and of the database. Updated from committed publications only, so it agrees with the store.
public final class LiveState: @unchecked Sendable {
    private let lock = NSLock()
    private var visitors: [String: Data] = [:]
    private var arrival: [String: Int] = [:]
    private var arrivals = 0
    private var occupancy: Occupancy
    private var gauge: GaugeReading?
    private var sources: [String: SourceHealth]
    private var database = DatabaseHealth()
    private let encoder = JSONEncoder.sentinel()

    public init(sourceIDs: [String], minGroupSize: Int) {
        occupancy = Occupancy(minGroupSize: minGroupSize)
        sources = Dictionary(uniqueKeysWithValues: sourceIDs.map { ($0, SourceHealth()) })
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
        lock.withLock {
            for publication in publications {
                switch publication {
                case .visitor(_, let published):
                    let visitor = published.event.visitor
                    occupancy.process(published)
                    if published.event.type == .exited {
                        visitors[visitor.faceId] = nil
                        arrival[visitor.faceId] = nil
                    } else {
                        visitors[visitor.faceId] = (try? encoder.encode(visitor)) ?? Data()
                        if arrival[visitor.faceId] == nil {
                            arrivals += 1
                            arrival[visitor.faceId] = arrivals
                        }
                    }
                case .gauge(let reading):
                    gauge = reading
                }
            }
        }
    }

    /// Visitors present now, as published, in order of arrival.
    public var currentVisitors: [Data] {
        lock.withLock { visitors.sorted { arrival[$0.key]! < arrival[$1.key]! }.map(\.value) }
    }

    public func occupancy(zones: [ZoneID]) -> Occupancy.Snapshot { lock.withLock { occupancy.snapshot(zones: zones) } }

    public var latestGauge: GaugeReading? { lock.withLock { gauge } }

    public var sourceHealth: [String: SourceHealth] { lock.withLock { sources } }

    public var databaseHealth: DatabaseHealth { lock.withLock { database } }

    func updateSource(_ id: String, _ change: (inout SourceHealth) -> Void) {
        lock.withLock { change(&sources[id, default: SourceHealth()]) }
    }

    func updateDatabase(_ change: (inout DatabaseHealth) -> Void) {
        lock.withLock { change(&database) }
    }
}
