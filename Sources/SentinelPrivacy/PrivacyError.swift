public import SentinelCore

/// A privacy setting that cannot be honoured (an unsafe or unreadable key file). Messages name the file and
/// what is wrong with it, never a key or an identity.
public struct PrivacyError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case keyFile

        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}
