import Foundation
import Logging
import SentinelCore
import SentinelPrivacy
import SentinelStore
import SentinelWire

/// How the writer recovers: after a crash (the visits it left open), and while the database cannot be written (the
/// state logged once and shown in `/healthz`).
extension StoreWriter {
    /// After a crash: the gauge's window comes back from the log, and the visits the crash left open end, published
    /// like any exit, so no client keeps showing a visitor who is gone. Visits beyond retention are about to be
    /// deleted, not announced. What the log holds is checked as if it came from outside (`EventCheck`): a store
    /// written before events were checked may hold what would now be refused, and that is skipped, not voted with.
    func recover() async {
        let decoder = JSONDecoder.sentinel()
        let check = EventCheck(timeResolution: policy.timestampResolution)
        var skipped = 0
        func passes(_ event: VisitorEvent) -> Bool {
            if (try? check.validate(event)) != nil { return true }
            skipped += 1
            return false
        }
        do {
            let window = try await store.visitorEvents(since: Date().addingTimeInterval(-publisher.window))
            publisher.restore(window.compactMap { try? decoder.decode(VisitorEvent.self, from: $0) }.filter(passes))
        } catch {
            logger.error("cannot read the gauge's window from the store", metadata: ["error": "\(error.message)"])
        }
        let kept = Date().addingTimeInterval(-policy.retention.maxAgeSeconds)
        for record in store.interrupted {
            guard let visitor = try? decoder.decode(VisitorRecord.self, from: record),
                (visitor.lastSeen ?? .distantPast) >= kept
            else { continue }
            let exit = policy.interruptedExit(of: visitor)
            if passes(exit.stored.event) { hub.submit(exit) }
        }
        if skipped > 0 {
            logger.warning(
                "skipped stored events that fail the event checks (written before they existed?)",
                metadata: ["count": "\(skipped)"])
        }
        follower?.start(after: (try? await store.logBounds().last) ?? 0)
    }

    func failed(_ error: StoreError, _ progress: inout Progress) {
        if progress.failure?.code != error.code {
            logger.error("cannot write the store; keeping events in memory", metadata: ["error": "\(error.message)"])
        }
        progress.failure = error
        live.updateDatabase {
            $0.writable = false
            $0.message = error.message
        }
    }

    func wrote(_ count: Int, _ progress: inout Progress) {
        publisher.broadcaster.commits.ring()
        if progress.failure != nil {
            logger.notice(
                "the store is writable again; flushing the events kept in memory",
                metadata: ["waiting": "\(hub.counts.waiting)"])
            progress.failure = nil
        }
        live.updateDatabase {
            $0.writable = true
            $0.message = nil
        }
    }
}
