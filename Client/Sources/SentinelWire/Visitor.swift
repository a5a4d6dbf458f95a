import Foundation

/// The seven expressions of the FER2013 emotion model, in its output order: their names on the wire. What each means
/// to the gauge (its valence) is the server's, in SentinelCore.
public enum Emotion: String, Sendable, Codable, CaseIterable {
    case angry, disgust, fear, happy, sad, surprise, neutral
}

/// A visitor's expression as published: one of the model's, or `unknown` while its readings are too few or too unsure
/// (or none are taken, as in a zone that does not measure emotion). JSON: the expression's name, or "unknown".
public enum EmotionLabel: RawRepresentable, Sendable, Hashable, Codable {
    case known(Emotion)
    case unknown

    public init?(rawValue: String) {
        if rawValue == "unknown" {
            self = .unknown
        } else if let emotion = Emotion(rawValue: rawValue) {
            self = .known(emotion)
        } else {
            return nil
        }
    }

    public var rawValue: String {
        switch self {
        case .known(let emotion): emotion.rawValue
        case .unknown: "unknown"
        }
    }

    /// The expression, if one is known.
    public var emotion: Emotion? {
        if case .known(let emotion) = self { emotion } else { nil }
    }
}

/// Where a visit stands: `active` (seen in the last frame), `lost` (not seen, may come back) or `exited`.
public enum VisitState: String, Sendable, Codable, CaseIterable {
    case active, lost, exited
}

/// Why a visit ended, on `visitor.exited`: not seen for the tracker's patience (`lost`), its recording ended
/// (`endOfStream`), the service stopped (`shutdown`), or a crash left it open until the next start (`interrupted`).
public enum ExitReason: String, Sendable, Codable, CaseIterable {
    case lost, endOfStream, shutdown, interrupted
}

/// A visitor: one visit of one face, with where it has been and how it seemed to feel.
///
/// The visitor stage fills every field; the privacy mask (SentinelPrivacy) then replaces `faceId` with a
/// pseudonym and removes every optional field its policy does not allow for the output at hand, so a
/// published record carries only the core fields and the allowed ones. `box` and `detectionScore` are
/// never published by default.
///
/// Times are ISO-8601: the media time of the frame, placed on the wall clock by the source's origin (a
/// recording's start, or when a live source was opened), so replays at any speed give the same records.
public struct VisitorRecord: Sendable, Codable, Equatable {
    /// The visit's id: internal (never leaves the process) until masked, then a rotating pseudonym.
    public var faceId: String
    public var sourceId: String
    /// The zone the visitor is in now (the most recently entered of those it is in), or nil.
    public var zone: String?
    public var state: VisitState
    /// Every zone entered during the visit, with the seconds spent in it so far (re-entries add up).
    public var zones: [ZoneDwell]?
    /// Seconds from first to last seen.
    public var dwellSeconds: Double?
    public var firstSeen: Date?
    public var lastSeen: Date?
    /// The smoothed dominant expression, or unknown while too few or too unsure samples.
    public var emotion: EmotionLabel?
    public var emotionConfidence: Double?
    /// The smoothed probability of each expression (empty while none was measured).
    public var emotionDistribution: [String: Double]?
    /// -1 to 1, from the smoothed distribution (0 while unknown).
    public var valence: Double?
    /// The last detected face box, in pixels of the source's frames.
    public var box: Box?
    /// The detector's score for that box.
    public var detectionScore: Double?

    public struct ZoneDwell: Sendable, Codable, Equatable {
        public var zone: String
        public var dwellSeconds: Double
        public init(zone: String, dwellSeconds: Double) {
            self.zone = zone
            self.dwellSeconds = dwellSeconds
        }
    }

    public init(
        faceId: String, sourceId: String, zone: String?, state: VisitState, zones: [ZoneDwell]? = nil,
        dwellSeconds: Double? = nil,
        firstSeen: Date? = nil, lastSeen: Date? = nil, emotion: EmotionLabel? = nil, emotionConfidence: Double? = nil,
        emotionDistribution: [String: Double]? = nil, valence: Double? = nil, box: Box? = nil,
        detectionScore: Double? = nil
    ) {
        self.faceId = faceId
        self.sourceId = sourceId
        self.zone = zone
        self.state = state
        self.zones = zones
        self.dwellSeconds = dwellSeconds
        self.firstSeen = firstSeen
        self.lastSeen = lastSeen
        self.emotion = emotion
        self.emotionConfidence = emotionConfidence
        self.emotionDistribution = emotionDistribution
        self.valence = valence
        self.box = box
        self.detectionScore = detectionScore
    }
}

/// Something that happened to a visitor.
public struct VisitorEvent: Sendable, Codable, Equatable {
    public enum Kind: String, Sendable, Codable, CaseIterable {
        case entered = "visitor.entered"
        case zoneEntered = "visitor.zoneEntered"
        case zoneExited = "visitor.zoneExited"
        case updated = "visitor.updated"
        case exited = "visitor.exited"
    }

    /// One stay in a zone; `exitedAt` and `dwellSeconds` are final on `visitor.zoneExited`.
    public struct Stay: Sendable, Codable, Equatable {
        public var zone: String
        public var enteredAt: Date
        public var exitedAt: Date?
        public var dwellSeconds: Double?
        public init(zone: String, enteredAt: Date, exitedAt: Date? = nil, dwellSeconds: Double? = nil) {
            self.zone = zone
            self.enteredAt = enteredAt
            self.exitedAt = exitedAt
            self.dwellSeconds = dwellSeconds
        }
    }

