import Foundation
import SentinelCore
import SentinelTestSupport
import SentinelVision
import Synchronization
import Testing

/// A camera in a test: `count` small frames, one every `interval` seconds of wall time, stamped with media time.
final class ScriptedCamera: FrameSource {
    let name = "scripted"
    let count: Int
    let interval: Double
    private var index = 0

    init(count: Int, interval: Double) {
        self.count = count
        self.interval = interval
    }

    func next() throws(VisionError) -> Frame? {
        guard index < count else { return nil }
        if interval > 0 { Thread.sleep(forTimeInterval: interval) }
        defer { index += 1 }
        return Frame(
            index: index, time: MediaTime(seconds: Double(index) * 0.04),
            image: try Image(width: 8, height: 8, fill: .white))
    }
}

/// A camera the test paces: each `release(n)` lets it send n more frames, so what the edge drops depends on the
/// order of events the test sets, not on how fast a loaded machine runs either side.
final class ShutterCamera: FrameSource, @unchecked Sendable {
    let name = "shutter"
    private let shutter = DispatchSemaphore(value: 0)
    private let count: Int
    private var index = 0
    /// Frames handed over before the capture thread last asked for one.
    private let asked = NSCondition()
    private var handed = 0

    init(count: Int) { self.count = count }

    func release(_ frames: Int) { for _ in 0..<frames { shutter.signal() } }

    /// Waits until the edge has taken `count` frames: its capture thread asks for the next frame only once it has
    /// stored (or dropped and counted) the last one.
    func captured(_ count: Int) {
        asked.lock()
        while handed < count { asked.wait() }
        asked.unlock()
    }

    func next() throws(VisionError) -> Frame? {
        asked.lock()
        handed = index
        asked.broadcast()
        asked.unlock()
        guard index < count else { return nil }
        shutter.wait()
        defer { index += 1 }
        return Frame(
            index: index, time: MediaTime(seconds: Double(index) * 0.04),
            image: try Image(width: 8, height: 8, fill: .white))
    }
}

@Suite("Capture edge: a live source never waits for analysis", .ownThread)
struct CaptureEdgeTests {
    /// Takes every frame, spending `work` seconds on each; returns the frames taken.
    func drain(_ edge: CaptureEdge, work: Double) throws -> [Frame] {
        var taken: [Frame] = []
        while let frame = try edge.next() {
            taken.append(frame)
            Thread.sleep(forTimeInterval: work)
        }
        return taken
    }

