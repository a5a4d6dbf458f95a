/// A command that could not do its work, or a server that cannot start: one line that says what and where, exit
/// status 1, and no usage text. A wrong command line is ArgumentParser's `ValidationError` instead (usage text, exit
/// status 64).
public struct CommandError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case failed
        public var description: String { rawValue }
    }
    public var code: Code { .failed }
    public let message: String

    public init(_ message: String) { self.message = message }
}
