import ArgumentParser
import SentinelCore

/// A command that could not do its work: one line that says what and where, exit status 1, and no usage text. A
/// wrong command line is a `ValidationError` instead (usage text, exit status 64).
package struct CommandError: SentinelError {
    package enum Code: String, Sendable, CustomStringConvertible {
        case failed
        package var description: String { rawValue }
    }
    package var code: Code { .failed }
    package let message: String

    package init(_ message: String) { self.message = message }
}

/// Refuses a numeric option outside `range` as a usage error that names the option and its range: a value that
/// cannot make sense must not be taken silently (a port that wraps, a negative frame count).
package func checkRange<T: Comparable>(_ value: T?, _ option: String, _ range: ClosedRange<T>) throws {
    guard let value, !range.contains(value) else { return }
    throw ValidationError("--\(option) \(value): must be \(range.lowerBound) to \(range.upperBound)")
}
