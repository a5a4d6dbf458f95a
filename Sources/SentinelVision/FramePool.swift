import Synchronization

/// One budget, in bytes of image, for the frames every camera of a box holds for analysis beyond its own few. A
/// capture edge given a pool keeps `CaptureEdge.ownFrames` frames whatever the others do (no camera starves), and
/// draws from the pool for each further frame up to its capacity; with the pool spent it drops its own oldest frame,
/// as without one. A frame analysed gives its place back. So a burst on every camera at once (a group walking in front
/// of all of them) is carried for as long as the budget lasts, and the memory it takes is bounded for the box, not per
/// camera.
public final class FramePool: Sendable {
    /// The budget.
    public let bytes: Int
    private let state = Mutex((used: 0, most: 0))

    /// `sentinel run`'s: 256 MB, six frames beyond their own for each of 48 cameras of 640x480 or 15 of 1280x720.
    public static let runBytes = 256 << 20

    public init(bytes: Int) {
        precondition(bytes >= 0, "a pool of no bytes at least")
        self.bytes = bytes
    }

    /// What is drawn now, and the most ever drawn at once.
    public var used: (now: Int, most: Int) { state.withLock { ($0.used, $0.most) } }

    /// Draws `count` bytes; false, drawing nothing, when fewer are left.
    func draw(_ count: Int) -> Bool {
        state.withLock { state in
            guard state.used + count <= bytes else { return false }
            state.used += count
            state.most = max(state.most, state.used)
            return true
        }
    }

    func giveBack(_ count: Int) { state.withLock { $0.used -= count } }
}
