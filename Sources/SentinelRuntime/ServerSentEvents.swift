import Foundation
import SentinelCore
public import SentinelStore
public import SentinelWire

/// The wire format of `GET /events` (text/event-stream, per the WHATWG HTML spec's server-sent events), and the
/// envelope its messages carry, which MQTT carries too.
///
/// Each logged event is one message: `id:` the log id, `event:` its type, `data:` one line of JSON, the envelope
/// `{id, sequenceNumber, streamId, payloadType, payload, timestamp}`, so a native client decodes it with a plain
/// Codable struct. Control messages (`stream.reset`, `stream.cutoff`) carry no `id:`, so they leave the client's
/// last event id where it was.
public enum ServerSentEvents {
    public static func message(for event: LoggedEvent) -> String {
        "id: \(event.id)\nevent: \(event.type)\ndata: \(envelope(for: event))\n\n"
    }

    /// The envelope as one line of JSON (also the body of an MQTT message, with the site added).
    public static func envelope(for event: LoggedEvent) -> String {
        let payload = String(decoding: event.payload, as: UTF8.self)
        return """
            {"id":\(event.id),"payload":\(payload),"payloadType":\(quoted(event.type.rawValue)),"sequenceNumber":\(event.sequenceNumber),\
            "streamId":\(quoted(event.streamId)),"timestamp":"\(ISO8601.string(from: event.time))"}
            """
    }

    /// The envelope with the site that logged the event first: an MQTT message's body.
    public static func envelope(for event: LoggedEvent, site: String) -> String {
        "{\"site\":\(quoted(site)),\(envelope(for: event).dropFirst())"
    }

    /// A control message (`StreamNotice.resetType` or `cutoffType`), without an id.
    public static func control(_ type: String, _ notice: StreamNotice) -> String {
        let data = (try? JSONEncoder.sentinel().encode(notice)).map { String(decoding: $0, as: UTF8.self) } ?? "{}"
        return "event: \(type)\ndata: \(data)\n\n"
    }

    public static func retry(milliseconds: Int) -> String { "retry: \(milliseconds)\n\n" }

    public static let heartbeat = ": heartbeat\n\n"

    /// A JSON string literal (RFC 8259: quote, backslash and control characters escaped). Written by hand: it runs
    /// twice per event, and a resuming client is sent tens of thousands of events a second.
    package static func quoted(_ text: String) -> String {
        var out = "\""
        out.reserveCapacity(text.utf8.count + 2)
        for scalar in text.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: out.unicodeScalars.append(scalar)
            }
        }
        return out + "\""
    }
}
