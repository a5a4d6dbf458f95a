import Foundation
import Synchronization
public import Testing

/// Runs each test of a suite on a thread of its own instead of the test run's shared task threads (two on a 2-core
/// machine). A test that computes for seconds (a detector over a recording) or waits for a process then holds only its
/// own thread, and a test that keeps time (a deadline, a process's real-time pace) is not left queued behind others
/// each time it awaits: once started it has its thread until it ends.
public struct OwnThread: SuiteTrait, TestTrait, TestScoping {
    /// Computing tests take turns: as many at once as the machine has cores. Twice as many (measured) made the full
    /// run only 7 % shorter and starved the real-time services of other tests (see the Makefile's test target); without
    /// turns, the same. The others start at once: they mostly wait for a process or the network, and a turn waited
    /// for would count against their time limits.
    fileprivate static let turns = Slots(ProcessInfo.processInfo.activeProcessorCount)
    fileprivate let computing: Bool

    public var isRecursive: Bool { true }

    /// A scope for each test case, none for the suite itself.
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> Self? {
        testCase == nil ? nil : self
    }

    public func provideScope(
        for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void
    ) async throws {
        if computing { await Self.turns.acquire() }
        defer { if computing { Self.turns.release() } }
        let executor = ThreadExecutor(name: test.name)
        defer { executor.stop() }
        try await withTaskExecutorPreference(executor) { try await function() }
    }
}

extension Trait where Self == OwnThread {
    /// Each test on a thread of its own, started at once (see `OwnThread`): for tests that run processes or keep time.
    public static var ownThread: Self { OwnThread(computing: false) }

    /// Each test on a thread of its own, one per core at a time (see `OwnThread`): for tests that compute in the test
    /// process (detectors, renderers, replays).
    public static var computing: Self { OwnThread(computing: true) }
}

/// A counting semaphore for tasks: `acquire` suspends (holding no thread) until a slot is free.
final class Slots: Sendable {
    private let state: Mutex<(free: Int, waiting: [CheckedContinuation<Void, Never>])>

    init(_ count: Int) { state = Mutex((max(count, 1), [])) }

    func acquire() async {
        await withCheckedContinuation { continuation in
            let now = state.withLock { state in
                guard state.free > 0 else {
                    state.waiting.append(continuation)
                    return false
                }
                state.free -= 1
                return true
            }
            if now { continuation.resume() }
        }
    }

    func release() {
        let next = state.withLock { state in
            guard !state.waiting.isEmpty else {
                state.free += 1
                return nil as CheckedContinuation<Void, Never>?
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}

/// A task executor with one thread: the jobs given to it run there, in order. Its child tasks run there too, so a
/// test's `async let` and task groups stay on its thread.
final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var stopped = false

    init(name: String) {
        let thread = Thread { [self] in serve() }
        thread.name = name
        thread.start()
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        defer { condition.unlock() }
        guard !stopped else {
            // A job that comes after the test ended (a continuation resumed late) still runs, on a thread of its own.
            Thread { [self] in job.runSynchronously(on: asUnownedTaskExecutor()) }.start()
            return
        }
        jobs.append(job)
        condition.signal()
    }

    /// The thread ends once the jobs already given have run.
    func stop() {
        condition.lock()
        stopped = true
        condition.signal()
        condition.unlock()
    }

    private func serve() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopped { condition.wait() }
            guard !jobs.isEmpty else {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}