    @Test(
        "analysis slower than the camera: the oldest frames are dropped, every frame is counted, the newest are analysed"
    )
    func dropsOldestAndCounts() throws {
        let camera = ShutterCamera(count: 30)
        let edge = CaptureEdge(camera, capacity: 2, policy: .dropOldest)
        edge.start()
        // Ten frames while analysis is busy: the two newest wait, the eight before them are dropped.
        camera.release(10)
        camera.captured(10)
        var taken = [try #require(try edge.next()), try #require(try edge.next())]
        #expect(taken.map(\.index) == [8, 9])
        #expect(edge.snapshot == CaptureEdge.Counts(captured: 10, delivered: 2, dropped: 8))
        // Analysis keeping up: nothing dropped.
        for index in 10..<20 {
            camera.release(1)
            taken.append(try #require(try edge.next()))
            #expect(taken.last?.index == index)
        }
        // Another burst, then the end: the newest two, and every frame counted once.
        camera.release(10)
        camera.captured(30)
        while let frame = try edge.next() { taken.append(frame) }
        #expect(taken.suffix(2).map(\.index) == [28, 29])
        #expect(edge.snapshot == CaptureEdge.Counts(captured: 30, delivered: taken.count, dropped: 30 - taken.count))
        #expect(taken.count == 14)
        // Each frame carries when it was captured, not when it was analysed.
        #expect(taken.allSatisfy { $0.capturedAt != nil })
    }

    @Test(
        "cameras share one budget for frames beyond their own two: each keeps its own whatever the others hold, draws the rest while the budget lasts, then drops its own oldest; analysed or stopped, the places go back"
    )
    func sharedPool() throws {
        let frame = 8 * 8 * 3
        let pool = FramePool(bytes: 3 * frame)
        let a = ShutterCamera(count: 20)
        let b = ShutterCamera(count: 20)
        let edgeA = CaptureEdge(a, capacity: 8, policy: .dropOldest, pool: pool)
        let edgeB = CaptureEdge(b, capacity: 8, policy: .dropOldest, pool: pool)
        edgeA.start()
        edgeB.start()
        func take(_ edge: CaptureEdge, _ count: Int) throws -> [Int] {
            try (0..<count).map { _ in try #require(try edge.next()).index }
        }
        // A burst on A: its own two and the whole budget (three), its oldest dropped.
        a.release(6)
        a.captured(6)
        #expect(pool.used.now == 3 * frame)
        #expect(edgeA.snapshot == CaptureEdge.Counts(captured: 6, delivered: 0, dropped: 1))
        // B meanwhile: its own two still, nothing from the spent budget.
        b.release(4)
        b.captured(4)
        #expect(try take(edgeB, 2) == [2, 3])
        #expect(edgeB.snapshot.dropped == 2)
        // A analysed: every place back.
        #expect(try take(edgeA, 5) == [1, 2, 3, 4, 5])
        #expect(pool.used.now == 0)
        // Now B draws: four frames held, none dropped.
        b.release(4)
        b.captured(8)
        #expect(edgeB.snapshot.dropped == 2)
        #expect(pool.used.now == 2 * frame)
        // Stopped with frames waiting: their places go back too.
        edgeB.stop()
        #expect(pool.used.now == 0)
        #expect(pool.used.most == 3 * frame)
        // The budget never lifts an edge past its capacity.
        let c = ShutterCamera(count: 5)
        let edgeC = CaptureEdge(c, capacity: 3, policy: .dropOldest, pool: FramePool(bytes: 100 * frame))
        edgeC.start()
        c.release(5)
        c.captured(5)
        #expect(try take(edgeC, 3) == [2, 3, 4])
        // ... nor past one below its own two.
        let d = ShutterCamera(count: 3)
        let edgeD = CaptureEdge(d, capacity: 1, policy: .dropOldest, pool: FramePool(bytes: 100 * frame))
        edgeD.start()
        d.release(3)
        d.captured(3)
        #expect(try take(edgeD, 1) == [2])
        edgeA.stop()
        edgeC.stop()
        edgeD.stop()
    }

    @Test("a recording read as fast as possible loses nothing: the reader waits for analysis")
    func blockingPolicyIsLossless() throws {
        let edge = CaptureEdge(ScriptedCamera(count: 40, interval: 0), capacity: 2, policy: .block)
        edge.start()
        let taken = try drain(edge, work: 0.002)
        #expect(taken.map(\.index) == Array(0..<40))
        #expect(edge.snapshot == CaptureEdge.Counts(captured: 40, delivered: 40, dropped: 0))
    }

    @Test(
        "shutdown wakes a consumer waiting on a camera that sends nothing, at once; stopping one edge stops nothing else"
    )
    func stopWakesWaitingConsumer() async throws {
        let stop = StopFlag()
        let edge = CaptureEdge(ScriptedCamera(count: 1, interval: 30), capacity: 2, policy: .dropOldest, shutdown: stop)
        edge.start()
        let started = ContinuousClock.now
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.2)
            stop.set()
        }
        #expect(try edge.next() == nil)
        #expect(ContinuousClock.now - started < .seconds(2))
        let other = StopFlag()
        let finished = CaptureEdge(ScriptedCamera(count: 1, interval: 0), policy: .block, shutdown: other)
        finished.stop()
        #expect(!other.isSet)
    }

    @Test("with nothing captured for a while, the consumer hears idle instead of waiting forever")
    func idleWhenNothingArrives() throws {
        let edge = CaptureEdge(ScriptedCamera(count: 1, interval: 1), capacity: 2, policy: .dropOldest)
        edge.start()
        defer { edge.stop() }
        guard case .idle = try edge.next(idleAfter: 0.1) else {
            Issue.record("expected idle")
            return
        }
    }
}

@Suite("Capture timeline: live frames stamped at capture", .ownThread)
struct CaptureTimelineTests {
    @Test("sane stream timestamps are used, anchored where the opening began")
    func usesStreamTime() {
        var timeline = CaptureTimeline()
        timeline.opening(at: 0.5)
        // Frames arrive in a burst (network jitter) but the stream says 40 ms apart.
        let times = [(0.50, 10.0), (0.51, 10.04), (0.52, 10.08), (0.62, 10.12)].map {
            timeline.time(elapsed: $0.0, streamSeconds: $0.1)
        }
        #expect(times.map(\.seconds) == [0.5, 0.54, 0.58, 0.62])
        #expect(timeline.streamStamped == 4 && timeline.clockStamped == 0)
    }

