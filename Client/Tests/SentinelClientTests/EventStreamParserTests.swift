import Foundation
import SentinelClient
import Testing

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite("SSE parsing")
struct EventStreamParserTests {
    @Test(
        "line endings LF, CR and CRLF, also split between chunks; a byte-order mark; multi-line data; a UTF-8 character split between chunks; comments and retry"
    )
    func spec() {
        var parser = EventStreamParser()
        let text = Array("\u{FEFF}retry: 1500\r\n\r\n: hi\n\nid: 7\revent: x\r\ndata: a\ndata: é\n\ndata:b\r\r".utf8)
        var messages: [EventStreamParser.Message] = []
        // One byte at a time: every boundary is a chunk boundary.
        for byte in text { messages += parser.feed([byte]) }
        var whole = EventStreamParser()
        #expect(whole.feed(text) == messages)
        #expect(
            messages == [
                .init(retry: 1500), .init(comment: "hi"), .init(id: "7", event: "x", data: "a\né"), .init(data: "b"),
            ])
    }
}
