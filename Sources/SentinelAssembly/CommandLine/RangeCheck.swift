import ArgumentParser

/// Refuses a numeric option outside `range` as a usage error that names the option and its range: a value that
/// cannot make sense must not be taken silently (a port that wraps, a negative frame count).
package func checkRange<T: Comparable>(_ value: T?, _ option: String, _ range: ClosedRange<T>) throws {
    guard let value, !range.contains(value) else { return }
    throw ValidationError("--\(option) \(value): must be \(range.lowerBound) to \(range.upperBound)")
}
