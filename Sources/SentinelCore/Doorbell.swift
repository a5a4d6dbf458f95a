import Synchronization

/// Wakes tasks that wait for something to happen, without polling: the store writer's commits (the MQTT output, the
/// fleet's ingest and a replica's follower wake at once), a store's pool starting. `ring()` wakes every waiter, or
/// when none waits the next wait (rings meanwhile count once); `open()` rings for good, so that every wait from then
/// on returns at once. A wait ends when rung, when its timeout passes, or when its task is cancelled, and says which.
package final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var open = false
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        var nextWaiter = 0
    }
    private let state = Mutex(State())

    package init() {}

    /// How many wait now (what a test waits for before it rings).
    package var waiting: Int { state.withLock { $0.waiters.count } }

    package func ring() {
        let waiters = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            guard !state.waiters.isEmpty else {
                state.rung = true
                return []
            }
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    package func open() {
        let waiters = state.withLock { state in
            state.open = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(returning: true) }
    }

    /// True when rung (since the last wait) or open; false once `timeout` has passed or the task is cancelled.
    @discardableResult
    package func wait(timeout: Duration) async -> Bool {
        await withTaskGroup(of: Bool.self) { group in
            group.addTask { await self.rung() }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return false
            }
            let first = await group.next() ?? false
            group.cancelAll()
            return first
        }
    }

    private func rung() async -> Bool {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let now = state.withLock { state -> Bool? in
                    if state.open { return true }
                    if state.rung {
                        state.rung = false
                        return true
                    }
                    if Task.isCancelled { return false }
                    state.waiters[id] = continuation
                    return nil
                }
                if let now { continuation.resume(returning: now) }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume(returning: false)
        }
    }
}
