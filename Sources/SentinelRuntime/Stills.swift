public import Foundation
public import SentinelCore
import Synchronization

/// Each running camera's latest frame with every face masked (`SourceSnapshot`, the zone editor's masking), made
/// only when asked: `/api/still` asks, and the source's own thread fulfils the request from its next frame, so a box
/// nobody looks at encodes nothing. A still is kept in memory for `reuse` (several dashboards share one), never
/// stored, and never made unless the pipeline allows it (`privacy.review.stills`).
public final class Stills: Sendable {
    /// How long a still is handed out again before a new one is asked for.
    static let reuse: Duration = .seconds(1)

    public struct Still: Sendable {
        public var snapshot: SourceSnapshot
        public var takenAt: Date
        let madeAt: ContinuousClock.Instant
    }

    private struct Slot {
        var latest: Still?
        var waiting: [Int: CheckedContinuation<Still?, Never>] = [:]
    }

    private struct Slots {
        var bySource: [String: Slot]
        var lastRequest = 0
    }

    private let slots: Mutex<Slots>
    /// The pipeline's `privacy.review.stills`.
    public let allowed: Bool

    init(sources: [String], allowed: Bool) {
        self.allowed = allowed
        slots = Mutex(Slots(bySource: allowed ? Dictionary(uniqueKeysWithValues: sources.map { ($0, Slot()) }) : [:]))
    }

    /// Whether a request waits for a still of `source` (checked by the source at every frame: one lock, no copy).
    func wanted(_ source: String) -> Bool { slots.withLock { !($0.bySource[source]?.waiting.isEmpty ?? true) } }

    /// Hands a still to everyone waiting for one of `source`.
    func deliver(_ snapshot: SourceSnapshot, at date: Date, for source: String) {
        let still = Still(snapshot: snapshot, takenAt: date, madeAt: .now)
        let waiting = slots.withLock { slots -> [CheckedContinuation<Still?, Never>] in
            guard var slot = slots.bySource[source] else { return [] }
            let waiting = Array(slot.waiting.values)
            slot.latest = still
            slot.waiting = [:]
            slots.bySource[source] = slot
            return waiting
        }
        for continuation in waiting { continuation.resume(returning: still) }
    }

    /// Whether `source` runs here and so can give stills.
    package func runs(_ source: String) -> Bool { slots.withLock { $0.bySource[source] != nil } }

    /// A still of `source` no older than `reuse`, or the one its next frame gives; nil when none comes in `timeout`
    /// (a camera reconnecting, a recording that ended).
    package func still(of source: String, timeout: Duration) async -> Still? {
        guard runs(source) else { return nil }
        let (fresh, id) = slots.withLock { slots -> (Still?, Int) in
            slots.lastRequest += 1
            let latest = slots.bySource[source]?.latest
            return (latest.flatMap { ContinuousClock.now - $0.madeAt < Self.reuse ? $0 : nil }, slots.lastRequest)
        }
        if let fresh { return fresh }
        // The next frame's still, or nil after `timeout`: whichever comes first, and the other is called off.
        return await withTaskGroup(of: Still?.self) { group in
            group.addTask { await self.next(of: source, id: id) }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
    }

    /// The still `deliver` hands to waiter `id` of `source`; nil once the wait is cancelled.
    private func next(of source: String, id: Int) async -> Still? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let registered = slots.withLock { slots in
                    guard !Task.isCancelled, slots.bySource[source] != nil else { return false }
                    slots.bySource[source]?.waiting[id] = continuation
                    return true
                }
                if !registered { continuation.resume(returning: nil) }
            }
        } onCancel: {
            slots.withLock { $0.bySource[source]?.waiting.removeValue(forKey: id) }?.resume(returning: nil)
        }
    }

    /// `date` as an HTTP date (`Last-Modified`): "Wed, 25 Nov 2026 14:05:09 GMT".
    package static func httpDate(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = .gmt
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.string(from: date)
    }
}
