public import Foundation
public import SentinelWire

/// What an emotion model gave for one face: its probabilities over the seven (in `Emotion.allCases` order) and, where
/// its description names a feature layer, that layer's values, averaged over the crop and its mirror image.
public struct FaceOutput: Sendable, Equatable {
    public var probabilities: [Double]
    public var features: [Float]?

    public init(probabilities: [Double], features: [Float]? = nil) {
        self.probabilities = probabilities
        self.features = features
    }
}

/// How the faces a head or calibration was fitted on were cropped: read another way, its figures do not hold, so
/// `sentinel check` refuses a pipeline whose emotion settings differ.
public struct CropRecord: Sendable, Equatable, Codable {
    /// The model description's `crop.margin`.
    public var margin: Double
    /// Whether the crop was turned by the eyes.
    public var align: Bool
    /// Whether the mirror image was read too.
    public var mirror: Bool

    public init(margin: Double, align: Bool, mirror: Bool) {
        self.margin = margin
        self.align = align
        self.mirror = mirror
    }

    /// The differences from `other` (how a pipeline reads), as `emotion.mirror: false, fitted with true`; empty when
    /// they agree.
    public func differences(from other: CropRecord) -> [String] {
        var found: [String] = []
        if abs(margin - other.margin) > 1e-9 {
            found.append("the model's crop.margin is \(other.margin), fitted with \(margin)")
        }
        if align != other.align { found.append("emotion.align: \(other.align), fitted with \(align)") }
        if mirror != other.mirror { found.append("emotion.mirror: \(other.mirror), fitted with \(mirror)") }
        return found
    }
}

/// A file a model's description or a pipeline names, with the checksum it must have.
public struct FileReference: Sendable, Equatable, Codable {
    /// Absolute, or a name looked for in the models' folders (beside the models, then beside models.yml).
    public var file: String
    public var sha256: String

    public init(file: String, sha256: String) {
        self.file = file
        self.sha256 = sha256
    }
}

/// A classifier's layer whose values a head reads: its name in the model's graph and its size for one image.
public struct FeatureLayer: Sendable, Equatable, Codable {
    public var layer: String
    public var size: Int

    public init(layer: String, size: Int) {
        self.layer = layer
        self.size = size
    }
}

/// A last layer fitted to labelled faces in place of the model's own: a linear map from the model's feature layer to
/// the seven expressions, a temperature, and the valence each expression carries. `softmax((weights . features + bias)
/// / temperature)` is the reading; its valence is the probabilities times `valence`. Kept as a JSON file beside the
/// model, written by `sentinel eval emotion --fit`, with what it was fitted on.
public struct EmotionHead: Sendable, Equatable, Codable {
    public static let format = "sentinel-emotion-head/1"
    public var format: String
    /// The model's feature layer it reads.
    public var features: FeatureLayer
    /// The sha256 of the model file whose features it was fitted on.
    public var modelSHA256: String
    public var crop: CropRecord
    /// In `Emotion.allCases` order: each a row of `features.size` weights.
    public var weights: [[Double]]
    public var bias: [Double]
    public var temperature: Double
    public var valence: [Double]
    public var fitted: Fitted

    /// What the head was fitted on and how.
    public struct Fitted: Sendable, Equatable, Codable {
        /// The command, as run.
        public var command: String
        /// The labels' fingerprint (`EmotionLabels.fingerprint`: names and labels of the photos).
        public var labels: String
        public var faces: Int
        public var people: Int
        /// The regularisation (sklearn's C: the inverse of the L2 penalty) and class weighting chosen.
        public var c: Double
        public var classWeight: String
        /// Its figures on the faces it was fitted on, cross-validated by person (none in a head written before they
        /// were recorded).
        public var figures: EmotionFigures?

        public init(
            command: String, labels: String, faces: Int, people: Int, c: Double, classWeight: String,
            figures: EmotionFigures?
        ) {
            self.command = command
            self.labels = labels
            self.faces = faces
            self.people = people
            self.c = c
            self.classWeight = classWeight
            self.figures = figures
        }
    }

    public init(
        features: FeatureLayer, modelSHA256: String, crop: CropRecord, weights: [[Double]], bias: [Double],
        temperature: Double, valence: [Double] = Emotion.allCases.map(\.valence), fitted: Fitted
    ) {
        self.format = Self.format
        self.features = features
        self.modelSHA256 = modelSHA256
        self.crop = crop
        self.weights = weights
        self.bias = bias
        self.temperature = temperature
        self.valence = valence
        self.fitted = fitted
    }

    /// The head's logits for `features` (before the temperature).
    public func logits(_ features: [Float]) -> [Double] {
        zip(weights, bias).map { row, bias in
            var sum = bias
            for j in 0..<min(row.count, features.count) { sum += row[j] * Double(features[j]) }
            return sum
        }
    }

