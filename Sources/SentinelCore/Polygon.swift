public import SentinelWire
/// A closed polygon. Its vertices are in order; the last connects back to the first.
public struct Polygon: Hashable, Sendable, Codable {
    public var vertices: [Point]
    public init(_ vertices: [Point]) { self.vertices = vertices }

    /// Whether `point` lies inside (even-odd rule; points on an edge may go either way).
    public func contains(_ point: Point) -> Bool {
        var inside = false
        var j = vertices.count - 1
        for i in vertices.indices {
            let a = vertices[i]
            let b = vertices[j]
            if (a.y > point.y) != (b.y > point.y),
                point.x < (b.x - a.x) * (point.y - a.y) / (b.y - a.y) + a.x
            {
                inside.toggle()
            }
            j = i
        }
        return inside
    }

    /// The polygon with each vertex multiplied by a frame size (normalized to pixels).
    public func scaled(width: Double, height: Double) -> Polygon {
        Polygon(vertices.map { Point(x: $0.x * width, y: $0.y * height) })
    }
}

/// How a face is hidden in an image.
public enum MaskStyle: String, Sendable, Codable, CaseIterable {
    case blur, pixelate, solid
}
