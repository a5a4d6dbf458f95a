import Foundation
public import SentinelWire

extension Emotion {
    /// The expression a label names: Sentinel's own names and the common spellings of datasets and models (anger,
    /// happiness, sadness, surprised, ...), in any case; nil for a label that is none of the seven (contempt).
    public init?(label: String) {
        let name = label.trimmingCharacters(in: .whitespaces).lowercased()
        if let emotion = Emotion(rawValue: name) {
            self = emotion
            return
        }
        switch name {
        case "anger", "angered": self = .angry
        case "disgusted": self = .disgust
        case "fearful", "afraid", "scared": self = .fear
        case "happiness", "joy": self = .happy
        case "sadness": self = .sad
        case "surprised": self = .surprise
        case "calm", "neutrality": self = .neutral
        default: return nil
        }
    }
}

/// What an emotion classifier takes and gives, as `Models/models.yml` describes it: the crop (size, channels and
/// their order, mean and scale, margin, alignment), the output (probabilities or logits) and its labels, each read as
/// one of Sentinel's seven expressions or dropped. One network's tensor layout stays here; the rest of Sentinel sees
/// only `Emotion`.
public struct ClassifierDescription: Sendable, Equatable, Codable {
    public var input: Input
    public var crop: Crop
    public var output: Output
    /// The network's outputs in order, as its authors name them.
    public var labels: [String]
    /// How a label that is not one of the seven (nor a common spelling of one) is read: as one of them (`contempt:
    /// disgust`), or `none` (dropped; the others are scaled back to sum to one).
    public var map: [String: String]?
    /// The calibration a pipeline uses unless it gives its own (`emotion.calibration`), for a model without a head.
    public var calibration: EmotionCalibration?
    /// The layer a head reads (`eval emotion --fit` fits one over it); nil: a calibration of the seven outputs.
    public var features: FeatureLayer?
    /// The head a pipeline uses unless it gives its own (`emotion.head`): a file and its sha256.
    public var head: FileReference?

    public struct Input: Sendable, Equatable, Codable {
        public var width: Int
        public var height: Int
        public var channels: Channels
        /// Per channel of the network (one for grey), subtracted from the 0-255 pixel value.
        public var mean: [Double]
        /// Per channel: after the mean, values are divided by this.
        public var std: [Double]

        public init(width: Int, height: Int, channels: Channels, mean: [Double], std: [Double]) {
            self.width = width
            self.height = height
            self.channels = channels
            self.mean = mean
            self.std = std
        }
    }

    /// The network's channels, in its order.
    public enum Channels: String, Sendable, Equatable, Codable, CaseIterable {
        case grey, rgb, bgr
        public var count: Int { self == .grey ? 1 : 3 }
    }

    public struct Crop: Sendable, Equatable, Codable {
        /// Added to each side of the square around the face box, as a fraction of the box's longer side.
        public var margin: Double
        /// `eyes`: the crop is turned so that the eyes are level, where the detector gives landmarks (the first two,
        /// as `Detection.landmarks` orders them).
        public var align: Alignment

        public init(margin: Double, align: Alignment) {
            self.margin = margin
            self.align = align
        }
    }

    public enum Alignment: String, Sendable, Equatable, Codable, CaseIterable {
        case none, eyes
    }

    public enum Output: String, Sendable, Equatable, Codable, CaseIterable {
        /// Values that sum to one (a softmax inside the network).
        case probabilities
        /// Scores a softmax turns into probabilities.
        case logits
    }

    public init(
        input: Input, crop: Crop, output: Output, labels: [String], map: [String: String]? = nil,
        calibration: EmotionCalibration? = nil, features: FeatureLayer? = nil, head: FileReference? = nil
    ) {
        self.input = input
        self.crop = crop
        self.output = output
        self.labels = labels
        self.map = map
        self.calibration = calibration
        self.features = features
        self.head = head
    }

