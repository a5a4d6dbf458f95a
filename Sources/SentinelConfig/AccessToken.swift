import Foundation
public import SentinelCore

/// Reads the bearer token from the configured file (its first line) or environment variable. Never from the
/// pipeline file, which is shared and versioned. A token file every local user can read is refused, as ssh refuses
/// such a private key: it is no secret (the owner's group may read it, for a service account).
public enum AccessToken {
    /// The first line of `file`, else the environment variable `name`; nil when neither is given. A token shorter
    /// than `minimumLength` is refused.
    public static func load(
        file: String?, environment name: String, key: String = "server.tokenFile", minimumLength: Int = 16
    ) throws(CommandError) -> String? {
        if let file {
            var status = stat()
            if stat(file, &status) == 0, status.st_mode & S_IROTH != 0 {
                throw CommandError(
                    "the token file \(file) (\(key)) is readable by every user (mode "
                        + String(status.st_mode & 0o777, radix: 8) + "): run chmod o-r \(file)")
            }
            guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
                throw CommandError("cannot read the token file \(file) (\(key))")
            }
            let token =
                text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
            guard token.count >= minimumLength else {
                throw CommandError("the token in \(file) is shorter than \(minimumLength) characters")
            }
            return token
        }
        if let token = ProcessInfo.processInfo.environment[name], !token.isEmpty {
            guard token.count >= minimumLength else {
                throw CommandError("the token in $\(name) is shorter than \(minimumLength) characters")
            }
            return token
        }
        return nil
    }
}

/// The bearer tokens a server accepts, one per scope; with none configured (loopback only) every request has the
/// visitor scope.
public struct AccessTokens: Sendable {
    public var visitors: String?
    public var aggregates: String?
    public init(visitors: String? = nil, aggregates: String? = nil) {
        self.visitors = visitors
        self.aggregates = aggregates
    }
    package var isEmpty: Bool { visitors == nil && aggregates == nil }
}
