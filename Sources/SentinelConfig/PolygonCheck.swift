import SentinelCore
import SentinelWire

/// Shape checks for zone polygons.
enum PolygonCheck {
    static func problem(with polygon: Polygon) -> String? {
        let v = polygon.vertices
        guard v.count >= 3 else { return "a polygon needs at least 3 points, found \(v.count)" }
        var twiceArea = 0.0
        for i in v.indices {
            let a = v[i]
            let b = v[(i + 1) % v.count]
            twiceArea += a.x * b.y - b.x * a.y
        }
        // Crossing edges first: a bow tie's two halves cancel, so its area is nothing, but that is not what is wrong.
        let n = v.count
        for i in 0..<n {
            for j in (i + 1)..<n where j != i + 1 && !(i == 0 && j == n - 1) {
                if segmentsCross(v[i], v[(i + 1) % n], v[j], v[(j + 1) % n]) {
                    return "self-intersecting polygon: edge \(i + 1) crosses edge \(j + 1)"
                }
            }
        }
        guard abs(twiceArea) > 1e-9 else { return "degenerate polygon: its points enclose no area" }
        return nil
    }

    private static func segmentsCross(_ p1: Point, _ p2: Point, _ q1: Point, _ q2: Point) -> Bool {
        func orientation(_ a: Point, _ b: Point, _ c: Point) -> Double {
            (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
        }
        let d1 = orientation(q1, q2, p1)
        let d2 = orientation(q1, q2, p2)
        let d3 = orientation(p1, p2, q1)
        let d4 = orientation(p1, p2, q2)
        return ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0))
    }
}