    /// The expression each output is read as (nil: dropped), or the first problem: a label neither one of the seven
    /// nor mapped, a map to an unknown expression, a size or channel count that cannot be.
    public func readings() throws(DescriptionProblem) -> [Emotion?] {
        guard (1...4096).contains(input.width), (1...4096).contains(input.height) else {
            throw DescriptionProblem("input", "width and height must be 1 to 4096 pixels")
        }
        guard input.mean.count == input.channels.count, input.std.count == input.channels.count else {
            throw DescriptionProblem(
                "input", "\(input.channels.rawValue) needs \(input.channels.count) mean and std values, one a channel")
        }
        guard input.std.allSatisfy({ $0.isFinite && $0 != 0 }), input.mean.allSatisfy(\.isFinite) else {
            throw DescriptionProblem("input", "mean must be finite and std finite and not 0")
        }
        guard crop.margin.isFinite, (0...1).contains(crop.margin) else {
            throw DescriptionProblem("crop.margin", "must be 0 to 1 (a fraction of the face box's side)")
        }
        guard !labels.isEmpty, labels.count <= 1000 else { throw DescriptionProblem("labels", "1 to 1000 labels") }
        var readings: [Emotion?] = []
        for label in labels {
            if let target = map?[label] {
                if target == "none" {
                    readings.append(nil)
                } else if let emotion = Emotion(label: target) {
                    readings.append(emotion)
                } else {
                    throw DescriptionProblem(
                        "map.\(label)", "\"\(target)\" is none of \(Emotion.names) (or none, to drop the label)")
                }
            } else if let emotion = Emotion(label: label) {
                readings.append(emotion)
            } else {
                throw DescriptionProblem(
                    "labels", "\(label) is none of \(Emotion.names): say under map: what it is read as, or none")
            }
        }
        guard readings.contains(where: { $0 != nil }) else {
            throw DescriptionProblem("labels", "no label is read as an expression")
        }
        if let unused = map?.keys.sorted().first(where: { !labels.contains($0) }) {
            throw DescriptionProblem("map.\(unused)", "the model has no label \(unused)")
        }
        if let features, features.layer.isEmpty || !(1...1 << 20).contains(features.size) {
            throw DescriptionProblem("features", "a layer's name and its size, 1 to \(1 << 20) values")
        }
        if head != nil, features == nil {
            throw DescriptionProblem("head", "a head reads a feature layer: name it under features: (layer, size)")
        }
        return readings
    }

    /// The model's probability of each of the seven (in `Emotion.allCases` order) from the outputs of one or more
    /// crops of a face (the crop and its mirror image), each as long as `labels`: softmax where the outputs are logits,
    /// the crops averaged, labels read as one expression summed, dropped labels removed and the rest scaled to one.
    /// `readings` is `readings()`.
    public func probabilities(from outputs: [[Double]], readings: [Emotion?]) -> [Double] {
        var sum = [Double](repeating: 0, count: Emotion.allCases.count)
        for crop in outputs where crop.count == readings.count {
            let probabilities = output == .logits ? Self.softmax(crop) : crop.map { max(0, $0) }
            let total = probabilities.reduce(0, +)
            guard total > 0, total.isFinite else { continue }
            for (probability, emotion) in zip(probabilities, readings) {
                if let emotion { sum[Emotion.allCases.firstIndex(of: emotion)!] += probability / total }
            }
        }
        let total = sum.reduce(0, +)
        guard total > 0, total.isFinite else { return sum.map { _ in 1 / Double(sum.count) } }
        return sum.map { $0 / total }
    }

    /// Why one crop's outputs are no reading, or nil: a value that is not a number or infinite; for probabilities, one
    /// below 0 or above 1 (or none above 0); for logits, one beyond 1e6 either way. A model gone wrong, read as if
    /// right, gives every face the same reading and a gauge that means nothing.
    public func outputProblem(_ values: [Double]) -> String? {
        func shown(_ value: Double) -> String { String(format: "%.4g", value) }
        if let bad = values.first(where: { !$0.isFinite }) { return "\(shown(bad)), which is no number" }
        switch output {
        case .probabilities:
            let slack = 1e-3
            if let bad = values.first(where: { $0 < -slack || $0 > 1 + slack }) {
                return "\(shown(bad)), which is no probability (0 to 1)"
            }
            if !values.contains(where: { $0 > 0 }) { return "no probability above 0" }
        case .logits:
            if let bad = values.first(where: { abs($0) > 1e6 }) {
                return "\(shown(bad)), beyond the 1e6 a logit may reach"
            }
        }
        return nil
    }

    public static func softmax(_ values: [Double]) -> [Double] {
        let top = values.max() ?? 0
        let exps = values.map { $0.isFinite ? exp($0 - top) : 0 }
        let total = exps.reduce(0, +)
        return total > 0 ? exps.map { $0 / total } : exps
    }
}

/// A problem in a classifier's description: where in it, and what.
public struct DescriptionProblem: Error, Sendable, CustomStringConvertible {
    public let field: String
    public let message: String
    public init(_ field: String, _ message: String) {
        self.field = field
        self.message = message
    }
    public var description: String { "\(field): \(message)" }
}

extension Emotion {
    /// The seven names, for messages.
    public static var names: String { allCases.map(\.rawValue).joined(separator: ", ") }
}

