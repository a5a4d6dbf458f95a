public import Foundation
public import Logging
public import SentinelConfig
public import SentinelCore
public import SentinelEval
public import SentinelPipeline
import SentinelPrivacy
import SentinelVision
public import SentinelVisitors
import SentinelWire

/// What a recording is scored against: labels in any format, and Sentinel's own truth when that is what they are
/// (visits, zones and dwell come only from it).
public struct RecordingLabels: Sendable {
    public var tracks: TrackSet
    public var truth: GroundTruth?
    public init(tracks: TrackSet, truth: GroundTruth?) {
        self.tracks = tracks
        self.truth = truth
    }

    /// A recording's own ground truth as labels.
    public init(_ truth: GroundTruth) { self.init(tracks: TrackSet(truth), truth: truth) }

    /// A run's figures against these labels: the tracking figures, and with Sentinel's own truth the visits' (dwell,
    /// zone timing). `origin` turns the stored events' dates back into media seconds.
    public func score(
        _ run: RunRecorder, origin: Date
    ) throws(TrackMetrics.TooLarge) -> (metrics: TrackMetrics, visits: VisitScore?) {
        (
            try TrackMetrics.evaluate(truth: tracks, tracks: run.tracks),
            truth.map { VisitScore.evaluate(truth: $0, observed: run.observed, events: run.events, origin: origin) }
        )
    }

    /// The labels in the file at `path`. Labels in another tool's format hold only boxes: with `derive` (the
    /// recording's frame rate and size, the pipeline's zones and reference point), visits, zone stays and dwell are
    /// derived from them by the pipeline's own zone rule, so that dwell and zone timing can be scored too.
    public static func read(_ path: String, derive: Derivation? = nil) throws -> RecordingLabels {
        let tracks = try TrackFile.read(path, video: derive?.bounds)
        if let truth = try? JSONDecoder().decode(GroundTruth.self, from: Data(contentsOf: URL(fileURLWithPath: path))) {
            return RecordingLabels(tracks: tracks, truth: truth)
        }
        return RecordingLabels(tracks: tracks, truth: derive.map { $0.truth(from: tracks, recording: path) })
    }

    /// What deriving visits from boxes needs.
    public struct Derivation: Sendable {
        /// For `recording` under `definition` (its first source's zones): every frame's time and the frame size, read
        /// as the pipeline reads the recording. Every frame is decoded: a phone's clip has no one frame rate, so a label
        /// frame's time is the time the decoder gives that frame, and the recording's length is the frames the decoder
        /// gives, not the count its container states (an estimate for some).
        public static func of(_ recording: String, _ definition: PipelineDefinition, logger: Logger) throws
            -> Derivation
        {
            let source = try SourceSpec(recording).open(pacing: .fastest, logger: logger)
            var times: [MediaTime] = []
            var size: (width: Int, height: Int)?
            while let frame = try source.next() {
                if size == nil { size = (frame.image.width, frame.image.height) }
                times.append(frame.time)
            }
            guard let size else { throw TuneError("\(recording): no frame to read") }
            return Derivation(
                times: times, width: size.width, height: size.height, zones: definition.sources[0].zones,
                settings: definition.visitors, name: URL(fileURLWithPath: recording).lastPathComponent)
        }

        /// What bounds the recording's labels.
        public var bounds: VideoBounds {
            VideoBounds(frames: times.count, width: width, height: height, name: name)
        }

        /// The recording's file name.
        public var name: String?
        /// Each frame's media time, in decoding order: the recording's length is their count.
        public var times: [MediaTime]
        public var width: Int
        public var height: Int
        public var zones: [PipelineDefinition.ZoneSpec]
        public var settings: VisitorSettings
        public init(
            times: [MediaTime], width: Int, height: Int, zones: [PipelineDefinition.ZoneSpec],
            settings: VisitorSettings, name: String? = nil
        ) {
            self.times = times
            self.width = width
            self.height = height
            self.zones = zones
            self.settings = settings
            self.name = name
        }

        /// The mean frame rate over the recording (15 for a single frame): what a truth file records as its rate.
        var meanFPS: Double {
            guard let first = times.first, let last = times.last, last > first else { return 15 }
            return Double(times.count - 1) / (last - first).seconds
        }

        /// The time of a label's frame: the decoder's for a frame it gives; one a label tool's rounding puts past the
        /// end (`bounds` allows a frame or two) follows the last at the mean rate.
        func time(_ frame: Int) -> MediaTime {
            if frame < times.count { return times[max(frame, 0)] }
            return (times.last ?? .zero) + MediaTime(seconds: Double(frame - times.count + 1) / meanFPS)
        }

