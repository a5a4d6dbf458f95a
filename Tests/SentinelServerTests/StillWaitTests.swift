import Foundation
import SentinelCore
import Testing

@testable import SentinelRuntime

@Suite("A still's wait: the next frame's, or nothing after the timeout", .timeLimit(.minutes(1)))
struct StillWaitTests {
    static let snapshot = SourceSnapshot(jpeg: [0xFF, 0xD8], width: 2, height: 2, time: 1, masked: 0)

    @Test("a request gets the still the source's next frame gives, and is withdrawn")
    func delivered() async throws {
        let stills = Stills(sources: ["cam"], allowed: true)
        async let asked = stills.still(of: "cam", timeout: .seconds(60))
        // The source's thread sees the request at its next frame.
        while !stills.wanted("cam") { try await Task.sleep(for: .milliseconds(1)) }
        stills.deliver(Self.snapshot, at: Date(timeIntervalSince1970: 5), for: "cam")
        let still = try #require(await asked)
        #expect(still.takenAt == Date(timeIntervalSince1970: 5) && !stills.wanted("cam"))
    }

    @Test("no frame within the timeout: nil, and the request is withdrawn; a cancelled request ends at once")
    func timedOutAndCancelled() async throws {
        let stills = Stills(sources: ["cam"], allowed: true)
        #expect(await stills.still(of: "cam", timeout: .milliseconds(50)) == nil)
        #expect(!stills.wanted("cam"))
        let request = Task { await stills.still(of: "cam", timeout: .seconds(3600)) }
        while !stills.wanted("cam") { try await Task.sleep(for: .milliseconds(1)) }
        request.cancel()
        #expect(await request.value == nil)
        #expect(!stills.wanted("cam"))
        // Unknown or not allowed: nil without waiting.
        #expect(await stills.still(of: "hall", timeout: .seconds(3600)) == nil)
        #expect(await Stills(sources: ["cam"], allowed: false).still(of: "cam", timeout: .seconds(3600)) == nil)
    }
}
