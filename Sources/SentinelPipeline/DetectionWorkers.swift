import Foundation
import SentinelCore
import SentinelVision
import Synchronization

/// Detectors on threads of their own, for detecting consecutive frames in parallel (`detector.workers`). Each thread
/// owns its detector (an OpenCV network must not be shared) and takes the oldest frame given; results are taken in the
/// order the frames were given, so the tracker, which stays sequential, sees them as if detected one by one.
final class DetectionWorkers: Sendable {
    typealias Detected = Pipeline.Detected

    /// One frame's detection, under way or done.
    final class Pending: Sendable {
        let frame: Frame
        private let done = DispatchSemaphore(value: 0)
        private let result = Mutex<Result<Detected, VisionError>?>(nil)

        init(_ frame: Frame) { self.frame = frame }

        fileprivate func finish(_ result: Result<Detected, VisionError>) {
            self.result.withLock { $0 = result }
            done.signal()
        }

        /// Blocks until the frame is detected.
        func detections() throws(VisionError) -> Detected {
            done.wait()
            return try result.withLock { $0 }!.get()
        }
    }

    let count: Int
    /// The frames given and not yet taken by a thread, and whether more will come.
    private let queue = Mutex<(frames: [Pending], stopped: Bool)>(([], false))
    /// Signalled once per frame given, and once per thread at the stop: a thread that wakes finds a frame to take,
    /// or, with none left, that it may end.
    private let ready = DispatchSemaphore(value: 0)

    /// One thread per detector, named after the source.
    init(_ detectors: [any FaceDetector], name: String) {
        count = detectors.count
        for (index, detector) in detectors.enumerated() {
            // Handed over: the thread is the only one that ever touches this detector.
            nonisolated(unsafe) let detector = detector
            let thread = Thread { [self] in serve(detector) }
            thread.name = "detect \(index + 1) \(name)"
            thread.start()
        }
    }

    func submit(_ frame: Frame) -> Pending {
        let pending = Pending(frame)
        queue.withLock { $0.frames.append(pending) }
        ready.signal()
        return pending
    }

    /// The threads end once the frames already given are detected.
    func stop() {
        queue.withLock { $0.stopped = true }
        for _ in 0..<count { ready.signal() }
    }

    private func serve(_ detector: any FaceDetector) {
        while true {
            ready.wait()
            let next = queue.withLock { $0.frames.isEmpty ? nil : $0.frames.removeFirst() }
            // Every wake-up but the stop's finds a frame: one is given before its signal.
            guard let pending = next else { return }
            let start = ContinuousClock.now
            pending.finish(
                Result { () throws(VisionError) in
                    Detected(faces: try detector.detect(pending.frame.image), took: ContinuousClock.now - start)
                })
        }
    }
}

/// The frames of a capture edge, each with its detections when workers detect ahead: up to two frames per worker are
/// taken from the edge and given to detection before the oldest is handed on, so that each worker has its next frame
/// waiting while the pipeline takes the results (with one per worker, a worker idled while the pipeline tracked:
/// 0.75-0.96x of two C++ loops at 640x480 against 0.97-1.13x). Without workers, frames pass as taken.
struct FramesAhead {
    enum Take {
        /// A frame, and its detections if the workers made them.
        case frame(Frame, detected: DetectionWorkers.Detected?)
        case idle
        case end
    }

    let edge: CaptureEdge
    let workers: DetectionWorkers?
    private var ahead: [DetectionWorkers.Pending] = []
    private var ended = false
    /// The edge's failure, kept until the frames captured before it have been handed on.
    private var failure: VisionError?

    init(_ edge: CaptureEdge, workers: DetectionWorkers?) {
        self.edge = edge
        self.workers = workers
    }

    /// The oldest frame, or `.idle` when none arrives within `idleAfter` seconds and none is under detection.
    mutating func next(idleAfter seconds: Double?) throws(VisionError) -> Take {
        guard let workers else {
            return switch try edge.next(idleAfter: seconds) {
            case .frame(let frame): .frame(frame, detected: nil)
            case .idle: .idle
            case .end: .end
            }
        }
        fill: while !ended && ahead.count < workers.count * 2 {
            do {
                // While frames are under detection, only what the edge already holds is taken.
                switch try edge.next(idleAfter: ahead.isEmpty ? seconds : 0) {
                case .frame(let frame): ahead.append(workers.submit(frame))
                case .idle:
                    if ahead.isEmpty { return .idle }
                    break fill
                case .end: ended = true
                }
            } catch {
                failure = error
                ended = true
            }
        }
        guard !ahead.isEmpty else {
            if let failure {
                self.failure = nil
                throw failure
            }
            return .end
        }
        let oldest = ahead.removeFirst()
        return .frame(oldest.frame, detected: try oldest.detections())
    }
}