    @Test("an H.264 opening: what the decoder read while it opened is stamped by the stream, from the opening on")
    func openingBurst() {
        // As FFmpeg delivered the H.264 stand-in (rtsp_camera.py --h264): open from 0.0 to 1.9 s, then 50 frames
        // (0, 0, 0.0667 ... 3.267 s of stream) within 40 ms, then one frame every 66.7 ms as the camera sends them.
        var timeline = CaptureTimeline()
        let step = 1.0 / 15
        var frames = [(1.900, 0.0), (1.902, 0.0)]
        frames += (2..<50).map { (1.902 + Double($0) * 0.0008, Double($0 - 1) * step) }
        frames += (50..<80).map { (3.49 + Double($0 - 50) * step, Double($0 - 1) * step) }
        let times = frames.map { timeline.time(elapsed: $0.0, streamSeconds: $0.1).seconds }
        // Frame by frame the stream's spacing: nothing squeezed into the burst, nothing pinned to one instant.
        for (index, (time, frame)) in zip(times, frames).enumerated().dropFirst(2) {
            #expect(abs(time - frame.1) < 1e-6, "frame \(index): \(time) s for stream \(frame.1) s")
        }
        #expect(times[1] > times[0] && times[1] < times[2])
        #expect(timeline.streamStamped == frames.count)
        // A reopening anchors again, where it began: a stream starting again at 0 is not a step back.
        timeline.opening(at: 20.0)
        #expect(timeline.time(elapsed: 21.5, streamSeconds: 0).seconds == 20.0)
        #expect(abs(timeline.time(elapsed: 21.51, streamSeconds: step).seconds - (20.0 + step)) < 1e-6)
    }

    @Test("a stream that says 0 for every frame is stamped by the clock after its opening burst")
    func zeroStream() {
        var timeline = CaptureTimeline()
        timeline.opening(at: 0.0)
        #expect(timeline.time(elapsed: 0.2, streamSeconds: 0).seconds == 0.0)
        #expect(timeline.time(elapsed: 0.3, streamSeconds: 0).seconds == 0.3)
        #expect(timeline.time(elapsed: 0.4, streamSeconds: 0).seconds == 0.4)
        #expect(timeline.clockStamped == 2)
    }

    @Test("a stream that jumps, goes back or restarts is anchored again; media time never goes back")
    func reanchors() {
        var timeline = CaptureTimeline()
        _ = timeline.time(elapsed: 1.0, streamSeconds: 5.0)
        // Restarted after a reconnect: the stream says 0.1 s, the clock 9 s.
        let afterRestart = timeline.time(elapsed: 9.0, streamSeconds: 0.1)
        #expect(afterRestart.seconds == 9.0)
        #expect(timeline.time(elapsed: 9.04, streamSeconds: 0.14).seconds == 9.04)
        // A jump of a minute ahead is not believed.
        #expect(timeline.time(elapsed: 9.08, streamSeconds: 60.0).seconds == 9.08)
        // Timestamps that repeat still give increasing media time.
        let a = timeline.time(elapsed: 9.1, streamSeconds: 60.0)
        let b = timeline.time(elapsed: 9.1, streamSeconds: 60.0)
        #expect(a < b)
    }

    @Test("without stream timestamps the monotonic clock at the grab is used")
    func clockFallback() {
        var timeline = CaptureTimeline()
        #expect(timeline.time(elapsed: 0.25, streamSeconds: nil).seconds == 0.25)
        #expect(timeline.time(elapsed: 0.30, streamSeconds: .nan).seconds == 0.30)
        #expect(timeline.clockStamped == 2)
    }
}

@Suite("Stop flag", .ownThread)
struct StopFlagTests {
    @Test("a sleeper wakes when the flag is set from another thread; unset, it sleeps its time; observers run once")
    func wakesAndObserves() async throws {
        let flag = StopFlag()
        let calls = Mutex(0)
        flag.onSet { calls.withLock { $0 += 1 } }
        #expect(!flag.wait(seconds: 0.05))
        let started = ContinuousClock.now
        Thread.detachNewThread {
            Thread.sleep(forTimeInterval: 0.1)
            flag.set()
        }
        #expect(flag.wait(seconds: 30))
        // Woken by the set, not by its 30 s timeout.
        #expect(ContinuousClock.now - started < .seconds(20))
        flag.set()
        let late = Mutex(false)
        flag.onSet { late.withLock { $0 = true } }
        #expect(late.withLock { $0 } && calls.withLock { $0 } == 1 && flag.wait(seconds: 30))
    }
}