    /// The reading of a face whose feature layer gave `features`.
    public func reading(_ features: [Float]) -> EmotionReading {
        let probabilities = ClassifierDescription.softmax(logits(features).map { $0 / temperature })
        return EmotionReading(
            probabilities: probabilities,
            valence: max(-1, min(1, zip(probabilities, valence).reduce(0) { $0 + $1.0 * $1.1 })))
    }

    /// The first thing that makes it unusable, in words; nil when it is whole.
    public var problem: String? {
        let k = Emotion.allCases.count
        guard format == Self.format else { return "format is \(format), expected \(Self.format)" }
        guard (1...1 << 20).contains(features.size) else { return "features.size must be 1 to \(1 << 20)" }
        guard weights.count == k, weights.allSatisfy({ $0.count == features.size }) else {
            return "weights: \(k) rows (\(Emotion.names)) of features.size (\(features.size)) values each"
        }
        guard bias.count == k, valence.count == k else { return "bias and valence: \(k) values each" }
        guard weights.allSatisfy({ $0.allSatisfy(\.isFinite) }), bias.allSatisfy(\.isFinite) else {
            return "weights and bias must be finite"
        }
        guard temperature.isFinite, (0.05...100).contains(temperature) else { return "temperature must be 0.05 to 100" }
        guard valence.allSatisfy({ (-1...1).contains($0) }) else { return "valence: each -1 to 1" }
        return nil
    }

    /// The head in a file, checked whole (a file's problem names the file).
    public static func read(_ data: Data, file: String) throws(ModelFileProblem) -> EmotionHead {
        let head: EmotionHead
        // What the file says is shown, never sent to a terminal.
        do { head = try JSONDecoder().decode(EmotionHead.self, from: data) } catch {
            throw ModelFileProblem(
                "\(file) is not an emotion head (\(Self.format) JSON): \(error)".controlCharactersShown)
        }
        if let problem = head.problem { throw ModelFileProblem("\(file): \(problem)".controlCharactersShown) }
        return head
    }

