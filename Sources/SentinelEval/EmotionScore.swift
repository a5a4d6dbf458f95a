public import SentinelCore
public import SentinelWire

/// How well readings of labelled faces match their labels: accuracy, recall per expression and their unweighted
/// mean, the confusion matrix, the expected calibration error of the top probability, the mean valence published per
/// true expression, and the correlation of published valence with the labels' own (`Emotion.valence`).
public struct EmotionScore: Sendable, Codable, Equatable {
    public var faces: Int
    public var accuracy: Double
    /// Per true expression present in the labels.
    public var recall: [String: Double]
    /// The mean of `recall` over the expressions present (each counts alike, however many photos it has).
    public var meanRecall: Double
    /// `confusion[truth][read]`: photos of each true expression read as each expression.
    public var confusion: [String: [String: Int]]
    /// Over 15 equal bins of the top probability: the photos' share in each bin times the gap between the bin's mean
    /// top probability and its accuracy, summed.
    public var calibrationError: Double
    /// The mean top probability (what `emotionConfidence` would say on average).
    public var meanConfidence: Double
    /// Photos whose top probability is below `minConfidence` (published as unknown), as a share of all.
    public var unknownShare: Double
    /// Per true expression: the mean valence published.
    public var meanValence: [String: Double]
    /// Pearson's correlation between the published valence and the true expression's valence.
    public var valenceCorrelation: Double
    /// Per true expression: how many photos.
    public var counts: [String: Int]

    public static let bins = 15

    public init(_ faces: [(truth: Emotion, reading: EmotionReading)], minConfidence: Double) {
        self.faces = faces.count
        var counts: [Emotion: Int] = [:]
        var right: [Emotion: Int] = [:]
        var confusion: [String: [String: Int]] = [:]
        var valence: [Emotion: Double] = [:]
        for (truth, reading) in faces {
            let read = reading.top.emotion
            counts[truth, default: 0] += 1
            if read == truth { right[truth, default: 0] += 1 }
            confusion[truth.rawValue, default: [:]][read.rawValue, default: 0] += 1
            valence[truth, default: 0] += reading.valence
        }
        let present = Emotion.allCases.filter { counts[$0] != nil }
        accuracy = faces.isEmpty ? 0 : Double(right.values.reduce(0, +)) / Double(faces.count)
        recall = Dictionary(
            uniqueKeysWithValues: present.map { ($0.rawValue, Double(right[$0] ?? 0) / Double(counts[$0]!)) })
        meanRecall = present.isEmpty ? 0 : recall.values.reduce(0, +) / Double(present.count)
        self.confusion = confusion
        meanValence = Dictionary(
            uniqueKeysWithValues: present.map { ($0.rawValue, valence[$0]! / Double(counts[$0]!)) })
        self.counts = Dictionary(uniqueKeysWithValues: present.map { ($0.rawValue, counts[$0]!) })
        let tops = faces.map { (probability: $0.reading.top.probability, right: $0.reading.top.emotion == $0.truth) }
        calibrationError = Self.expectedCalibrationError(tops)
        meanConfidence = faces.isEmpty ? 0 : tops.map(\.probability).reduce(0, +) / Double(faces.count)
        unknownShare =
            faces.isEmpty ? 0 : Double(tops.filter { $0.probability < minConfidence }.count) / Double(faces.count)
        valenceCorrelation = Self.correlation(faces.map(\.reading.valence), faces.map(\.truth.valence))
    }

    /// The expected calibration error over `bins` equal bins of (0, 1]: each bin's share of the photos times the gap
    /// between its mean probability and its share right.
    public static func expectedCalibrationError(_ tops: [(probability: Double, right: Bool)], bins: Int = bins)
        -> Double
    {
        guard !tops.isEmpty else { return 0 }
        var sums = [(probability: Double, right: Int, count: Int)](repeating: (0, 0, 0), count: bins)
        for top in tops {
            // Bins are (lower, upper]: a probability of exactly 1 is in the last, 0 in the first.
            let bin = min(bins - 1, max(0, Int((top.probability * Double(bins)).rounded(.up)) - 1))
            sums[bin].probability += top.probability
            sums[bin].right += top.right ? 1 : 0
            sums[bin].count += 1
        }
        return sums.filter { $0.count > 0 }.reduce(0) { error, bin in
            error + Double(bin.count) / Double(tops.count)
                * abs(bin.probability / Double(bin.count) - Double(bin.right) / Double(bin.count))
        }
    }

    /// Pearson's correlation; 0 where either side does not vary.
    public static func correlation(_ a: [Double], _ b: [Double]) -> Double {
        guard a.count == b.count, a.count > 1 else { return 0 }
        let n = Double(a.count)
        let ma = a.reduce(0, +) / n
        let mb = b.reduce(0, +) / n
        var ab = 0.0
        var aa = 0.0
        var bb = 0.0
        for (x, y) in zip(a, b) {
            ab += (x - ma) * (y - mb)
            aa += (x - ma) * (x - ma)
            bb += (y - mb) * (y - mb)
        }
        return aa > 0 && bb > 0 ? ab / (aa * bb).squareRoot() : 0
    }
}

extension EmotionScore {
    /// The figures a fit is judged by.
    public var figures: EmotionFigures {
        EmotionFigures(
            accuracy: accuracy, meanRecall: meanRecall, calibrationError: calibrationError,
            valenceCorrelation: valenceCorrelation, unreadShare: unknownShare)
    }
}
