import Foundation
public import SentinelCore

/// The clock a paced source waits on: the wall clock, or a test's virtual one, so that a test of real-time pacing
/// runs in milliseconds.
public protocol PaceClock: Sendable {
    var now: ContinuousClock.Instant { get }
    /// Blocks the calling thread until `deadline` (a virtual clock jumps there instead).
    func sleep(until deadline: ContinuousClock.Instant)
}

/// The monotonic wall clock; waits block the thread.
public struct WallClock: PaceClock {
    public init() {}
    public var now: ContinuousClock.Instant { ContinuousClock.now }
    public func sleep(until deadline: ContinuousClock.Instant) {
        let wait = deadline - now
        if wait > .zero { Thread.sleep(forTimeInterval: wait.seconds) }
    }
}

/// Holds frames of a recorded source back so that they come out at the chosen pace.
public final class PacedSource: FrameSource {
    public let source: any FrameSource
    public let pacing: Pacing
    public var name: String { source.name }
    public var notes: [SourceNote] { source.notes }
    private let clock: any PaceClock
    private var origin: (wall: ContinuousClock.Instant, media: MediaTime)?

    public init(_ source: any FrameSource, pacing: Pacing, clock: any PaceClock = WallClock()) {
        self.source = source
        self.pacing = pacing
        self.clock = clock
    }

    public func next() throws(VisionError) -> Frame? {
        guard let frame = try source.next() else { return nil }
        guard case .speed(let factor) = pacing else { return frame }
        guard let origin else {
            origin = (clock.now, frame.time)
            return frame
        }
        clock.sleep(until: origin.wall + .seconds((frame.time - origin.media).seconds / factor))
        return frame
    }
}

extension FrameSource {
    /// The source itself, under any pacing: where its declared rate and length live.
    public var unpaced: any FrameSource { (self as? PacedSource)?.source ?? self }
}

extension Duration {
    /// The duration in seconds, as a floating-point number.
    public var seconds: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
