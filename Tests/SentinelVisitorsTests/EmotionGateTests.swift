import SentinelCore
import SentinelVisitors
import SentinelWire
import Testing

@Suite("Emotion gate: only a face that can be read is read")
struct EmotionGateTests {
    let settings = EmotionSettings()

    /// A face of `side` pixels at (x, y), its eyes level and its nose `noseAt` of the way from the left eye to the right.
    func face(x: Double = 100, y: Double = 100, side: Double = 80, score: Double = 0.9, noseAt: Double = 0.5)
        -> Detection
    {
        let left = Point(x: x + side * 0.3, y: y + side * 0.4)
        let right = Point(x: x + side * 0.7, y: y + side * 0.4)
        let nose = Point(x: left.x + (right.x - left.x) * noseAt, y: y + side * 0.6)
        let mouth = [Point(x: x + side * 0.35, y: y + side * 0.8), Point(x: x + side * 0.65, y: y + side * 0.8)]
        return Detection(
            box: Box(x: x, y: y, width: side, height: side), score: score, landmarks: [left, right, nose] + mouth)
    }

    func why(_ detection: Detection, sharpness: Double = 0.5) -> EmotionSettings.Unreadable? {
        settings.unreadable(detection, width: 640, height: 360, sharpness: { sharpness })
    }

    @Test("each reason, in the order checked; a face that passes all is read")
    func reasons() {
        #expect(why(face()) == nil)
        #expect(why(face(side: 40)) == .small)
        #expect(why(face(score: 0.5)) == .weak)
        #expect(why(face(noseAt: 0.1)) == .turned)
        #expect(why(face(noseAt: 1.3)) == .turned)
        #expect(why(face(), sharpness: 0.05) == .blurred)
        // The box past the edge but the eyes, nose and mouth in view (a tight crop) is read; an eye outside is cut.
        #expect(why(face(x: 600, side: 100)) == .cut)
        #expect(why(face(x: -10, side: 100)) == nil)
        // A face too small is not asked for its sharpness (the picture's cost is paid only when needed).
        var asked = false
        _ = settings.unreadable(
            face(side: 40), width: 640, height: 360,
            sharpness: {
                asked = true
                return 1
            })
        #expect(!asked)
        // Without landmarks (the cascade): frontal cannot be told, a box a tenth outside the frame is cut.
        let bare = Detection(box: Box(x: 100, y: 100, width: 80, height: 80), score: 0.9)
        #expect(why(bare) == nil)
        #expect(why(Detection(box: Box(x: -20, y: 100, width: 80, height: 80), score: 0.9)) == .cut)
        // 0 turns a check off.
        var all = EmotionSettings()
        all.minFrontal = 0
        all.minSharpness = 0
        #expect(all.unreadable(face(noseAt: 0), width: 640, height: 360, sharpness: { 0 }) == nil)
    }

    @Test("frontal: 1 with the nose between the eyes, 0 over an eye or beyond, whatever the roll")
    func frontal() throws {
        #expect(EmotionSettings.frontal(face().landmarks) == 1)
        #expect(try #require(EmotionSettings.frontal(face(noseAt: 0.25).landmarks)) == 0.5)
        #expect(EmotionSettings.frontal(face(noseAt: 0).landmarks) == 0)
        #expect(EmotionSettings.frontal(face(noseAt: -0.5).landmarks) == 0)
        // Turned in the picture's plane by 90 degrees: the eyes one above the other, the nose between them.
        let rolled = [Point(x: 100, y: 100), Point(x: 100, y: 140), Point(x: 120, y: 120)]
        #expect(EmotionSettings.frontal(rolled) == 1)
        #expect(EmotionSettings.frontal([]) == nil)
    }
}
