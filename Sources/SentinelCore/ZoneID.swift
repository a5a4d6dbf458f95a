/// A zone as the box knows it: its camera and its name. Two cameras may each have an `entrance`; they are two zones.
public struct ZoneID: Hashable, Sendable, Codable, Comparable, CustomStringConvertible {
    public var sourceId: String
    public var name: String

    public init(sourceId: String, name: String) {
        self.sourceId = sourceId
        self.name = name
    }

    /// `source/name`, as SSE filters and logs write it.
    public var description: String { "\(sourceId)/\(name)" }

    public static func < (a: ZoneID, b: ZoneID) -> Bool { (a.sourceId, a.name) < (b.sourceId, b.name) }
}
