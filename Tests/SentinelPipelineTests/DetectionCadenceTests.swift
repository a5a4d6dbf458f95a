import SentinelCore
import Testing

@testable import SentinelPipeline

@Suite("Detection cadence")
struct DetectionCadenceTests {
    /// Which of `frames` frames at `fps` get a detection under `maxFPS`, with the tracker unsure at `unsure`.
    func admitted(maxFPS: Double, fps: Double = 15, frames: Int = 30, unsure: Set<Int> = []) -> [Int] {
        var cadence = DetectionCadence(maxFPS: maxFPS)
        return (0..<frames).filter { cadence.admits(MediaTime(seconds: Double($0) / fps), unsure: unsure.contains($0)) }
    }

    @Test("at most maxFps detections per media second, evenly spread; 0 detects every frame")
    func evenlySpread() {
        #expect(admitted(maxFPS: 5) == Array(stride(from: 0, to: 30, by: 3)))
        #expect(admitted(maxFPS: 0) == Array(0..<30))
    }

    @Test("a frame the tracker is unsure of is detected, and the schedule goes on from it")
    func unsureFramesAreDetected() {
        // Unsure at frames 4 and 5 (a new face to confirm): both detected; the next scheduled one is a period later.
        #expect(admitted(maxFPS: 5, frames: 15, unsure: [4, 5]) == [0, 3, 4, 5, 8, 11, 14])
    }
}
