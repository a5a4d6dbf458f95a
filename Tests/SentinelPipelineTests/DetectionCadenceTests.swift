import SentinelCore
import SentinelVision
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

    @Test(
        "between two detections, a change no followed visitor explains (someone coming in) asks for a detection; a visitor's own motion, its body below it, and a camera's noise do not"
    )
    func changeWhereNoVisitorIs() throws {
        let grey = Color(red: 120, green: 120, blue: 120)
        let detected = try Image(width: 640, height: 480, fill: grey)
        func changed(_ image: Image, visitors: [Box], since watch: ChangeWatch) throws -> Bool {
            try watch.changed(ChangeWatch.thumbnail(of: image), width: 640, height: 480, visitors: visitors)
        }
        var watch = ChangeWatch()
        #expect(try changed(detected, visitors: [], since: watch), "nothing detected yet to compare with")
        watch.detected(try ChangeWatch.thumbnail(of: detected))
        #expect(try !changed(detected, visitors: [], since: watch))
        // A visitor walked on: its face where the tracker predicts it, its body below.
        let face = Box(x: 300, y: 100, width: 60, height: 80)
        let walked = try detected.clone()
        try walked.drawEllipse(in: face, color: Color(red: 230, green: 190, blue: 160))
        try walked.drawRectangle(
            Box(x: 285, y: 185, width: 90, height: 295), color: Color(red: 40, green: 60, blue: 150), thickness: -1)
        #expect(try !changed(walked, visitors: [face], since: watch))
        #expect(try changed(walked, visitors: [], since: watch))
        // Someone coming in at the left edge, beside that visitor.
        let entering = try walked.clone()
        try entering.drawEllipse(
            in: Box(x: -20, y: 150, width: 60, height: 80), color: Color(red: 230, green: 190, blue: 160))
        #expect(try changed(entering, visitors: [face], since: watch))
        // The whole picture a little brighter (exposure, noise): below the threshold.
        let brighter = try Image(width: 640, height: 480, fill: Color(red: 132, green: 132, blue: 132))
        #expect(try !changed(brighter, visitors: [], since: watch))
    }
}
