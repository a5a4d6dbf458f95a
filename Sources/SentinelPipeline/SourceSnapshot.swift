import Foundation
import Logging
import SentinelModels
import SentinelVision

/// A frame of a source to draw zones on, with every face hidden as the review video hides it.
///
/// The pipeline runs on the source from its start to the moment asked for (a recording's media time; a camera's
/// seconds after its first frame), so that the masks follow the tracker as they do in review video: a face the
/// detector misses in that one frame is still hidden where the tracker expects it. Nothing is stored or published.
public struct SourceSnapshot: Sendable {
    public var jpeg: [UInt8]
    public var width: Int
    public var height: Int
    /// Media time of the frame, in seconds.
    public var time: Double
    /// Regions hidden.
    public var masked: Int

    public static func take(
        definition: PipelineDefinition, source: PipelineDefinition.SourceDefinition, models: ModelStore,
        at seconds: Double, logger: Logger
    ) throws -> SourceSnapshot {
        let runner = try SourceRunner(
            definition: definition, source: source, models: models, pace: .fastest, logger: logger)
        let masks = FaceMasks(settings: definition.privacy.review)
        let isLive: Bool = if case .live = SourceSpec(source.resolvedInput) { true } else { false }
        let stop = StopFlag()
        var first: Double?
        // The frame due, or a recording's last if it is shorter than asked.
        var taken: MaskedFrame?
        try runner.run(stop: stop) { step in
            guard let frame = step.frame, !stop.isSet else { return }
            let time = frame.time.seconds
            if first == nil { first = time }
            taken = frame
            if time >= (isLive ? first! + seconds : seconds) { stop.set() }
        }
        guard let taken else { throw VisionError(.emptyFrame, "\(runner.sourceName) gave no frame") }
        let image = try taken.image.clone()
        try masks.hide(in: image, taken)
        return SourceSnapshot(
            jpeg: try image.jpeg(), width: image.width, height: image.height, time: taken.time.seconds,
            masked: masks.regions(taken).count)
    }
}
