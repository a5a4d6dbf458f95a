public import Foundation
public import SentinelPrivacy

/// Something that keeps timestamped records and can delete the old ones (the store).
public protocol RetentionTarget {
    /// Deletes every record whose time is strictly before `cutoff`; returns how many went.
    mutating func deleteRecords(olderThan cutoff: Date) async throws -> Int
}

/// When to delete what: runs at most once per interval and deletes records older than the policy's age.
/// Time is passed in, so the schedule is tested without a clock.
public struct RetentionJob: Sendable {
    public let policy: RetentionPolicy
    public private(set) var lastRun: Date?

    public init(policy: RetentionPolicy) { self.policy = policy }

    /// Records before this instant are past retention.
    public func cutoff(now: Date) -> Date { now.addingTimeInterval(-policy.maxAgeSeconds) }

    public func isDue(now: Date) -> Bool {
        guard let lastRun else { return true }
        return now.timeIntervalSince(lastRun) >= policy.intervalSeconds
    }

    /// Deletes what is past retention if a run is due; returns how many records went (nil when not due).
    public mutating func runIfDue(now: Date, on target: inout some RetentionTarget) async throws -> Int? {
        guard isDue(now: now) else { return nil }
        let deleted = try await target.deleteRecords(olderThan: cutoff(now: now))
        lastRun = now
        return deleted
    }
}
