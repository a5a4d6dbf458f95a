import Foundation

/// A strict reader of the XML that label tools write (CVAT, datumaro): elements, attributes, text, comments,
/// processing instructions, CDATA, the five predefined entities and character references, in UTF-8.
///
/// What it does not do is the point: no DTD (a DOCTYPE is refused, so no entity is declared, substituted or loaded,
/// and nothing outside the file is ever opened), no recovery (the first fault ends the read with its line and
/// reason), and bounds on depth, names, values and attributes, so a hostile file costs about its own size: the bytes
/// are read where they lie, never copied whole.
/// Foundation's `XMLDocument` substitutes and loads entities and recovers from errors (libxml2's NOENT and
/// RECOVER); its `XMLParser` recovers too (a truncated file parses "successfully").
struct XMLReader {
    enum Event {
        case start(name: String, attributes: [String: String])
        case end(name: String)
        case text(String)
    }

    struct Fault: Error {
        let line: Int
        let reason: String
    }

    /// How deep elements may nest, how many attributes one element may have (a CVAT box has about ten), and how long
    /// a name, an attribute's value or a run of text may be.
    static let maxDepth = 64
    static let maxAttributes = 256
    static let maxName = 256
    static let maxValue = 1 << 16

    private let bytes: UnsafeBufferPointer<UInt8>
    private var at = 0
    private(set) var line = 1

    private init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// Reads the whole document, handing each event to `visit` in order; the first fault ends the read.
    static func read(_ data: Data, visit: (Event, _ line: Int) throws -> Void) throws {
        try data.withUnsafeBytes { raw in
            var reader = XMLReader(raw.bindMemory(to: UInt8.self))
            try reader.document(visit)
        }
    }

    private mutating func document(_ visit: (Event, Int) throws -> Void) throws {
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { at = 3 }
        if bytes.starts(with: [0xFE, 0xFF]) || bytes.starts(with: [0xFF, 0xFE]) {
            throw fault("UTF-16 is not read: save the file as UTF-8")
        }
        var scalars = bytes[at...].makeIterator()
        var utf8 = UTF8()
        decoding: while true {
            switch utf8.decode(&scalars) {
            case .scalarValue: continue
            case .emptyInput: break decoding
            case .error: throw fault("not UTF-8 text")
            }
        }
        var open: [String] = []
        var sawRoot = false
        while at < bytes.count {
            if peek("<?") {
                at += 2
                let body = try until("?>", what: "processing instruction")
                if body.hasPrefix("xml "), let encoding = Self.pseudoAttribute("encoding", in: body),
                    !["utf-8", "utf8"].contains(encoding.lowercased())
                {
                    throw fault("encoding \(encoding) is not read: save the file as UTF-8")
                }
            } else if peek("<!--") {
                at += 4
                _ = try until("-->", what: "comment")
            } else if peek("<!DOCTYPE") || peek("<!ENTITY") || peek("<!ELEMENT") || peek("<!ATTLIST") {
                throw fault("a DOCTYPE or declaration is refused: label files declare no entities or DTD")
            } else if peek("<![CDATA[") {
                guard !open.isEmpty else { throw fault("CDATA outside the root element") }
                at += 9
                try visit(.text(try until("]]>", what: "CDATA section")), line)
            } else if peek("</") {
                at += 2
                let name = try self.name()
                skipSpace()
                try expect(">")
                guard let last = open.popLast() else { throw fault("</\(name)> closes nothing") }
                guard last == name else { throw fault("</\(name)> closes <\(last)>") }
                try visit(.end(name: name), line)
            } else if peek("<") {
                at += 1
                let elementLine = line
                let name = try self.name()
                guard open.isEmpty ? !sawRoot : true else { throw fault("a second root element <\(name)>") }
                var attributes: [String: String] = [:]
                while true {
                    let spaced = skipSpace()
                    guard at < bytes.count else { throw fault("the file ends inside <\(name)>: truncated?") }
                    if peek("/>") || peek(">") { break }
                    guard spaced else { throw fault("<\(name)>: a space is needed between attributes") }
                    guard attributes.count < Self.maxAttributes else {
                        throw fault("<\(name)> has more than \(Self.maxAttributes) attributes")
                    }
                    let attribute = try self.name()
                    skipSpace()
                    try expect("=")
                    skipSpace()
                    guard at < bytes.count, bytes[at] == UInt8(ascii: "\"") || bytes[at] == UInt8(ascii: "'") else {
                        throw fault("<\(name)>: the value of \(attribute) must be quoted")
                    }
                    let quote = bytes[at]
                    at += 1
                    let value = try characters(upTo: quote, what: "the value of \(attribute)")
                    at += 1
                    guard attributes.updateValue(value, forKey: attribute) == nil else {
                        throw fault("<\(name)>: attribute \(attribute) given twice")
                    }
                }
                sawRoot = true
                if peek("/>") {
                    at += 2
                    try visit(.start(name: name, attributes: attributes), elementLine)
                    try visit(.end(name: name), line)
                } else {
                    at += 1
                    guard open.count < Self.maxDepth else {
                        throw fault("elements nest deeper than \(Self.maxDepth)")
                    }
                    open.append(name)
                    try visit(.start(name: name, attributes: attributes), elementLine)
                }
            } else {
                let textLine = line
                let text = try characters(upTo: UInt8(ascii: "<"), what: "text")
                if open.isEmpty {
                    guard text.allSatisfy({ $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }) else {
                        throw Fault(line: textLine, reason: "text outside the root element: not XML")
                    }
                } else {
                    try visit(.text(text), line)
                }
            }
        }
        if let last = open.last { throw fault("the file ends inside <\(last)>: truncated?") }
        guard sawRoot else { throw fault("no element: empty or not XML") }
    }

