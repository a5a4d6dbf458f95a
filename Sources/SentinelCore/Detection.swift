public import SentinelWire
/// One face found in one frame.
public struct Detection: Hashable, Sendable, Codable {
    public var box: Box
    /// The detector's confidence, 0-1 (see each detector for what it means).
    public var score: Double
    /// Eyes, nose tip and mouth corners where the detector gives them.
    public var landmarks: [Point]

    public init(box: Box, score: Double, landmarks: [Point] = []) {
        self.box = box
        self.score = score
        self.landmarks = landmarks
    }
}
