/// A point in pixels (or in normalized 0-1 coordinates where a type says so).
public struct Point: Hashable, Sendable, Codable {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
}

/// What a zone's polygon is measured in: `normalized` fractions of the frame (0-1) or `pixels` of it.
public enum PolygonUnits: String, Hashable, Sendable, Codable, CaseIterable {
    case normalized, pixels
}

/// An axis-aligned rectangle, top-left origin, in pixels of the frame it belongs to.
public struct Box: Hashable, Sendable, Codable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }

    public var area: Double { max(0, width) * max(0, height) }
    public var center: Point { Point(x: x + width / 2, y: y + height / 2) }
    public var maxX: Double { x + width }
    public var maxY: Double { y + height }

    /// The smallest box holding both.
    public func union(_ other: Box) -> Box {
        let x1 = min(x, other.x)
        let y1 = min(y, other.y)
        return Box(x: x1, y: y1, width: max(maxX, other.maxX) - x1, height: max(maxY, other.maxY) - y1)
    }

    public func intersection(_ other: Box) -> Box? {
        let x1 = max(x, other.x)
        let y1 = max(y, other.y)
        let x2 = min(maxX, other.maxX)
        let y2 = min(maxY, other.maxY)
        guard x2 > x1, y2 > y1 else { return nil }
        return Box(x: x1, y: y1, width: x2 - x1, height: y2 - y1)
    }

    /// Intersection over union, 0 when the boxes do not overlap.
    public func iou(_ other: Box) -> Double {
        guard let overlap = intersection(other) else { return 0 }
        let union = area + other.area - overlap.area
        return union > 0 ? overlap.area / union : 0
    }
}
