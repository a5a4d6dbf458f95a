public import Foundation
import SentinelCore
public import SentinelEval
import SentinelPrivacy
import SentinelVision
public import SentinelVisitors
public import SentinelWire

/// What a run leaves for its summary and its scoring, taken step by step from the pipeline: the store's copy of each
/// event with its exact times (`Masked.exact`, whatever the privacy's time resolution), each frame's tracked boxes by pseudonym, and the detections the stability measures count.
/// Replay, evaluation and every tuning trial record their runs through it.
public struct RunRecorder: Sendable {
    public private(set) var events: [VisitorEvent] = []
    /// Every tracked box, by frame and pseudonym.
    public private(set) var tracked: [TrackSet.Entry] = []
    /// The frames seen, in order.
    public private(set) var frames: [Int] = []
    /// Frames the detector ran on.
    public private(set) var analysedFrames = 0
    /// Emotion readings taken, and the CPU seconds they took.
    public private(set) var emotion = (readings: 0, seconds: 0.0)
    /// Faces due a reading that were not read, by why.
    public private(set) var unread: [EmotionSettings.Unreadable: Int] = [:]
    private var size: (width: Int, height: Int, frames: Int)?
    /// Each frame's index by its media time: where a confirmed visit's earlier frames were.
    private var times: [MediaTime: Int] = [:]
    private var stability = Stability.Collector()

    public init() {}

    public mutating func record(_ step: Pipeline.Step) {
        events += step.events.map(\.exact)
        guard let frame = step.frame else { return }
        if frame.analysed { analysedFrames += 1 }
        emotion = (emotion.readings + frame.timings.readings, emotion.seconds + frame.timings.emotion)
        for why in frame.timings.unread { unread[why, default: 0] += 1 }
        size = (frame.image.width, frame.image.height, frame.index + 1)
        frames.append(frame.index)
        times[frame.time] = frame.index
        // A visit's track begins at the frames that confirmed it, as its visit does.
        tracked += frame.confirming.compactMap { seen in
            times[seen.time].map { TrackSet.Entry(frame: $0, id: seen.label, box: seen.box) }
        }
        tracked += frame.tracked.map { TrackSet.Entry(frame: frame.index, id: $0.label, box: $0.box) }
        stability.add(
            frame: frame.index, analysed: frame.analysed,
            detected: frame.faces.compactMap { face in face.predicted ? nil : face.label.map { ($0, face.box) } })
    }

    /// Each frame's tracked boxes (frames with none included), as scoring against visits reads them.
    public var observed: [Int: [(faceId: String, box: Box)]] {
        var observed = Dictionary(uniqueKeysWithValues: frames.map { ($0, [(faceId: String, box: Box)]()) })
        for entry in tracked { observed[entry.frame, default: []].append((entry.id, entry.box)) }
        return observed
    }

    /// The tracks, sized as the frames were (the last frame's index + 1 frames).
    public var tracks: TrackSet {
        TrackSet(tracked, width: size?.width, height: size?.height, frameCount: size?.frames ?? 0)
    }

    public func stability(origin: Date) -> Stability { stability.finish(events: events, origin: origin) }

    public func summary(origin: Date) -> RunSummary {
        var summary = RunSummary(events: events, collector: stability, origin: origin)
        summary.emotion = emotion
        summary.unread = unread
        return summary
    }
}

extension SourceRunner {
    /// Runs to the end, recording what scoring needs. The pipeline should be made `forEvaluation`, so stored times
    /// are exact.
    public func evaluationRun() throws -> RunRecorder {
        var recorder = RunRecorder()
        try run { recorder.record($0) }
        return recorder
    }
}
