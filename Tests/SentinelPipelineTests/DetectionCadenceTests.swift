import SentinelCore
import SentinelVision
import SentinelWire
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

@Suite("Motion-gated detection")
struct MotionGateTests {
    static let grey = Color(red: 120, green: 120, blue: 120)
    static let side = 256.0

    func frame(_ index: Int, _ image: Image) -> Frame {
        Frame(index: index, time: MediaTime(seconds: Double(index) / 15), image: image)
    }

    @Test("an empty, still camera is detected whole only every idleSeconds; a change where nobody is, at once")
    func idleCamera() throws {
        var gate = MotionGate(maxFPS: 5, gated: true)
        let still = try Image(width: 640, height: 480, fill: Self.grey)
        var plans: [MotionGate.Plan] = []
        for index in 0..<60 {
            plans.append(try gate.plan(frame(index, still), unsure: [], followed: [], regionSide: Self.side))
        }
        // Four seconds at 15 fps: whole at 0 s and every 2 s, nothing else (at maxFps 5 ungated: 20).
        #expect(plans.indices.filter { plans[$0] == .whole } == [0, 30], "\(plans)")
        #expect(plans.allSatisfy { $0 == .whole || $0 == .none })
        // Someone walks in: detected whole at once, off the schedule.
        let entering = try still.clone()
        try entering.drawEllipse(
            in: Box(x: 20, y: 150, width: 60, height: 80), color: Color(red: 230, green: 190, blue: 160))
        #expect(try gate.plan(frame(61, entering), unsure: [], followed: [], regionSide: Self.side) == .whole)
    }

    @Test(
        "a followed face: its square on the schedule, the whole frame every wholeSeconds, its square every frame while the tracker is unsure of it and its picture changes, on the schedule while it does not"
    )
    func followedFace() throws {
        var gate = MotionGate(maxFPS: 5, gated: true)
        let face = Box(x: 300, y: 100, width: 60, height: 80)
        let image = try Image(width: 640, height: 480, fill: Self.grey)
        try image.drawEllipse(in: face, color: Color(red: 230, green: 190, blue: 160))
        var plans: [MotionGate.Plan] = []
        for index in 0..<30 {
            plans.append(try gate.plan(frame(index, image), unsure: [], followed: [face], regionSide: Self.side))
        }
        let square = MotionGate.Plan.regions([Box(x: 202, y: 12, width: 256, height: 256)])
        #expect(plans.indices.filter { plans[$0] == .whole } == [0, 15], "\(plans)")
        #expect(plans.indices.filter { plans[$0] == square } == [3, 6, 9, 12, 18, 21, 24, 27], "\(plans)")
        // Unsure of the face (missed by the last detection) while its picture holds still: a detection would say
        // what the last one said, so the schedule decides (frame 30 is due, whole after a second; 31 and 32 are not).
        #expect(try gate.plan(frame(30, image), unsure: [face], followed: [face], regionSide: Self.side) == .whole)
        #expect(try gate.plan(frame(31, image), unsure: [face], followed: [face], regionSide: Self.side) == .none)
        #expect(try gate.plan(frame(32, image), unsure: [face], followed: [face], regionSide: Self.side) == .none)
        // The face turns (its picture changes): its square at once, and on every frame it keeps changing.
        let turned = try image.clone()
        try turned.drawRectangle(
            Box(x: 310, y: 110, width: 40, height: 60), color: Color(red: 40, green: 30, blue: 30), thickness: -1)
        #expect(try gate.plan(frame(33, turned), unsure: [face], followed: [face], regionSide: Self.side) == square)
        #expect(try gate.plan(frame(34, image), unsure: [face], followed: [face], regionSide: Self.side) == square)
        // A change beside a face the tracker is sure of, which it explains (its body): the schedule decides.
        #expect(try gate.plan(frame(35, turned), unsure: [], followed: [face], regionSide: Self.side) == .none)
        // A detector that takes whole frames only gets whole frames.
        #expect(try gate.plan(frame(36, turned), unsure: [face], followed: [face], regionSide: nil) == .whole)
        // Ungated, as before: whole frames on the schedule, and every frame while unsure.
        var plain = MotionGate(maxFPS: 5, gated: false)
        #expect(try plain.plan(frame(0, image), unsure: [], followed: [face], regionSide: Self.side) == .whole)
        #expect(try plain.plan(frame(1, image), unsure: [], followed: [face], regionSide: Self.side) == .none)
        #expect(try plain.plan(frame(2, image), unsure: [face], followed: [face], regionSide: Self.side) == .whole)
    }

    @Test(
        "faces close together share a square, a big face gets a bigger one, and squares costing about the whole frame give way to it"
    )
    func squares() throws {
        let frame = frame(0, try Image(width: 640, height: 480))
        let a = Box(x: 100, y: 100, width: 50, height: 60)
        let b = Box(x: 160, y: 110, width: 50, height: 60)
        let far = Box(x: 500, y: 300, width: 50, height: 60)
        #expect(
            MotionGate.regions([a, b], side: Self.side, frame: frame)
                == .regions([Box(x: 27, y: 7, width: 256, height: 256)]))
        #expect(
            MotionGate.regions([a, far], side: Self.side, frame: frame).map {
                if case .regions(let r) = $0 { r.count } else { 0 }
            } == 2)
        let big = Box(x: 200, y: 100, width: 150, height: 180)
        #expect(
            MotionGate.regions([big], side: Self.side, frame: frame)
                == .regions([Box(x: 95, y: 10, width: 360, height: 360)]))
        let spread = [
            Box(x: 10, y: 10, width: 60, height: 60), Box(x: 300, y: 10, width: 60, height: 60),
            Box(x: 570, y: 10, width: 60, height: 60), Box(x: 300, y: 400, width: 60, height: 60),
        ]
        #expect(MotionGate.regions(spread, side: Self.side, frame: frame) == nil)
        #expect(MotionGate.regions([a], side: nil, frame: frame) == nil)
    }
}
