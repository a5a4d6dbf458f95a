public import SentinelWire
/// What a sample recording really shows: written by the generator beside the video it drew.
public struct GroundTruth: Sendable, Codable, Equatable {
    public var recording: String
    public var width: Int
    public var height: Int
    public var fps: Double
    public var zones: [Zone]
    public var frames: [Frame]
    public var visitors: [Visitor]
    /// Scenery drawn in front of the visitors (pillars), in pixels.
    public var occluders: [Box]?

    public init(
        recording: String, width: Int, height: Int, fps: Double, zones: [Zone], frames: [Frame], visitors: [Visitor],
        occluders: [Box]? = nil
    ) {
        self.recording = recording
        self.width = width
        self.height = height
        self.fps = fps
        self.zones = zones
        self.frames = frames
        self.visitors = visitors
        self.occluders = occluders
    }

    /// A named zone; `polygon` in pixels of this recording.
    public struct Zone: Sendable, Codable, Equatable {
        public var name: String
        public var polygon: Polygon
        public init(name: String, polygon: Polygon) {
            self.name = name
            self.polygon = polygon
        }
    }

    public struct Frame: Sendable, Codable, Equatable {
        public var index: Int
        public var time: MediaTime
        public var faces: [Face]
        public init(index: Int, time: MediaTime, faces: [Face]) {
            self.index = index
            self.time = time
            self.faces = faces
        }
    }

    /// A face as drawn. `visible` is the fraction not hidden by scenery; a face mostly hidden is not
    /// expected to be detected, and evaluation ignores it either way.
    public struct Face: Sendable, Codable, Equatable {
        public var visitor: String
        public var box: Box
        public var visible: Double
        public init(visitor: String, box: Box, visible: Double) {
            self.visitor = visitor
            self.box = box
            self.visible = visible
        }
        public var isOccluded: Bool { visible < 0.5 }
    }

    /// One visit: the first and last frame where at least half the face is visible, and each stay in a zone.
    public struct Visitor: Sendable, Codable, Equatable {
        public var id: String
        public var firstSeen: MediaTime
        public var lastSeen: MediaTime
        public var stays: [Stay]
        public init(id: String, firstSeen: MediaTime, lastSeen: MediaTime, stays: [Stay]) {
            self.id = id
            self.firstSeen = firstSeen
            self.lastSeen = lastSeen
            self.stays = stays
        }
    }

    /// A stay in a zone during a visit, decided by the centre of the face box. `exited` is the first frame outside
    /// again, or the frame after the visit's last.
    public struct Stay: Sendable, Codable, Equatable {
        public var zone: String
        public var entered: MediaTime
        public var exited: MediaTime
        public init(zone: String, entered: MediaTime, exited: MediaTime) {
            self.zone = zone
            self.entered = entered
            self.exited = exited
        }
    }
}
