/// A privacy setting that cannot be honoured (an unsafe or unreadable key file). Messages name the file and
/// what is wrong with it, never a key or an identity.
public struct PrivacyError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        case keyFile
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
