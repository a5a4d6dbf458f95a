import Foundation

/// A figure computed over a group of visitors, published only when the group is large enough that nobody can
/// be singled out. JSON: `{"value": ..., "visitors": n}`, or `{"suppressed": true}` with no value and no count.
public enum Aggregate<Value: Sendable & Equatable & Codable>: Sendable, Equatable, Codable {
    case value(Value, visitors: Int)
    case suppressed

    /// `value` over `visitors` distinct visitors, or suppressed when they are fewer than `minGroupSize`.
    public init(_ value: Value, visitors: Int, minGroupSize: Int) {
        self = visitors >= minGroupSize ? .value(value, visitors: visitors) : .suppressed
    }

    public var value: Value? {
        if case .value(let value, _) = self { value } else { nil }
    }

    private enum Keys: String, CodingKey {
        case value, visitors, suppressed
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Keys.self)
        switch self {
        case .value(let value, let visitors):
            try container.encode(value, forKey: .value)
            try container.encode(visitors, forKey: .visitors)
        case .suppressed:
            try container.encode(true, forKey: .suppressed)
        }
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Keys.self)
        if try container.decodeIfPresent(Bool.self, forKey: .suppressed) == true {
            self = .suppressed
        } else {
            self = .value(
                try container.decode(Value.self, forKey: .value),
                visitors: try container.decode(Int.self, forKey: .visitors))
        }
    }
}
