public import SentinelWire
/// One face found in one frame.
public struct Detection: Hashable, Sendable, Codable {
    public var box: Box
    /// The detector's confidence, 0-1 (see each detector for what it means).
    public var score: Double
    /// Five points where the detector gives them (none for the cascade), in this order, which every detector keeps
    /// and the emotion crop relies on (`crop.align: eyes` turns the face by the first two): the eye on the image's
    /// left, the other eye, the nose tip, the mouth corner on the image's left, the other corner.
    public var landmarks: [Point]

    public init(box: Box, score: Double, landmarks: [Point] = []) {
        self.box = box
        self.score = score
        self.landmarks = landmarks
    }
}