    private func fault(_ reason: String) -> Fault { Fault(line: line, reason: reason) }

    private func peek(_ text: StaticString) -> Bool {
        let count = text.utf8CodeUnitCount
        guard at + count <= bytes.count else { return false }
        return text.withUTF8Buffer { $0.elementsEqual(bytes[at..<(at + count)]) }
    }

    private mutating func expect(_ text: StaticString) throws {
        guard peek(text) else { throw fault("\"\(text)\" expected") }
        at += text.utf8CodeUnitCount
    }

    @discardableResult
    private mutating func skipSpace() -> Bool {
        let start = at
        while at < bytes.count, [0x20, 0x09, 0x0A, 0x0D].contains(bytes[at]) {
            if bytes[at] == 0x0A { line += 1 }
            at += 1
        }
        return at > start
    }

    private mutating func name() throws -> String {
        let start = at
        while at < bytes.count, at - start <= Self.maxName {
            let byte = bytes[at]
            let letter =
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":") || byte >= 0x80
            let more =
                (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                || byte == UInt8(ascii: ".")
            guard letter || (at > start && more) else { break }
            at += 1
        }
        guard at > start else { throw fault("a name expected") }
        guard at - start <= Self.maxName else { throw fault("a name longer than \(Self.maxName) bytes") }
        return String(decoding: bytes[start..<at], as: UTF8.self)
    }

    /// Everything up to `terminator` (consumed), verbatim.
    private mutating func until(_ terminator: StaticString, what: String) throws -> String {
        let start = at
        while at < bytes.count, !peek(terminator) {
            if bytes[at] == 0x0A { line += 1 }
            at += 1
            guard at - start <= Self.maxValue else { throw fault("a \(what) longer than \(Self.maxValue) bytes") }
        }
        guard at < bytes.count else { throw fault("the file ends inside a \(what): truncated?") }
        let text = String(decoding: bytes[start..<at], as: UTF8.self)
        at += terminator.utf8CodeUnitCount
        return text
    }

    /// Characters up to (not including) `stop`, with references replaced: `&lt;` `&gt;` `&amp;` `&quot;` `&apos;`
    /// and `&#N;` `&#xH;`; any other `&name;` is an entity nobody declared.
    private mutating func characters(upTo stop: UInt8, what: String) throws -> String {
        var out: [UInt8] = []
        while at < bytes.count, bytes[at] != stop {
            let byte = bytes[at]
            if byte == UInt8(ascii: "<") { throw fault("\"<\" inside \(what)") }
            if byte == 0x0A { line += 1 }
            if byte == UInt8(ascii: "&") {
                out += try reference()
            } else {
                out.append(byte)
                at += 1
            }
            guard out.count <= Self.maxValue else { throw fault("\(what) longer than \(Self.maxValue) bytes") }
        }
        guard at < bytes.count || stop == UInt8(ascii: "<") else {
            throw fault("the file ends inside \(what): truncated?")
        }
        return String(decoding: out, as: UTF8.self)
    }

    private mutating func reference() throws -> [UInt8] {
        let start = at + 1
        var end = start
        while end < bytes.count, end - start < 12, bytes[end] != UInt8(ascii: ";") { end += 1 }
        guard end < bytes.count, bytes[end] == UInt8(ascii: ";") else { throw fault("\"&\" that begins no reference") }
        let name = String(decoding: bytes[start..<end], as: UTF8.self)
        at = end + 1
        switch name {
        case "lt": return [UInt8(ascii: "<")]
        case "gt": return [UInt8(ascii: ">")]
        case "amp": return [UInt8(ascii: "&")]
        case "quot": return [UInt8(ascii: "\"")]
        case "apos": return [UInt8(ascii: "'")]
        default:
            let scalar: UInt32? =
                name.hasPrefix("#x")
                ? UInt32(name.dropFirst(2), radix: 16) : name.hasPrefix("#") ? UInt32(name.dropFirst(), radix: 10) : nil
            guard let scalar, scalar != 0, let character = Unicode.Scalar(scalar) else {
                throw fault(
                    name.hasPrefix("#")
                        ? "&\(name); is not a character" : "entity &\(name); is not declared (and none may be)")
            }
            return Array(String(Character(character)).utf8)
        }
    }

    /// `name="value"` in an XML declaration's text.
    private static func pseudoAttribute(_ name: String, in text: String) -> String? {
        guard let range = text.range(of: name + "=") else { return nil }
        let rest = text[range.upperBound...]
        guard let quote = rest.first, quote == "\"" || quote == "'" else { return nil }
        return rest.dropFirst().prefix { $0 != quote }.description
    }
}
