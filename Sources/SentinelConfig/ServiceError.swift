public import SentinelCore

/// A problem that stops `sentinel run` or `sentinel fleet` from starting, said plainly.
public struct ServiceError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case cannotStart
        public var description: String { rawValue }
    }
    public var code: Code { .cannotStart }
    public let message: String
    public init(_ message: String) { self.message = message }
}