        /// Each labelled id as one visit from its first to its last box, its stays as the pipeline's zones (polygon,
        /// reference point, inertia and grace) decide them from its boxes; each frame at the time the decoder gives it.
        func truth(from tracks: TrackSet, recording: String) -> GroundTruth {
            let zones = self.zones.map { $0.definition(width: width, height: height) }
            let frames = (0..<(tracks.frameCount ?? ((tracks.entries.map(\.frame).max() ?? -1) + 1))).map { index in
                GroundTruth.Frame(index: index, time: time(index), faces: [])
            }
            var withFaces = frames
            for entry in tracks.entries where entry.frame < withFaces.count {
                withFaces[entry.frame].faces.append(.init(visitor: entry.id, box: entry.box, visible: 1))
            }
            let byID = Dictionary(grouping: tracks.entries, by: \.id)
            let visitors = tracks.ids.map { id in
                let boxes = byID[id]!.sorted { $0.frame < $1.frame }
                var presence = ZonePresence(zones: zones)
                var stays: [GroundTruth.Stay] = []
                func take(_ changes: [ZonePresence.Change]) {
                    for case .exited(let stay) in changes {
                        stays.append(.init(zone: stay.zone, entered: stay.entered, exited: stay.exited ?? stay.entered))
                    }
                }
                for entry in boxes { take(presence.observe(settings.point(of: entry.box), at: time(entry.frame))) }
                // A stay open at the visit's end ends with it: no stay is longer than its visit.
                take(presence.leaveAll(at: time(boxes.last!.frame)))
                return GroundTruth.Visitor(
                    id: id, firstSeen: time(boxes.first!.frame), lastSeen: time(boxes.last!.frame),
                    stays: stays.sorted { $0.entered < $1.entered })
            }
            return GroundTruth(
                recording: URL(fileURLWithPath: recording).lastPathComponent, width: width, height: height,
                fps: meanFPS, zones: [], frames: withFaces, visitors: visitors)
        }
    }
}

/// One configuration run over one recording's cached detections.
public struct TrialOutcome: Sendable {
    public var metrics: TrackMetrics?
    /// With Sentinel's own truth: visits per visitor, dwell and zone timing.
    public var visitors: VisitScore?
    public var stability: Stability
    public var frames: Int
    /// Frames a second the configuration would analyse at on this machine: the cached detection's cost per detected
    /// frame plus what tracking took.
    public var estimatedFPS: Double
    /// The published events, one JSON line each (for `sentinel diff`, and to check a replay is deterministic).
    public var lines: [Data]

    /// Mean dwell error over the true visitors (seconds), with own truth.
    public var dwellError: Double? {
        visitors.map {
            $0.visitors.isEmpty ? 0 : $0.visitors.map(\.dwellError).reduce(0, +) / Double($0.visitors.count)
        }
    }

    /// Visits beyond one per true visitor, per true visitor (0 when each was followed in one piece), with own truth.
    public var splits: Double? {
        visitors.map { score in
            score.visitors.isEmpty
                ? 0
                : Double(score.visitors.map { max($0.visits.count - 1, 0) }.reduce(0, +)) / Double(score.visitors.count)
        }
    }
}

public enum Trial {
    /// Runs `definition` (its first source's zones) over `cache` as a replay of the recording would, and scores it.
    public static func run(_ definition: PipelineDefinition, on cache: DetectionCache, labels: RecordingLabels?) throws
        -> TrialOutcome
    {
        let evaluation = definition.forEvaluation
        let models = CachedModels(settings: definition.detectorSettings, kind: definition.detection.kind)
        // The pipeline as every entry point runs it; only the models are the cache. The frames are processed in order,
        // then the visits end, as a SourceRunner does with a recording read as fast as possible.
        var pipeline = Pipeline(
            definition: evaluation, source: definition.sources[0], detector: models,
            emotion: definition.emotionEnabled
                ? EmotionReader(classifier: models, readout: cache.readout)
                : nil,
            keys: try PseudonymKeyRing(), origin: cache.origin)
        let image = try Image(width: cache.width, height: cache.height)
        var recorder = RunRecorder()
        var lines: [Data] = []
        let start = ContinuousClock.now
        func take(_ step: Pipeline.Step) {
            recorder.record(step)
            lines += step.events.map(\.published.json)
        }
        for frame in cache.frames {
            models.frame = frame
            take(
                try pipeline.process(
                    Frame(index: frame.index, time: frame.time, image: image, thumbnail: frame.thumbnail)))
        }
        take(try pipeline.finish(.endOfStream))
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
        let detectCost = cache.seconds / Double(max(cache.frames.count, 1))
        let score = try labels?.score(recorder, origin: cache.origin)
        return TrialOutcome(
            metrics: score?.metrics, visitors: score?.visits,
            stability: recorder.stability(origin: cache.origin), frames: cache.frames.count,
            estimatedFPS: Double(cache.frames.count)
                / max(Double(recorder.analysedFrames) * detectCost + seconds, 1e-9),
            lines: lines)
    }
}
