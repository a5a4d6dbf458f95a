import Foundation
public import SentinelWire

/// The rule for every name other names are built from (sources, zones, sites: `source/zone` in filters, `site/source`
/// in a fleet, MQTT topics, the store): letters, digits, `_`, `-` and `.`, starting with a letter or digit, 64 at most.
/// Pipeline files, fleet files and events from outside are all held to it.
public enum Name {
    public static let maxLength = 64
    /// What a refusal says after the name.
    public static let rule = "may hold only letters, digits, _, - and . (and start with a letter or digit, 64 at most)"

    /// Foundation copies the set each time `CharacterSet.alphanumerics` is asked for: asked once here, not per character
    /// of every name in every event a fleet receives.
    private static let alphanumerics = CharacterSet.alphanumerics

    public static func isValid(_ text: some StringProtocol) -> Bool {
        guard let first = text.unicodeScalars.first, alphanumerics.contains(first),
            text.unicodeScalars.count <= maxLength
        else { return false }
        return text.unicodeScalars.allSatisfy { alphanumerics.contains($0) || "_-.".unicodeScalars.contains($0) }
    }
}

/// The one check of a visitor event or gauge reading that comes from outside this process: from a site over MQTT, from
/// the store when a service restarts, from a file. Whatever passes it cannot trap the arithmetic after it (the gauge,
/// occupancy, reports) or carry text that is not a name into a page, a CSV or a log.
public struct EventCheck: Sendable {
    /// Seconds a dwell may exceed the span of its published times: those are rounded down to the privacy policy's
    /// resolution, the dwell is not.
    public var timeSlack: Double

    public init(timeResolution: Double) {
        timeSlack = max(timeResolution, 0) + 0.01
    }

    /// The longest dwell taken, whatever the times say (a month): sums of dwells in reports stay finite.
    public static let maxDwellSeconds = 31 * 86_400.0

    /// A published pseudonym: 16 characters of lowercase base32 (80 bits of an HMAC), or in a fleet `site:` and one.
    public static func isPseudonym(_ text: String) -> Bool {
        let parts = text.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        if parts.count == 2 { return Name.isValid(parts[0]) && isPseudonym(String(parts[1])) }
        return text.utf8.count == 16
            && text.utf8.allSatisfy { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (50...55).contains($0) }
    }

    /// A source id: a name, or in a fleet `site/name`.
    public static func isSourceID(_ text: String) -> Bool {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        return parts.allSatisfy(Name.isValid)
    }

    public func validate(_ event: VisitorEvent) throws(InvalidEvent) {
        let visitor = event.visitor
        guard Self.isPseudonym(visitor.faceId) else {
            throw InvalidEvent(.faceId, "visitor.faceId", "not a pseudonym (16 characters a-z, 2-7)")
        }
        guard Self.isSourceID(visitor.sourceId) else {
            throw InvalidEvent(.name, "visitor.sourceId", "a source id " + Name.rule)
        }
        try name(visitor.zone, "visitor.zone")
        try number(visitor.emotionConfidence, "visitor.emotionConfidence", in: 0...1)
        try number(visitor.valence, "visitor.valence", in: -1...1)
        try number(visitor.detectionScore, "visitor.detectionScore", in: 0...1)
        try number(event.mediaTime, "mediaTime", in: 0...Double.greatestFiniteMagnitude)
        for (label, probability) in visitor.emotionDistribution ?? [:] {
            guard Emotion(rawValue: label) != nil else {
                throw InvalidEvent(.name, "visitor.emotionDistribution", "an expression Sentinel does not know")
            }
            try number(probability, "visitor.emotionDistribution.\(label)", in: 0...1)
        }
        if let box = visitor.box {
            for value in [box.x, box.y, box.width, box.height] {
                try number(value, "visitor.box", in: -1e6...1e6)
            }
        }
        let seen = try span(from: visitor.firstSeen, to: visitor.lastSeen, "visitor.lastSeen")
        try dwell(visitor.dwellSeconds, "visitor.dwellSeconds", within: seen)
        let visitDwell = visitor.dwellSeconds ?? seen
        for (index, zone) in (visitor.zones ?? []).enumerated() {
            try name(zone.zone, "visitor.zones[\(index)].zone")
            try dwell(zone.dwellSeconds, "visitor.zones[\(index)].dwellSeconds", within: visitDwell)
        }
        if let stay = event.stay {
            try name(stay.zone, "stay.zone")
            let stayed = try span(from: stay.enteredAt, to: stay.exitedAt, "stay.exitedAt")
            try dwell(stay.dwellSeconds, "stay.dwellSeconds", within: stayed)
        }
    }

    public func validate(_ reading: GaugeReading) throws(InvalidEvent) {
        try number(reading.windowSeconds, "windowSeconds", in: 0...86_400 * 366)
        try level(reading.overall, "overall")
        for (source, level) in reading.sources {
            guard Self.isSourceID(source) else { throw InvalidEvent(.name, "sources", "a source id " + Name.rule) }
            try self.level(level, "sources.\(source)")
        }
        for (source, zones) in reading.zones {
            guard Self.isSourceID(source) else { throw InvalidEvent(.name, "zones", "a source id " + Name.rule) }
            for (zone, level) in zones {
                try name(zone, "zones.\(source)")
                try self.level(level, "zones.\(source).\(zone)")
            }
        }
    }

    private func level(_ figure: Aggregate<GaugeReading.Level>, _ field: String) throws(InvalidEvent) {
        guard case .value(let level, let visitors) = figure else { return }
        guard (0...100).contains(level.score), visitors >= 0 else {
            throw InvalidEvent(.number, field, "a score outside 0...100 or a negative count")
        }
    }

    private func name(_ text: String?, _ field: String) throws(InvalidEvent) {
        guard let text, !Name.isValid(text) else { return }
        throw InvalidEvent(.name, field, "a name " + Name.rule)
    }

    private func number(_ value: Double?, _ field: String, in range: ClosedRange<Double>) throws(InvalidEvent) {
        guard let value else { return }
        guard value.isFinite, range.contains(value) else {
            throw InvalidEvent(.number, field, "not a finite number in \(range.lowerBound)...\(range.upperBound)")
        }
    }

    /// Seconds from `start` to `end` (unbounded when either is missing); refused when `end` comes first.
    private func span(from start: Date?, to end: Date?, _ field: String) throws(InvalidEvent) -> Double {
        guard let start, let end else { return .infinity }
        let seconds = end.timeIntervalSince(start)
        guard seconds >= 0 else { throw InvalidEvent(.time, field, "earlier than the time it ends a span from") }
        return seconds
    }

    /// A dwell: finite, not negative, and no longer than the span it was measured over.
    private func dwell(_ value: Double?, _ field: String, within span: Double) throws(InvalidEvent) {
        guard let value else { return }
        try number(value, field, in: 0...Self.maxDwellSeconds)
        guard value <= span + timeSlack else {
            throw InvalidEvent(.time, field, "longer than the span of its times")
        }
    }
}
