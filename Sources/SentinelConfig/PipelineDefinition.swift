import Foundation
public import SentinelCore
public import SentinelPrivacy
public import SentinelVisitors
public import SentinelWire
import Yams

/// A pipeline file: sources with their zones, the detector, tracker, emotion and event settings.
public struct PipelineDefinition: Sendable {
    public var file: String
    public var sources: [SourceDefinition]
    /// Which detector runs, and on how many frames.
    public var detection = DetectorChoice()
    /// A model name from Models/models.yml; nil for the detector's default.
    public var detectorModel: String?
    /// The model the detector reads: `detectorModel`, or its kind's default.
    public var resolvedDetectorModel: String { detectorModel ?? detection.kind.defaultModel }
    public var detectorSettings: DetectorSettings
    public var visitors: VisitorSettings
    public var emotionEnabled: Bool
    public var emotionModel: String
    /// Whether the crop is turned so that the eyes are level, where the model's description asks for it and the
    /// detector gives landmarks.
    public var emotionAlign = true
    /// Whether the mirrored crop is read too and the two readings averaged.
    public var emotionMirror = true
    /// The pipeline's own calibration, replacing the model's whole (`emotion.calibration`); nil: the model's.
    public var emotionCalibration: EmotionCalibration?
    /// The pipeline's own head (`emotion.head`: a file `sentinel eval emotion --fit` wrote, and its sha256); nil: the
    /// model's.
    public var emotionHead: FileReference?
    /// What may leave the box, and how.
    public var privacy: PrivacyPolicy
    /// The sentiment gauge's window and publishing rhythm.
    public var gauge = GaugeSettings()
    /// Every zone of every source, in file order.
    public var zoneIDs: [ZoneID] {
        sources.flatMap { source in source.zones.map { ZoneID(sourceId: source.id, name: $0.name) } }
    }
    /// Where fields that are checked against the machine were written, for messages.
    var locations: [String: ConfigProblem] = [:]
    /// The fields written as a relative path (`sources[0].input`, `store.path`), each with the path it means.
    public internal(set) var relativePaths: [String: String] = [:]

    /// A pipeline with nothing but defaults.
    init(file: String) {
        self.file = file
        sources = []
        detectorSettings = .defaults(for: detection.kind)
        visitors = VisitorSettings()
        emotionEnabled = true
        emotionModel = "emotion"
        privacy = PrivacyPolicy()
    }

    /// The `detector:` section's settings that name files rather than tune the detector.
    static let detectorModelSettings: [Setting<PipelineDefinition>] = [
        .optionalText("model", \.detectorModel, "a model name from Models/models.yml (null: the kind's default)")
    ]

    /// The `emotion:` section's settings beside the classifier's own.
    static let emotionModelSettings: [Setting<PipelineDefinition>] = [
        .flag("enabled", \.emotionEnabled, "classify emotion at all"),
        .text("model", \.emotionModel, "the emotion model's name in Models/models.yml"),
        .flag("align", \.emotionAlign, "turn each face so its eyes are level first (where the model asks for it)"),
        .flag("mirror", \.emotionMirror, "read the mirrored face too and average the two readings"),
    ]

    /// `emotion.head:`, a head's file and checksum.
    static let headSettings: [Setting<FileReference>] = [
        .text("file", \.file, "the head's file: absolute, or a name beside the models (Models/cache) or models.yml"),
        .text("sha256", \.sha256, "its checksum, as eval emotion --fit printed it"),
    ]

    /// One source of frames and its zones.
    public struct SourceDefinition: Sendable {
        public var id: String
        /// As written: a file or folder (relative to the pipeline file), a device or a URL.
        public var input: String
        /// `input` with a relative path resolved against the pipeline file's folder.
        public var resolvedInput: String
        public var pace: Pacing
        public var folderFPS: Double
        public var zones: [ZoneSpec]
    }

    /// A zone as written, its polygon in `units`.
    public struct ZoneSpec: Sendable {
        public var name: String
        public var polygon: Polygon
        public var units: PolygonUnits
        public var inertia: Hysteresis
        public var grace: Hysteresis
        public var emotion: Bool

        /// The zone in pixels of a frame of this size.
        public func definition(width: Int, height: Int) -> ZoneDefinition {
            ZoneDefinition(
                name: name,
                polygon: units == .normalized ? polygon.scaled(width: Double(width), height: Double(height)) : polygon,
                inertia: inertia, grace: grace, emotion: emotion)
        }
    }

    /// Sections of a pipeline file that the pipeline does not read: `sentinel run`'s store, server and outputs. They
    /// are allowed in every pipeline file and read by whoever serves it (see `parse(_:file:sections:)`).
    public static let serviceSections: Set<String> = ["store", "server", "outputs"]

