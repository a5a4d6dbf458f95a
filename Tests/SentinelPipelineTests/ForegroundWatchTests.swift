import Foundation
import SentinelCore
import SentinelPrivacy
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

@testable import SentinelPipeline

@Suite("The empty scene the masks learn")
struct ForegroundWatchTests {
    /// The regions masked beyond the faces found, frame by frame over `seconds` of a picture that never changes (the
    /// sample's background), with a face found at `face` during the first second only.
    func regions(seconds: Double, face: Box?) throws -> [(time: Double, regions: [Box])] {
        var settings = ReviewSettings()
        settings.settleSeconds = 2
        var watch = ForegroundWatch(settings: settings)
        let picture = try Image(contentsOf: Fixtures.photo("640px-IceBlockNearJoekullsarlon.jpg")).resized(
            width: 640, height: 480)
        var made: [(Double, [Box])] = []
        for index in 0..<Int(seconds * 15) {
            let time = Double(index) / 15
            let frame = Frame(index: index, time: MediaTime(seconds: time), image: picture)
            made.append((time, try watch.regions(frame, seen: time < 1 ? face.map { [$0] } ?? [] : [])))
        }
        return made
    }

    @Test(
        "a face found for a second, then holding still and found no more, stays masked past settleSeconds where it was; with no face found the same still picture is learned and nothing is masked"
    )
    func foundOnceStaysMasked() throws {
        // In the middle of the frame, clear of the edge band.
        let face = Box(x: 280, y: 180, width: 80, height: 100)
        let withFace = try regions(seconds: 6, face: face)
        let late = withFace.filter { $0.time >= 5 }
        #expect(late.allSatisfy { frame in frame.regions.contains { ($0.intersection(face)?.area ?? 0) >= face.area } })
        // The edge band, learned in settleSeconds as the rest of the still picture is.
        #expect(late.allSatisfy { $0.regions.count == 1 }, "\(late.last?.regions ?? [])")
        // The control: nothing found, everything learned by then.
        let without = try regions(seconds: 6, face: nil)
        #expect(without.first?.regions.isEmpty == false, "the first frame masks the unlearned band")
        #expect(without.filter { $0.time >= 5 }.allSatisfy { $0.regions.isEmpty })
    }
}