    /// As written to its file: one weight row a line, so that a change reads as a diff.
    public func json() -> Data {
        func number(_ x: Double) -> String { String(format: "%.5g", x) }
        func list(_ xs: [Double]) -> String { "[" + xs.map(number).joined(separator: ", ") + "]" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        func string(_ s: String) -> String {
            String(decoding: (try? encoder.encode(s)) ?? Data("\"\"".utf8), as: UTF8.self)
        }
        var figures = ""
        if let f = fitted.figures {
            let values: [(String, Double)] = [
                ("accuracy", f.accuracy), ("meanRecall", f.meanRecall), ("calibrationError", f.calibrationError),
                ("valenceCorrelation", f.valenceCorrelation), ("unreadShare", f.unreadShare),
            ]
            figures = ", \"figures\": {" + values.map { "\"\($0.0)\": \(number($0.1))" }.joined(separator: ", ") + "}"
        }
        let lines = [
            "{",
            "  \"format\": \(string(format)),",
            "  \"features\": {\"layer\": \(string(features.layer)), \"size\": \(features.size)},",
            "  \"modelSHA256\": \(string(modelSHA256)),",
            "  \"crop\": {\"margin\": \(number(crop.margin)), \"align\": \(crop.align), \"mirror\": \(crop.mirror)},",
            "  \"fitted\": {\"command\": \(string(fitted.command)), \"labels\": \(string(fitted.labels)), "
                + "\"faces\": \(fitted.faces), \"people\": \(fitted.people), \"c\": \(number(fitted.c)), "
                + "\"classWeight\": \(string(fitted.classWeight))\(figures)},",
            "  \"labels\": [" + Emotion.allCases.map { string($0.rawValue) }.joined(separator: ", ") + "],",
            "  \"temperature\": \(number(temperature)),",
            "  \"valence\": \(list(valence)),",
            "  \"bias\": \(list(bias)),",
            "  \"weights\": [",
            weights.map { "    " + list($0) }.joined(separator: ",\n"),
            "  ]",
            "}",
        ]
        return Data((lines.joined(separator: "\n") + "\n").utf8)
    }

    enum CodingKeys: String, CodingKey {
        case format, features, modelSHA256, crop, weights, bias, temperature, valence, fitted, labels
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        format = try c.decode(String.self, forKey: .format)
        features = try c.decode(FeatureLayer.self, forKey: .features)
        modelSHA256 = try c.decode(String.self, forKey: .modelSHA256)
        crop = try c.decode(CropRecord.self, forKey: .crop)
        weights = try c.decode([[Double]].self, forKey: .weights)
        bias = try c.decode([Double].self, forKey: .bias)
        temperature = try c.decode(Double.self, forKey: .temperature)
        valence = try c.decode([Double].self, forKey: .valence)
        fitted = try c.decode(Fitted.self, forKey: .fitted)
        // The rows are in Sentinel's order; a file in another order is another head.
        let labels = try c.decode([String].self, forKey: .labels)
        guard labels == Emotion.allCases.map(\.rawValue) else {
            throw DecodingError.dataCorruptedError(
                forKey: .labels, in: c, debugDescription: "labels must be \(Emotion.names), in that order")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(format, forKey: .format)
        try c.encode(features, forKey: .features)
        try c.encode(modelSHA256, forKey: .modelSHA256)
        try c.encode(crop, forKey: .crop)
        try c.encode(weights, forKey: .weights)
        try c.encode(bias, forKey: .bias)
        try c.encode(temperature, forKey: .temperature)
        try c.encode(valence, forKey: .valence)
        try c.encode(fitted, forKey: .fitted)
        try c.encode(Emotion.allCases.map(\.rawValue), forKey: .labels)
    }
}

/// How well readings match labelled faces, in the figures a fit is judged by: accuracy, recall's mean over labels, the
/// calibration error of the top probability, the correlation of published valence with the labels', and the share of
/// faces read below `emotion.minConfidence` (published as unknown).
public struct EmotionFigures: Sendable, Equatable, Codable {
    public var accuracy: Double
    public var meanRecall: Double
    public var calibrationError: Double
    public var valenceCorrelation: Double
    public var unreadShare: Double

    public init(
        accuracy: Double, meanRecall: Double, calibrationError: Double, valenceCorrelation: Double, unreadShare: Double
    ) {
        self.accuracy = accuracy
        self.meanRecall = meanRecall
        self.calibrationError = calibrationError
        self.valenceCorrelation = valenceCorrelation
        self.unreadShare = unreadShare
    }

    /// More than this share of faces unread and a reading is as good as switched off.
    public static let mostUnread = 0.5
    /// Differences this small are the same figure (a refit on another processor, the figures rounded in a file).
    public static let tolerance = 0.005

    /// What makes these figures a worse reading than `other`'s, in words (empty when none): a valence correlation
    /// lower or a calibration error higher by more than `tolerance`, or (whatever `other` is) more than half of the
    /// faces unread. Accuracy alone can rise while the mood it feeds turns around: it is not what a reading is judged by.
    public func worse(than other: EmotionFigures?) -> [String] {
        var found: [String] = []
        func figure(_ x: Double) -> String { String(format: "%.3f", x) }
        if let other, valenceCorrelation < other.valenceCorrelation - Self.tolerance {
            found.append(
                "valence correlation \(figure(valenceCorrelation)), below \(figure(other.valenceCorrelation))")
        }
        if let other, calibrationError > other.calibrationError + Self.tolerance {
            found.append("calibration error \(figure(calibrationError)), above \(figure(other.calibrationError))")
        }
        if unreadShare > Self.mostUnread {
            found.append(
                String(
                    format: "%.0f %% of faces read below emotion.minConfidence (published as unknown)",
                    unreadShare * 100))
        }
        return found
    }
}

/// A model file (a head) that cannot be used, in words naming the file.
public struct ModelFileProblem: Error, Sendable, CustomStringConvertible {
    public let description: String
    public init(_ description: String) { self.description = description }
}

/// How a model's output becomes a reading: a head over its feature layer, or a calibration of its seven probabilities.
public enum EmotionReadout: Sendable, Equatable {
    case calibration(EmotionCalibration)
    case head(EmotionHead)

    /// The reading of one face's output; a head needs the feature layer's values (nil without them).
    public func reading(_ output: FaceOutput) -> EmotionReading? {
        switch self {
        case .calibration(let calibration): return calibration.reading(output.probabilities)
        case .head(let head):
            guard let features = output.features, features.count == head.features.size else { return nil }
            return head.reading(features)
        }
    }

    /// How the faces it was fitted on were cropped, where it says.
    public var crop: CropRecord? {
        switch self {
        case .calibration(let calibration): calibration.fittedWith
        case .head(let head): head.crop
        }
    }

    /// What it was fitted on, for the operator.
    public var fitted: String? {
        switch self {
        case .calibration(let calibration): calibration.fitted
        case .head(let head): "\(head.fitted.command); labels \(head.fitted.labels)"
        }
    }

    /// The figures it recorded when fitted, cross-validated on the faces it was fitted on (a head's; none for a
    /// calibration).
    public var figures: EmotionFigures? {
        switch self {
        case .calibration: nil
        case .head(let head): head.fitted.figures
        }
    }
}
