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

    /// Faces turned further than this are not classified: how near the nose is to the middle of the eyes, 1 facing
    /// the camera, 0 with the nose over an eye or beyond (about 45 degrees of yaw). A model of frontal photos reads a
    /// profile's laugh as disgust.
    public var minFrontal: Double = 0.4
    /// Faces less sharp than this are not classified (`Image.sharpness`: about 0.1 to 1 in focus and lit; blurred by
    /// motion or focus, or dark to the noise, below 0.08).
    public var minSharpness: Double = 0.08

    public init() {}

    /// Why a face is not read, in the order it is checked.
    public enum Unreadable: String, Sendable, CaseIterable, CustomStringConvertible {
        case small, weak, cut, turned, blurred

        public var description: String {
            switch self {
            case .small: "smaller than emotion.minFaceSize"
            case .weak: "a detection weaker than emotion.minDetectionScore"
            case .cut: "an eye, the nose or the mouth outside the frame"
            case .turned: "turned away further than emotion.minFrontal"
            case .blurred: "less sharp than emotion.minSharpness"
            }
        }
    }

    /// Why the face `detection` found in a frame of `width` x `height` cannot be read, or nil when it can, as far as
    /// its box and landmarks tell (the picture's sharpness is the caller's: `sharpness`, asked last, only if needed).
    public func unreadable<E: Error>(
        _ detection: Detection, width: Double, height: Double, sharpness: () throws(E) -> Double
    ) throws(E) -> Unreadable? {
        let box = detection.box
        if min(box.width, box.height) < minFaceSize { return .small }
        if detection.score < minDetectionScore { return .weak }
        if Self.cut(detection, width: width, height: height) { return .cut }
        if let frontal = Self.frontal(detection.landmarks), frontal < minFrontal { return .turned }
        if minSharpness > 0, try sharpness() < minSharpness { return .blurred }
        return nil
    }

    /// Whether the frame's edge cuts what a reading needs: an eye, the nose or the mouth (the landmarks) outside it;
    /// without landmarks, a tenth of the box or more. A tight crop, a photo's whole frame a face, is not cut.
    static func cut(_ detection: Detection, width: Double, height: Double) -> Bool {
        guard detection.landmarks.isEmpty else {
            return detection.landmarks.contains { $0.x < 0 || $0.y < 0 || $0.x > width || $0.y > height }
        }
        let box = detection.box
        let inside =
            max(0, min(box.maxX, width) - max(box.x, 0)) * max(0, min(box.maxY, height) - max(box.y, 0))
        return inside < 0.9 * box.width * box.height
    }

    /// How squarely a face looks at the camera from its landmarks (the eyes, then the nose): where the nose falls
    /// along the line between the eyes, 1 at its middle, 0 at an eye or beyond. Nil without landmarks (the cascade).
    public static func frontal(_ landmarks: [Point]) -> Double? {
        guard landmarks.count >= 3 else { return nil }
        let (left, right, nose) = (landmarks[0], landmarks[1], landmarks[2])
        let (ex, ey) = (right.x - left.x, right.y - left.y)
        let squared = ex * ex + ey * ey
        guard squared > 1e-9, squared.isFinite else { return 0 }
        let along = ((nose.x - left.x) * ex + (nose.y - left.y) * ey) / squared
        return max(0, 1 - abs(2 * along - 1))
    }

    /// The smoothing part of a pipeline file's `emotion:` section (`enabled` and `model` are the pipeline's).
    public static let settings: [Setting<EmotionSettings>] = [
        .number("minFaceSize", \.minFaceSize, in: 0...4096, "pixels; smaller faces are not classified"),
        .number("minDetectionScore", \.minDetectionScore, in: 0...1, "weaker detections are not classified"),
        .number(
            "minFrontal", \.minFrontal, in: 0...1,
            "faces turned further are not classified (1: facing the camera; 0: the nose over an eye)"),
        .number(
            "minSharpness", \.minSharpness, in: 0...10,
            "less sharp faces are not classified (Laplacian over pixel variance at 64 px; 0: all)"),
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
