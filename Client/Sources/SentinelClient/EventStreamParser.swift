import Foundation

/// Splits a text/event-stream into messages, as the WHATWG HTML spec's EventSource does: lines end with LF, CR or
/// CRLF (also across chunks), a leading byte-order mark is skipped, fields are `id`, `event`, `data` (several lines
/// joined with LF) and `retry`, and lines starting with `:` are comments. Bytes in, so a UTF-8 character split between
/// two chunks is decoded whole.
///
/// Unlike a browser, it also hands over messages that carry only a comment or a `retry:` (heartbeats and the retry
/// hint are then visible to tests and benches); `SentinelClient` acts on `data` messages only, as EventSource does.
public struct EventStreamParser: Sendable {
    public struct Message: Sendable, Equatable {
        public var id: String?
        public var event: String?
        public var data: String = ""
        public var retry: Int?
        public var comment: String?

        public init(
            id: String? = nil, event: String? = nil, data: String = "", retry: Int? = nil, comment: String? = nil
        ) {
            self.id = id
            self.event = event
            self.data = data
            self.retry = retry
            self.comment = comment
        }
    }

    private var line: [UInt8] = []
    private var afterCR = false
    private var firstLine = true
    private var current = Message()
    private var dataLines: [Substring] = []
    private var hasField = false

    public init() {}

    /// Feeds bytes; returns the messages they completed. Line ends are found with memchr and lines copied whole: a
    /// resumed stream arrives in chunks of thousands of lines, and a byte-at-a-time loop was too slow to keep up in a
    /// debug build.
    public mutating func feed<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> [Message] {
        if let messages = bytes.withContiguousStorageIfAvailable({ feed(UnsafeRawBufferPointer($0)) }) {
            return messages
        }
        return Array(bytes).withUnsafeBytes { feed($0) }
    }

    private mutating func feed(_ buffer: UnsafeRawBufferPointer) -> [Message] {
        guard let base = buffer.baseAddress, !buffer.isEmpty else { return [] }
        let count = buffer.count
        func find(_ byte: UInt8, from start: Int) -> Int {
            memchr(base + start, Int32(byte), count - start).map { $0 - UnsafeMutableRawPointer(mutating: base) }
                ?? count
        }
        var messages: [Message] = []
        var start = 0
        var nextCR = find(UInt8(ascii: "\r"), from: 0)
        while start < count {
            if afterCR {
                afterCR = false
                if buffer[start] == UInt8(ascii: "\n") {
                    start += 1
                    continue
                }
            }
            if nextCR < start { nextCR = find(UInt8(ascii: "\r"), from: start) }
            let end = min(find(UInt8(ascii: "\n"), from: start), nextCR)
            line.append(contentsOf: UnsafeRawBufferPointer(rebasing: buffer[start..<end]))
            guard end < count else { break }
            afterCR = buffer[end] == UInt8(ascii: "\r")
            start = end + 1
            if let message = endLine() { messages.append(message) }
        }
        return messages
    }

    /// Feeds text (tests that write a stream by hand).
    public mutating func feed(_ text: String) -> [Message] { feed(text.utf8) }

    /// Takes the line ended; returns a message when it was the blank line that ends one.
    private mutating func endLine() -> Message? {
        defer { line.removeAll(keepingCapacity: true) }
        if firstLine {
            firstLine = false
            if line.starts(with: [0xEF, 0xBB, 0xBF]) { line.removeFirst(3) }
        }
        guard !line.isEmpty else {
            defer {
                current = Message()
                dataLines = []
                hasField = false
            }
            guard hasField else { return nil }
            var message = current
            message.data = dataLines.joined(separator: "\n")
            return message
        }
        hasField = true
        let text = String(decoding: line, as: UTF8.self)
        if text.hasPrefix(":") {
            current.comment = String(text.dropFirst()).trimmingCharacters(in: .whitespaces)
            return nil
        }
        let colon = text.firstIndex(of: ":") ?? text.endIndex
        var value = colon < text.endIndex ? text[text.index(after: colon)...] : ""
        if value.hasPrefix(" ") { value = value.dropFirst() }
        switch text[..<colon] {
        case "id" where !value.contains("\0"): current.id = String(value)
        case "event": current.event = String(value)
        case "data": dataLines.append(value)
        case "retry" where !value.isEmpty && value.allSatisfy(\.isASCIIDigit): current.retry = Int(value)
        default: break
        }
        return nil
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { isASCII && isNumber }
}
