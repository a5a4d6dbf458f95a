import Foundation
import SentinelWire
import Testing

@Suite("ISO-8601 dates from outside")
struct ISO8601Tests {
    @Test(
        "a UTC date with 0 to 9 fraction digits, or an offset, reads exactly; more digits, fields out of range and February 30th do not"
    )
    func reading() throws {
        let base = try #require(ISO8601.date(from: "2026-11-26T16:59:59Z"))
        #expect(base.timeIntervalSince1970 == 1_795_712_399)
        #expect(ISO8601.date(from: "2026-11-26T16:59:59.250Z")?.timeIntervalSince1970 == 1_795_712_399.25)
        #expect(ISO8601.date(from: "2026-11-26T16:59:59.999999999Z")!.timeIntervalSince(base) > 0.999)
        #expect(ISO8601.date(from: "2026-11-26T17:59:59+01:00") == base)
        #expect(ISO8601.date(from: "2026-11-26T12:29:59.000-04:30") == base)
        for text in [
            // Ten digits and more: what overflowed an Int32 and killed the service and the fleet (issue 44).
            "2026-11-26T16:59:59.9999999999Z", "2026-11-26T16:59:59." + String(repeating: "9", count: 400) + "Z",
            "2026-11-26T16:59:59.Z", "2026-11-26T16:59:59", "2026-11-26T16:59:59+25:00", "2026-11-26T16:59:59+01",
            "2026-02-30T00:00:00Z", "2026-13-01T00:00:00Z", "2026-11-26T24:00:00Z", "2026-11-26T16:59:59ZZ",
            "+2026-11-26T16:59:59Z", "2026-11-26T16:59:59.-5Z", "", "2026-11-26T16:59:5\u{0}Z", "２０２６-11-26T16:59:59Z",
        ] {
            #expect(ISO8601.date(from: text) == nil, "\(text.prefix(60))")
        }
    }

    @Test("what is written reads back to the millisecond")
    func roundTrip() {
        for seconds in [0, 1_795_712_399.25, 4_102_444_799.999, 951_782_400] {
            let date = Date(timeIntervalSince1970: seconds)
            #expect(ISO8601.date(from: ISO8601.string(from: date)) == date)
        }
    }
}
