import Foundation
public import Logging
public import SentinelConfig
public import SentinelCore
public import SentinelModels
import SentinelPrivacy
public import SentinelVision
import SentinelVisitors

extension SourceSnapshot {
    /// The frame of `source` at `seconds`: runs the pipeline on the source up to the moment asked for (a recording's media time; a camera's seconds after
    /// its first frame), so that the masks follow the tracker as they do in review video: a face the detector misses in
    /// that one frame is still hidden where the tracker expects it. A recording is entered `warmUp` before that moment:
    /// what the tracker knows then comes from that span alone (a visitor unseen for longer has left), so the faces' masks
    /// are the same as from the start, at any point of an hour-long file. What is masked beyond them (`ForegroundWatch`)
    /// knows no empty scene in so short a span: the whole edge band is masked, and faces the edges cut are searched
    /// for as faces. Nothing is stored or published. Setting `stop` abandons the frame (the
    /// editor shutting down).
    public static func take(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore,
        at seconds: Double, stop: StopFlag = StopFlag(), logger: Logger
    ) throws -> SourceSnapshot {
        let isLive: Bool = if case .live = SourceSpec(source.resolvedInput) { true } else { false }
        let runner = try SourceRunner(
            definition: definition, source: source, models: models, pace: .fastest,
            from: isLive ? 0 : max(0, seconds - warmUp(definition.visitors.tracker)), logger: logger)
        let masks = FaceMasks(settings: definition.privacy.review)
        var first: Double?
        // The frame due, or a recording's last if it is shorter than asked.
        var taken: MaskedFrame?
        var due = false
        try runner.run(stop: stop) { step in
            guard let frame = step.frame, !due else { return }
            let time = frame.time.seconds
            if first == nil { first = time }
            taken = frame
            due = time >= (isLive ? (first ?? time) + seconds : seconds)
            if due { stop.set() }
        }
        // Stopped from outside (the editor shutting down) before the frame was due.
        guard due || !stop.isSet else { throw CancellationError() }
        guard let taken else { throw VisionError(.emptyFrame, "\(runner.sourceName) gave no frame") }
        return try SourceSnapshot(taken, masks: masks)
    }

    /// A frame the pipeline gave, as a JPEG with every face `masks` hides hidden (the frame itself is left as it is).
    public init(_ frame: MaskedFrame, masks: FaceMasks) throws(VisionError) {
        let image = try frame.image.clone()
        try masks.hide(in: image, frame)
        self.init(
            jpeg: try image.jpeg(), width: image.width, height: image.height, time: frame.time.seconds,
            masked: masks.regions(frame).count)
    }

    /// How long before the frame a recording is entered: a visit unseen for the visit timeout has ended, so the
    /// tracks alive at the frame all come from this span, and a second more lets a face seen just before it be
    /// confirmed again.
    static func warmUp(_ tracker: TrackerSettings) -> Double { tracker.visitTimeoutSeconds + 1 }
}
