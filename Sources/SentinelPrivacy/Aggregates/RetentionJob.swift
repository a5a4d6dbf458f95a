public import Foundation

/// Something that keeps timestamped records and can delete the old ones (the store).
public protocol RetentionTarget {
    /// Deletes every record whose time is strictly before `cutoff`; returns how many went.
    mutating func deleteRecords(olderThan cutoff: Date) async throws -> Int
    /// The bytes the records take on disk (what deleting frees for new ones) and how many events they hold.
    mutating func storedSize() async throws -> (bytes: Int64, events: Int)
    /// Keeps the newest `fraction` of the events, in the order they were logged (not by time: a burst shares its
    /// second), with their gauge readings, and the same fraction of the visits, the last seen kept; deletes the rest
    /// and returns how many rows went.
    mutating func deleteOldest(keeping fraction: Double) async throws -> Int
    /// After a run that deleted: gives back the room the deletions took where the store keeps it apart from its
    /// records (SQLite's write-ahead log held every deleted page: 115 MB beside a 10 MB store).
    mutating func reclaim() async throws
}

/// When to delete what: runs at most once per interval, deletes records older than the policy's age, then, while the
/// store is over the policy's size bound, the oldest records first. Time is passed in, so the schedule is tested
/// without a clock.
public struct RetentionJob: Sendable {
    public let policy: RetentionPolicy
    public private(set) var lastRun: Date?

    /// What one run deleted: for their age, and (the oldest first) for the store's size.
    public struct Run: Sendable, Equatable {
        public var byAge = 0
        public var bySize = 0
        public var total: Int { byAge + bySize }
        public init(byAge: Int = 0, bySize: Int = 0) {
            self.byAge = byAge
            self.bySize = bySize
        }
    }

    public init(policy: RetentionPolicy) { self.policy = policy }

    /// Records before this instant are past retention.
    public func cutoff(now: Date) -> Date { now.addingTimeInterval(-policy.maxAgeSeconds) }

    public func isDue(now: Date) -> Bool {
        guard let lastRun else { return true }
        return now.timeIntervalSince(lastRun) >= policy.intervalSeconds
    }

    /// Deletes what is past retention if a run is due (nil when not due).
    public mutating func runIfDue(now: Date, on target: inout some RetentionTarget) async throws -> Run? {
        guard isDue(now: now) else { return nil }
        var run = Run()
        run.byAge = try await target.deleteRecords(olderThan: cutoff(now: now))
        // Over the bound: the oldest deleted, in proportion, down to 90 % of the bound (so that the next events do not
        // cross it again at once); a few rounds, as rows differ in size.
        if policy.maxBytes > 0 {
            for _ in 0..<4 {
                let (bytes, events) = try await target.storedSize()
                guard Double(bytes) > policy.maxBytes, events > 0 else { break }
                let deleted = try await target.deleteOldest(keeping: policy.maxBytes * 0.9 / Double(bytes))
                guard deleted > 0 else { break }
                run.bySize += deleted
            }
        }
        if run.total > 0 { try await target.reclaim() }
        lastRun = now
        return run
    }
}