    public var type: Kind
    /// When it happened (media time on the wall clock, as for the record's times).
    public var time: Date
    public var visitor: VisitorRecord
    /// The stay, on zone events.
    public var stay: Stay?
    /// Why the visit ended, on `visitor.exited`.
    public var reason: ExitReason?
    /// Seconds into the source (joinable with its footage, so not published by default).
    public var mediaTime: Double?

    public init(
        type: Kind, time: Date, visitor: VisitorRecord, stay: Stay? = nil, reason: ExitReason? = nil,
        mediaTime: Double? = nil
    ) {
        self.type = type
        self.time = time
        self.visitor = visitor
        self.stay = stay
        self.reason = reason
        self.mediaTime = mediaTime
    }
}

extension JSONEncoder {
    /// Sentinel's JSON: ISO-8601 dates with milliseconds, keys sorted so that outputs compare byte for byte.
    public static func sentinel() -> JSONEncoder {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .custom { date, encoder in
            var container = encoder.singleValueContainer()
            try container.encode(ISO8601.string(from: date))
        }
        return encoder
    }
}

extension JSONDecoder {
    public static func sentinel() -> JSONDecoder {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .custom { decoder in
            let text = try decoder.singleValueContainer().decode(String.self)
            guard let date = ISO8601.date(from: text) else {
                throw DecodingError.dataCorrupted(
                    .init(codingPath: decoder.codingPath, debugDescription: "not an ISO-8601 date: \(text)"))
            }
            return date
        }
        return decoder
    }
}

/// ISO-8601 in UTC with milliseconds, e.g. 2026-11-21T10:00:01.250Z.
///
/// Written and read by hand (every event carries several dates, and a Foundation formatter costs more to make than the
/// rest of the event to encode). Read: `YYYY-MM-DDTHH:MM:SS`, an optional fraction of 1 to 9 digits, then `Z` or an
/// offset `±HH:MM`; anything else, or a field out of range, is not a date. Text from outside (query strings, MQTT
/// envelopes, files) comes through here: every length and value is checked before it is used.
public enum ISO8601 {
    public static func string(from date: Date) -> String {
        let millis = Int64((date.timeIntervalSince1970 * 1000).rounded())
        let fraction = ((millis % 1000) + 1000) % 1000
        var seconds = time_t((millis - fraction) / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func digits(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return digits(parts.tm_year + 1900, 4) + "-" + digits(parts.tm_mon + 1, 2) + "-" + digits(parts.tm_mday, 2)
            + "T" + digits(parts.tm_hour, 2) + ":" + digits(parts.tm_min, 2) + ":" + digits(parts.tm_sec, 2) + "."
            + digits(Int32(fraction), 3) + "Z"
    }

    /// The date `text` names, or nil.
    public static func date(from text: String) -> Date? {
        let bytes = Array(text.utf8)
        // The longest form: 19 + 10 (fraction) + 6 (offset).
        guard bytes.count >= 20, bytes.count <= 35, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"),
            bytes[10] == UInt8(ascii: "T") || bytes[10] == UInt8(ascii: "t"), bytes[13] == UInt8(ascii: ":"),
            bytes[16] == UInt8(ascii: ":")
        else { return nil }
        /// The decimal number in `range`, of at most 9 digits (so it fits an Int32 whatever they are).
        func number(_ range: Range<Int>) -> Int32? {
            guard !range.isEmpty, range.count <= 9, range.upperBound <= bytes.count else { return nil }
            var value: Int32 = 0
            for byte in bytes[range] {
                guard (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) else { return nil }
                value = value * 10 + Int32(byte - UInt8(ascii: "0"))
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
            let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
            (1...12).contains(month), (1...31).contains(day), hour < 24, minute < 60, second < 61
        else { return nil }
        var end = 19
        var fraction = 0.0
        if bytes[19] == UInt8(ascii: ".") {
            end = 20
            while end < bytes.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(bytes[end]) { end += 1 }
            guard let digits = number(20..<end) else { return nil }
            fraction = Double(digits) / pow(10, Double(end - 20))
        }
        var offset = 0
        switch bytes.count - end {
        case 1:
            guard bytes[end] == UInt8(ascii: "Z") || bytes[end] == UInt8(ascii: "z") else { return nil }
        case 6:
            let sign = bytes[end]
            guard sign == UInt8(ascii: "+") || sign == UInt8(ascii: "-"), bytes[end + 3] == UInt8(ascii: ":"),
                let hours = number((end + 1)..<(end + 3)), let minutes = number((end + 4)..<(end + 6)),
                hours < 24, minutes < 60
            else { return nil }
            offset = (Int(hours) * 3600 + Int(minutes) * 60) * (sign == UInt8(ascii: "+") ? 1 : -1)
        default:
            return nil
        }
        var parts = tm()
        parts.tm_year = year - 1900
        parts.tm_mon = month - 1
        parts.tm_mday = day
        parts.tm_hour = hour
        parts.tm_min = minute
        parts.tm_sec = second
        let seconds = timegm(&parts)
        // timegm normalises out-of-range days (February 30th becomes March 2nd): such a date is not valid.
        guard parts.tm_mday == day, parts.tm_mon == month - 1 else { return nil }
        return Date(timeIntervalSince1970: Double(seconds - offset) + fraction)
    }
}
