public import Foundation

/// A point on a media timeline, in whole microseconds so that sums and comparisons are exact.
///
/// Media time comes from the frame (container timestamps, or monotonic capture time for live sources),
/// never from the wall clock. It is encoded as seconds.
public struct MediaTime: Hashable, Comparable, Sendable, Codable, CustomStringConvertible {
    public var microseconds: Int64

    public init(microseconds: Int64) { self.microseconds = microseconds }
    public init(seconds: Double) { self.microseconds = Int64((seconds * 1_000_000).rounded()) }

    /// A time a decoder or a stream reported, or nil when it is not one: not a number, negative, or past 1e9 s
    /// (decoders report nonsense such as -9e15 ms for some inputs, which would overflow).
    public init?(decoderSeconds seconds: Double) {
        guard seconds.isFinite, seconds >= 0, seconds < 1e9 else { return nil }
        self.init(seconds: seconds)
    }

    public static let zero = MediaTime(microseconds: 0)
    public var seconds: Double { Double(microseconds) / 1_000_000 }

    public static func < (a: MediaTime, b: MediaTime) -> Bool { a.microseconds < b.microseconds }
    public static func + (a: MediaTime, b: MediaTime) -> MediaTime {
        MediaTime(microseconds: a.microseconds + b.microseconds)
    }
    public static func - (a: MediaTime, b: MediaTime) -> MediaTime {
        MediaTime(microseconds: a.microseconds - b.microseconds)
    }

    public init(from decoder: any Decoder) throws {
        self.init(seconds: try decoder.singleValueContainer().decode(Double.self))
    }
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(seconds)
    }
    public var description: String { String(format: "%.3fs", seconds) }
}

extension Date {
    /// This date rounded down to a multiple of `step` seconds since the Unix epoch (0 leaves it as it is): how
    /// published times are coarsened.
    public func roundedDown(toMultipleOf step: Double) -> Date {
        guard step > 0 else { return self }
        return Date(timeIntervalSince1970: (timeIntervalSince1970 / step).rounded(.down) * step)
    }
}

extension Double {
    /// These seconds to the millisecond, as every published duration is (12.133334 s is 12.133 s: the digits beyond
    /// are float noise, not a measurement).
    /// A value too large for its milliseconds to be counted (beyond 1e305) is itself: it has no fraction, and
    /// multiplying it would make an infinity that no JSON can carry.
    public var wholeMilliseconds: Double {
        let milliseconds = self * 1_000
        return milliseconds.isFinite ? milliseconds.rounded() / 1_000 : self
    }
}
