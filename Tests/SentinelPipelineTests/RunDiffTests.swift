import Foundation
import SentinelWire
import Testing

@testable import SentinelTuning

@Suite("sentinel diff: the zone time two visits share")
struct RunDiffTests {
    @Test(
        "the walk over both visits' stay edges gives the sum over every pair of stays in one zone (nested, repeated, zero-length and open stays too)"
    )
    func zoneOverlapIsThePairwiseSum() {
        var state: UInt64 = 88_172_645_463_325_252
        func next(_ bound: Int) -> Int {
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return Int(state % UInt64(bound))
        }
        let origin = Date(timeIntervalSince1970: 1_800_000_000)
        func visit() -> RunDiff.Visit {
            var visit = RunDiff.Visit(
                faceId: "v", sourceId: "cam", firstSeen: origin, lastSeen: origin.addingTimeInterval(200), dwell: 0,
                zones: [])
            for _ in 0..<(1 + next(40)) {
                let entered = origin.addingTimeInterval(Double(next(180)) + Double(next(10)) / 10)
                let exited = next(8) == 0 ? nil : entered.addingTimeInterval(Double(next(30)) / 2)
                visit.stays.append((["door", "counter", "display"][next(3)], entered, exited))
            }
            return visit
        }
        for _ in 0..<200 {
            let (x, y) = (visit(), visit())
            var pairwise = 0.0
            for p in x.stays {
                for q in y.stays where p.zone == q.zone {
                    let end = min(p.exited ?? x.lastSeen, q.exited ?? y.lastSeen).addingTimeInterval(1)
                    pairwise += max(0, end.timeIntervalSince(max(p.entered, q.entered)))
                }
            }
            let walked = RunDiff.zoneOverlap(RunDiff.edges(x), RunDiff.edges(y))
            #expect(abs(walked - pairwise) < 1e-4, "\(walked) against \(pairwise)")
        }
    }
}
