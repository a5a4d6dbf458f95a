import Foundation
public import SentinelCore
public import SentinelPrivacy
import SentinelStore
public import SentinelWire
import Synchronization

/// What the REST API reports about now, each part written by its one owner: who is present and the latest gauge
/// reading by the store writer (from committed log entries only, so it agrees with the store), each source's
/// health by that source, the database's by the writer, the MQTT output's by that output; in a fleet, the sources
/// and zones known and each site's state by the fleet's ingest.
public final class LiveState: Sendable {
    private let state: Mutex<State>
    /// Each running camera's masked still, made by that source when asked.
    public let stills: Stills

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
        public var zones: [LiveState.Zone]

        package init(sources: [String], zones: [LiveState.Zone]) {
            self.sources = sources
            self.zones = zones
        }
    }

    /// A zone as the API lists it.
    public struct Zone: Sendable {
        public var id: ZoneID
        /// False where emotion is not measured (staff areas).
        public var emotion: Bool
        /// The polygon as the pipeline file writes it, `[x, y]` points in `units` (`normalized` fractions of the frame
        /// or `pixels`); nil where it is not known (a fleet learns zones from events).
        public var polygon: [[Double]]?
        public var units: PolygonUnits?

        public init(id: ZoneID, emotion: Bool, polygon: Polygon? = nil, units: PolygonUnits = .normalized) {
            self.id = id
            self.emotion = emotion
            self.polygon = polygon?.vertices.map { [$0.x, $0.y] }
            self.units = polygon == nil ? nil : units
        }
    }

    /// Who is present and the showroom's mood, as of the last committed batch.
    public struct Now: Sendable {
        public var occupancy: Occupancy
        public var gauge: GaugeReading?
    }

    /// `running` are the sources this process runs (their health is reported, and their stills shown where `stills`
    /// allows); `catalogue` every source and zone the API knows.
    public init(running: [String], catalogue: Catalogue, aggregation: Aggregation, stills: Bool = false) {
        self.stills = Stills(sources: running, allowed: stills)
        state = Mutex(
            State(
                now: Now(occupancy: aggregation.occupancy()),
                sources: Dictionary(uniqueKeysWithValues: running.map { ($0, SourceHealth()) }), catalogue: catalogue))
    }

    public var now: Now { state.withLock { $0.now } }

    public var catalogue: Catalogue { state.withLock { $0.catalogue } }

    package func updateCatalogue(_ change: (inout Catalogue) -> Void) { state.withLock { change(&$0.catalogue) } }

    public var fleetHealth: FleetHealth? { state.withLock { $0.fleet } }

    package func updateFleet(_ health: FleetHealth) { state.withLock { $0.fleet = health } }

    /// Who is present and the latest reading after a committed batch. Changed in place: a copy kept between batches
    /// would make each batch copy every visitor present.
    func commit(_ events: [MaskedEvent], gauge: GaugeReading?) {
        state.withLock { state in
            for event in events { state.now.occupancy.process(event) }
            if let gauge { state.now.gauge = gauge }
        }
    }

    public var sourceHealth: [String: SourceHealth] { state.withLock { $0.sources } }

    public var databaseHealth: DatabaseHealth { state.withLock { $0.database } }

    func updateSource(_ id: String, _ change: (inout SourceHealth) -> Void) {
        state.withLock { change(&$0.sources[id, default: SourceHealth()]) }
    }

    public var mqttHealth: MQTTHealth? { state.withLock { $0.mqtt } }

    package func updateMQTT(_ health: MQTTHealth) { state.withLock { $0.mqtt = health } }

    func updateDatabase(_ change: (inout DatabaseHealth) -> Void) {
        state.withLock { change(&$0.database) }
    }
}
