import Foundation
import GRDB
import SentinelAssembly
import SentinelTestSupport
import Synchronization
import Testing

@testable import SentinelStore

/// CI once saw an SSE client get no byte for 12-18 s under the full suite's load, and it was never reproduced on its
/// own. A resuming client's first bytes were written only after the store told where to resume, and the store's
/// reads wait for one of its few readers (on threads the whole process shares): when they were all busy, the stream
/// was open but silent. The first bytes now go before anything waits on the store.
/// A number tasks of a test share (how many store readers it holds, the most the streams held).
final class SharedCount: Sendable {
    let count = Mutex(0)
}

@Suite("SSE stream: the first bytes", .timeLimit(.minutes(2)))
struct StreamFirstByteTests {
    @Test(
        "with every reader of the store busy, a resuming client gets the head and the retry hint at once, and the events it missed once a reader is free"
    )
    func firstBytesBeforeTheStore() async throws {
        let server = try await TestServer()
        try server.publish(3)
        #expect(try await server.wait { try await server.service.store.logBounds().last == 3 })
        let store = server.service.store
        let readers = store.pool.configuration.maximumReaderCount
        let held = SharedCount()
        let release = DispatchSemaphore(value: 0)
        let holders = (0..<readers).map { _ in
            Task.detached {
                try await store.read { _ in
                    held.count.withLock { $0 += 1 }
                    release.wait()
                }
            }
        }
        #expect(try await server.wait { held.count.withLock { $0 } == readers })
        let connection = try RawConnection(port: server.port)
        connection.send("GET /events HTTP/1.1\r\nHost: localhost\r\nLast-Event-ID: 0\r\n\r\n")
        // At once, but on a loaded machine (the whole suite beside it, two cores) "at once" took more than 3 s: the
        // point is that it comes while every reader is held, so the wait is long and ends with the hint.
        let first = await connection.received(seconds: 20) { String(decoding: $0, as: UTF8.self).contains("retry: ") }
        let firstText = String(decoding: first.data, as: UTF8.self)
        #expect(
            firstText.hasPrefix("HTTP/1.1 200") && firstText.contains("retry: "),
            "while the store was busy: \(firstText)")
        #expect(!firstText.contains("id: "), "no event could be read yet")
        for _ in 0..<readers { release.signal() }
        for holder in holders { try await holder.value }
        let rest = await connection.received(seconds: 3)
        let restText = String(decoding: rest.data, as: UTF8.self)
        #expect(restText.contains("id: 1\n") && restText.contains("id: 3\n"), "\(restText)")
        try await server.stop()
    }
}