    /// Reads one section of a pipeline file that belongs to another part of Sentinel, reporting into the reader.
    public typealias SectionReader = (Field, ConfigReader) -> Void

    /// Reads a pipeline file, `overrides` (`--set`) written over it; every problem is reported with its line (or its
    /// `--set`) and field.
    public static func load(
        _ path: String, sections: [String: SectionReader] = [:], overrides: [ConfigOverride] = []
    ) throws(ConfigError) -> PipelineDefinition {
        try ConfigFile.load(path, overrides: overrides) { root, reader in
            PipelineParser(reader: reader, sections: sections).parse(root)
        }
    }

    /// Parses a pipeline file's text; `sections` read the service's sections present (`serviceSections`), after the
    /// pipeline's own, and their problems come out with the rest.
    public static func parse(
        _ text: String, file: String, sections: [String: SectionReader] = [:], overrides: [ConfigOverride] = []
    ) throws(ConfigError) -> PipelineDefinition {
        try ConfigFile.parse(text, file: file, overrides: overrides) { root, reader in
            PipelineParser(reader: reader, sections: sections).parse(root)
        }
    }

    /// Reads a `privacy:` section as a pipeline file writes it into `policy` (a fleet file has one too), with lists
    /// under `outputs` for those of `outputs` only (a fleet has no MQTT output).
    public static func readPrivacy(
        _ field: Field, _ reader: ConfigReader, into policy: inout PrivacyPolicy,
        outputs: [PrivacyPolicy.Output] = PrivacyPolicy.Output.allCases
    ) {
        PipelineParser(reader: reader, sections: [:]).privacy(field, &policy, outputs: outputs)
    }
}

/// The `detector:` keys that choose the detector and how often it runs (its tuning is `DetectorSettings`').
public struct DetectorChoice: Sendable {
    public var kind = DetectorKind.retinaface
    /// Frames per second of media time each source detects faces on by schedule (0: every frame). Frames in between
    /// are not analysed: the tracker carries every visitor across them, unless it is unsure of one, or (`onChange`)
    /// the image changed where no visitor explains it.
    public var maxFps = 0.0
    /// Under `maxFps`, motion-gated detection (`MotionGate`): a change no followed face explains is detected whole at
    /// once, a still empty camera not at all, followed faces in squares around them.
    public var onChange = true
    /// Detectors per source detecting consecutive frames in parallel, each on a thread of its own with one OpenCV
    /// thread (0: the machine's cores shared among the sources that run, at least one each). Only with every frame
    /// detected (`maxFps: 0`).
    public var workers = 0

    /// `workers`, with 0 resolved to this machine's cores shared among `sources` running side by side.
    public func resolvedWorkers(sources: Int = 1) -> Int {
        workers == 0 ? max(1, ProcessInfo.processInfo.activeProcessorCount / max(sources, 1)) : workers
    }

    public init() {}

    public static let settings: [Setting<DetectorChoice>] = [
        .choice("kind", \.kind, "the face detector; the settings below start from its defaults"),
        .number(
            "maxFps", \.maxFps, in: 0...1000,
            "analysed frames per media second by schedule, evenly spread; the tracker carries visitors between them (0: every frame)"
        ),
        .flag(
            "onChange", \.onChange,
            "under maxFps, motion-gated: a change no visitor explains is detected whole at once, a still empty camera not at all, followed faces in squares around them"
        ),
        .integer(
            "workers", \.workers, in: 0...64,
            "detectors per source on consecutive frames in parallel, one OpenCV thread each (0: the cores shared among the sources that run; maxFps 0 only)"
        ),
    ]
}

extension PipelineDefinition {
    /// The pipeline as `sources` sources started side by side in one process run it: `detector.workers: 0` resolved
    /// to their share of the cores.
    public func sharing(sources: Int) -> PipelineDefinition {
        var shared = self
        shared.detection.workers = detection.resolvedWorkers(sources: sources)
        return shared
    }

    /// The same pipeline, masked for scoring against ground truth: the store's copy keeps every field and exact
    /// times (pseudonyms all the same), so dwell and zone timing are measured to the millisecond.
    public var forEvaluation: PipelineDefinition {
        var copy = self
        copy.privacy.timestampResolution = 0
        copy.privacy.outputs[.store] = Set(PublishedField.allCases)
        return copy
    }

    /// What this pipeline publishes over its masked events, under its privacy: the gauge over every source and zone,
    /// who is present, the reports.
    public var aggregation: Aggregation {
        Aggregation(policy: privacy, gauge: gauge, sources: sources.map(\.id), zones: zoneIDs)
    }
}