/// How a model's probabilities become a reading Sentinel publishes: a temperature, and a scale and an offset per
/// expression (`softmax(scale * log p / temperature + offset)`, fitted by log-loss on labelled faces: the model's
/// confidence made to match how often it is right, and its bias between expressions corrected), and the valence each
/// expression's calibrated probability carries (fitted by least squares to the labels' valence; by default each
/// expression's own). Identity by default.
public struct EmotionCalibration: Sendable, Equatable, Codable {
    public var temperature: Double
    /// Per expression, in `Emotion.allCases` order.
    public var scales: [Double]
    /// Per expression, in `Emotion.allCases` order.
    public var offsets: [Double]
    /// Per expression, in `Emotion.allCases` order, each -1 to 1.
    public var valence: [Double]
    /// What it was fitted on and how (free text, for the operator).
    public var fitted: String?
    /// How the faces it was fitted on were cropped (nil: not recorded).
    public var fittedWith: CropRecord?

    public static let identity = EmotionCalibration(
        temperature: 1, scales: Emotion.allCases.map { _ in 1 }, offsets: Emotion.allCases.map { _ in 0 },
        valence: Emotion.allCases.map(\.valence))

    public init(
        temperature: Double, scales: [Double], offsets: [Double], valence: [Double], fitted: String? = nil,
        fittedWith: CropRecord? = nil
    ) {
        self.temperature = temperature
        self.scales = scales
        self.offsets = offsets
        self.valence = valence
        self.fitted = fitted
        self.fittedWith = fittedWith
    }

    /// The reading of a face whose model probabilities (seven, in `Emotion.allCases` order) are `probabilities`.
    public func reading(_ probabilities: [Double]) -> EmotionReading {
        let calibrated = Self.calibrated(
            probabilities.map { log(max($0, Self.floor)) }, scales: scales.map { $0 / temperature }, offsets: offsets)
        return EmotionReading(
            probabilities: calibrated, valence: max(-1, min(1, zip(calibrated, valence).reduce(0) { $0 + $1.0 * $1.1 }))
        )
    }

    /// Probabilities below this count as this (a log of 0 is minus infinity).
    public static let floor = 1e-6

    /// `softmax(logits * scales + offsets)`, element by element.
    public static func calibrated(_ logits: [Double], scales: [Double], offsets: [Double]) -> [Double] {
        ClassifierDescription.softmax(logits.indices.map { logits[$0] * scales[$0] + offsets[$0] })
    }

    /// Every value finite, the temperature positive, seven offsets and seven valences in -1...1; else what is wrong.
    public var problem: String? {
        guard temperature.isFinite, (0.05...100).contains(temperature) else { return "temperature must be 0.05 to 100" }
        guard scales.count == Emotion.allCases.count, scales.allSatisfy({ (0...100).contains($0) }) else {
            return "scales: one per expression (\(Emotion.names)), each 0 to 100"
        }
        guard offsets.count == Emotion.allCases.count, offsets.allSatisfy({ $0.isFinite && abs($0) <= 50 }) else {
            return "offsets: one per expression (\(Emotion.names)), each finite, -50 to 50"
        }
        guard valence.count == Emotion.allCases.count, valence.allSatisfy({ (-1...1).contains($0) }) else {
            return "valence: one per expression (\(Emotion.names)), each -1 to 1"
        }
        return nil
    }

    /// A pipeline file's `emotion.calibration:` section (`offsets:` and `valence:` are subsections, by expression).
    public static let settings: [Setting<EmotionCalibration>] = [
        .number(
            "temperature", \.temperature, in: 0.05...100,
            "the model's log-probabilities are divided by this (above 1: less sure)"),
        .optionalText("fitted", \.fitted, "what it was fitted on, for the operator"),
    ]

    /// `emotion.calibration.scales:`, one per expression.
    public static let scaleSettings: [Setting<EmotionCalibration>] = Emotion.allCases.indices.map { index in
        .number(
            Emotion.allCases[index].rawValue, \EmotionCalibration.scales[index], in: 0...100,
            "the expression's log-probability is multiplied by this")
    }

    /// `emotion.calibration.offsets:`, one per expression.
    public static let offsetSettings: [Setting<EmotionCalibration>] = Emotion.allCases.indices.map { index in
        .number(
            Emotion.allCases[index].rawValue, \EmotionCalibration.offsets[index], in: -50...50,
            "added to the expression's calibrated log-probability")
    }

    /// `emotion.calibration.valence:`, one per expression.
    public static let valenceSettings: [Setting<EmotionCalibration>] = Emotion.allCases.indices.map { index in
        .number(
            Emotion.allCases[index].rawValue, \EmotionCalibration.valence[index], in: -1...1,
            "the valence the expression's probability carries")
    }

    /// `emotion.calibration.fittedWith:`, how the faces it was fitted on were cropped.
    public static let cropSettings: [Setting<CropRecord>] = [
        .number("margin", \.margin, in: 0...1, "the model's crop.margin"),
        .flag("align", \.align, "whether the crop was turned by the eyes"),
        .flag("mirror", \.mirror, "whether the mirror image was read too"),
    ]

