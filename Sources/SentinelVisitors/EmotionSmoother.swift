import Foundation
public import SentinelCore
public import SentinelWire

/// When a face is classified and how the readings are smoothed.
public struct EmotionSettings: Sendable, Equatable, Codable {
    /// Faces smaller than this (pixels, shorter side) are not classified: the 64x64 model needs detail.
    public var minFaceSize: Double = 48
    /// Detections scoring below this are not classified.
    public var minDetectionScore: Double = 0.6
    /// Time constant of the exponential smoothing, in media seconds: a reading's weight halves every ~0.7 of it.
    public var timeConstantSeconds: Double = 2.0
    /// Below this smoothed probability the dominant label is published as "unknown".
    public var minConfidence: Double = 0.4
    /// Below this many readings the label is "unknown".
    public var minSamples: Int = 3
    /// At most this many classifications per visitor per media second (0: every frame the face is detected). The
    /// reading is smoothed over `timeConstantSeconds` anyway, so classifying every frame of a 30 fps camera would
    /// spend the model on readings that change nothing; 1.5 keeps emotion under 5 % of a replay's CPU time (a reading,
    /// the crop and its mirror image, costs about 4 ms on one core).
    public var maxPerSecond: Double = 1.5

    public init() {}

    /// Whether a detection may be classified at all: big enough for the model, and sure enough to be a face.
    public func admits(_ detection: Detection) -> Bool {
        min(detection.box.width, detection.box.height) >= minFaceSize && detection.score >= minDetectionScore
    }

    /// The smoothing part of a pipeline file's `emotion:` section (`enabled` and `model` are the pipeline's).
    public static let settings: [Setting<EmotionSettings>] = [
        .number("minFaceSize", \.minFaceSize, in: 0...4096, "pixels; smaller faces are not classified"),
        .number("minDetectionScore", \.minDetectionScore, in: 0...1, "weaker detections are not classified"),
        .number(
            "timeConstantSeconds", \.timeConstantSeconds, in: 0.01...3600,
            "media seconds over which a visitor's readings are smoothed"),
        .number("minConfidence", \.minConfidence, in: 0...1, "below this smoothed probability the emotion is unknown"),
        .integer("minSamples", \.minSamples, in: 1...10000, "below this many readings the emotion is unknown"),
        .number(
            "maxPerSecond", \.maxPerSecond, in: 0...1000,
            "classifications per visitor per media second at most (0: every frame the face is detected)"),
    ]
}

/// One visitor's expression over time: an exponentially weighted average of the calibrated readings in media time,
/// so one noisy frame (an open mouth read as "angry") moves it little. A reading `dt` seconds after the last weighs
/// `1 - exp(-dt / timeConstantSeconds)` against everything before it.
public struct EmotionSmoother: Sendable {
    public let settings: EmotionSettings
    public private(set) var distribution: [Double] = []
    public private(set) var samples = 0
    /// The smoothed valence of the readings (each reading's own, under the calibration's valence per expression).
    private var smoothedValence = 0.0
    private var last: MediaTime?

    public init(settings: EmotionSettings) { self.settings = settings }

    public mutating func add(_ reading: EmotionReading, at time: MediaTime) {
        // A reading that is not a distribution of finite numbers (a model gone wrong) is passed over: one NaN would
        // stay in the average for good, and no event could carry it.
        guard reading.probabilities.count == Emotion.allCases.count,
            reading.probabilities.allSatisfy(\.isFinite), reading.valence.isFinite
        else { return }
        if let last, !distribution.isEmpty {
            let weight = Self.weight(after: max(0, (time - last).seconds), timeConstant: settings.timeConstantSeconds)
            distribution = zip(distribution, reading.probabilities).map { $0 + weight * ($1 - $0) }
            smoothedValence += weight * (reading.valence - smoothedValence)
        } else {
            distribution = reading.probabilities
            smoothedValence = reading.valence
        }
        last = time
        samples += 1
    }

    /// The weight a new reading gets `dt` media seconds after the last one.
    public static func weight(after dt: Double, timeConstant: Double) -> Double { 1 - exp(-dt / timeConstant) }

    /// The dominant label (or nil while unknown) and its smoothed probability.
    public var dominant: (emotion: Emotion?, confidence: Double) {
        guard let best = distribution.indices.max(by: { distribution[$0] < distribution[$1] }) else { return (nil, 0) }
        let confidence = distribution[best]
        let known = samples >= settings.minSamples && confidence >= settings.minConfidence
        return (known ? Emotion.allCases[best] : nil, confidence)
    }

    /// -1 to 1: the smoothed valence of the readings, 0 while unknown.
    public var valence: Double { dominant.emotion == nil ? 0 : smoothedValence }
}
