/// The one shape of every error Sentinel reports, whatever the module: a code a program can react to, a message a
/// person can act on (it names the file, line, field, device or URL, and never an identity), and the error a
/// library gave underneath, when there was one, for logs.
public protocol SentinelError: Error, Sendable, CustomStringConvertible {
    associatedtype Code: Hashable, Sendable, CustomStringConvertible
    var code: Code { get }
    var message: String { get }
    /// What a library (SQLite, Yams, Foundation) reported; `message` already says what it means here.
    var underlying: (any Error)? { get }
}

extension SentinelError {
    public var underlying: (any Error)? { nil }
    public var description: String { message }
}