    /// The calibration as it is written: every figure to four decimals.
    public var rounded: EmotionCalibration {
        func r(_ x: Double) -> Double { (x * 10_000).rounded() / 10_000 }
        return EmotionCalibration(
            temperature: r(temperature), scales: scales.map(r), offsets: offsets.map(r), valence: valence.map(r),
            fitted: fitted, fittedWith: fittedWith)
    }

    /// The calibration, `rounded`, as the keys of a pipeline's `emotion.calibration:` section and their values, read
    /// off the setting tables that section is read with: what `sentinel eval emotion --fit --apply` writes, and
    /// (`block`) what it prints. Text is JSON-quoted, which YAML reads back as written.
    public var entries: [(key: String, value: String)] {
        let written = rounded
        var entries: [(key: String, value: String)] = []
        func add<Owner>(_ prefix: String, _ table: [Setting<Owner>], _ owner: Owner) {
            for setting in table {
                guard case .optionalText(let path) = setting.kind else {
                    entries.append((prefix + setting.key, setting.value(in: owner)))
                    continue
                }
                guard let text = owner[keyPath: path]?.yamlQuoted else { continue }
                entries.append((prefix + setting.key, text))
            }
        }
        add("", Self.settings, written)
        add("scales.", Self.scaleSettings, written)
        add("offsets.", Self.offsetSettings, written)
        add("valence.", Self.valenceSettings, written)
        if let crop = written.fittedWith { add("fittedWith.", Self.cropSettings, crop) }
        return entries
    }

    /// `entries` as a `calibration:` block of Models/models.yml or of a pipeline's `emotion:` section, a subsection
    /// on one line.
    public var block: [String] {
        var lines = ["calibration:"]
        var sections: [(name: String, items: [String])] = []
        for (key, value) in entries {
            guard let dot = key.firstIndex(of: ".") else {
                lines.append("  \(key): \(value)")
                continue
            }
            let (name, item) = (String(key[..<dot]), "\(key[key.index(after: dot)...]): \(value)")
            if sections.last?.name == name {
                sections[sections.count - 1].items.append(item)
            } else {
                sections.append((name, [item]))
            }
        }
        return lines + sections.map { "  \($0.name): { \($0.items.joined(separator: ", ")) }" }
    }

    enum CodingKeys: String, CodingKey { case temperature, scales, offsets, valence, fitted, fittedWith }

    /// Scales, offsets and valence by expression name; one left out keeps its default (1, 0, its own valence).
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        temperature = try container.decodeIfPresent(Double.self, forKey: .temperature) ?? 1
        fitted = try container.decodeIfPresent(String.self, forKey: .fitted)
        fittedWith = try container.decodeIfPresent(CropRecord.self, forKey: .fittedWith)
        func values(_ key: CodingKeys, _ defaults: [Double]) throws -> [Double] {
            var values = defaults
            for (name, value) in try container.decodeIfPresent([String: Double].self, forKey: key) ?? [:] {
                guard let emotion = Emotion(rawValue: name) else {
                    throw DecodingError.dataCorruptedError(
                        forKey: key, in: container, debugDescription: "\(name) is none of \(Emotion.names)")
                }
                values[Emotion.allCases.firstIndex(of: emotion)!] = value
            }
            return values
        }
        scales = try values(.scales, Self.identity.scales)
        offsets = try values(.offsets, Self.identity.offsets)
        valence = try values(.valence, Self.identity.valence)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(temperature, forKey: .temperature)
        let names = Emotion.allCases.map(\.rawValue)
        try container.encode(Dictionary(uniqueKeysWithValues: zip(names, scales)), forKey: .scales)
        try container.encode(Dictionary(uniqueKeysWithValues: zip(names, offsets)), forKey: .offsets)
        try container.encode(Dictionary(uniqueKeysWithValues: zip(names, valence)), forKey: .valence)
        try container.encodeIfPresent(fitted, forKey: .fitted)
        try container.encodeIfPresent(fittedWith, forKey: .fittedWith)
    }
}

/// One reading of one face: what the smoother and the gauge are fed.
public struct EmotionReading: Sendable, Equatable {
    /// Calibrated, in `Emotion.allCases` order, summing to one.
    public var probabilities: [Double]
    /// -1 to 1, under the calibration's valence per expression.
    public var valence: Double

    public init(probabilities: [Double], valence: Double) {
        self.probabilities = probabilities
        self.valence = valence
    }

    /// The most probable expression and its probability.
    public var top: (emotion: Emotion, probability: Double) {
        let best = probabilities.indices.max { probabilities[$0] < probabilities[$1] } ?? 0
        return (Emotion.allCases[best], probabilities.isEmpty ? 0 : probabilities[best])
    }
}
