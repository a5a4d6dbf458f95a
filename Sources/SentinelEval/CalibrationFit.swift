import Foundation
public import SentinelCore
public import SentinelWire

/// Fits an `EmotionCalibration` to labelled faces: the scales and offsets by log-loss (multinomial logistic regression
/// on the model's log-probabilities, one slope and one intercept per expression: vector scaling, Newton's method),
/// then the valence per expression by least squares of the calibrated probabilities on the labels' valence (kept in
/// -1...1, pulled lightly towards each expression's own). Figures about a fit are only quoted cross-validated:
/// `crossValidated` fits each fold on the others and reads the fold with it.
public enum CalibrationFit {
    public struct Sample: Sendable {
        /// The model's probabilities over the seven, before calibration.
        public var probabilities: [Double]
        public var truth: Emotion
        /// Samples of one group (a person) fall in one fold.
        public var group: String

        public init(probabilities: [Double], truth: Emotion, group: String) {
            self.probabilities = probabilities
            self.truth = truth
            self.group = group
        }
    }

    /// How hard the scales are held at 1 and the offsets at 0, and the valence at each expression's own, against the
    /// data.
    static let ridge = 1e-3
    static let valenceRidge = 1.0

    /// The calibration that fits `samples` best.
    public static func fit(_ samples: [Sample]) -> EmotionCalibration {
        guard !samples.isEmpty else { return .identity }
        let logits = samples.map { $0.probabilities.map { log(max($0, EmotionCalibration.floor)) } }
        let truths = samples.map { Emotion.allCases.firstIndex(of: $0.truth)! }
        let (scales, offsets) = logLoss(logits, truths)
        let calibrated = logits.map { EmotionCalibration.calibrated($0, scales: scales, offsets: offsets) }
        let valence = leastSquaresValence(calibrated, samples.map(\.truth.valence))
        // The mean scale as a temperature, the scales about it: the same calibration, read as "how much surer".
        let mean = scales.reduce(0, +) / Double(scales.count)
        return EmotionCalibration(
            temperature: 1 / mean, scales: scales.map { $0 / mean }, offsets: offsets, valence: valence)
    }

    /// Each sample's reading by a calibration fitted on the other folds, with the folds' group counts. Groups go to
    /// `folds` folds by a hash of their name (the same split every run).
    public static func crossValidated(_ samples: [Sample], folds: Int) -> [(truth: Emotion, reading: EmotionReading)] {
        let fold = samples.map { self.fold(of: $0.group, folds: folds) }
        var readings = [(truth: Emotion, reading: EmotionReading)?](repeating: nil, count: samples.count)
        for k in 0..<max(folds, 1) {
            let training = samples.indices.filter { fold[$0] != k }.map { samples[$0] }
            let calibration = fit(training)
            for i in samples.indices where fold[i] == k {
                readings[i] = (samples[i].truth, calibration.reading(samples[i].probabilities))
            }
        }
        return readings.compactMap { $0 }
    }

    /// The fold a group falls in: by FNV-1a of its name, a split that does not change between runs (Swift's `Hasher` is
    /// seeded per process).
    public static func fold(of group: String, folds: Int) -> Int {
        let hash = group.utf8.reduce(14_695_981_039_346_656_037 as UInt64) { ($0 ^ UInt64($1)) &* 1_099_511_628_211 }
        return Int(hash % UInt64(max(folds, 1)))
    }

    /// Scales and offsets minimising the mean log-loss of `softmax(scales * logits + offsets)` (plus a small ridge
    /// holding the scales at 1 and the offsets at 0, which also fixes the offsets' sum), by damped Newton steps.
    static func logLoss(_ logits: [[Double]], _ truths: [Int]) -> (scales: [Double], offsets: [Double]) {
        let k = Emotion.allCases.count
        // Parameters: the scales in 0..<k, the offsets in k..<2k.
        var theta = [Double](repeating: 1, count: k) + [Double](repeating: 0, count: k)
        let prior = theta
        func split(_ theta: [Double]) -> ([Double], [Double]) { (Array(theta[..<k]), Array(theta[k...])) }
        func loss(_ theta: [Double]) -> Double {
            let (scales, offsets) = split(theta)
            var total = 0.0
            for (z, y) in zip(logits, truths) {
                total -= log(max(EmotionCalibration.calibrated(z, scales: scales, offsets: offsets)[y], 1e-300))
            }
            return total / Double(logits.count) + ridge / 2
                * zip(theta, prior).reduce(0) { $0 + ($1.0 - $1.1) * ($1.0 - $1.1) }
        }
        var current = loss(theta)
        for _ in 0..<100 {
            let (scales, offsets) = split(theta)
            var gradient = [Double](repeating: 0, count: 2 * k)
            var hessian = [[Double]](repeating: [Double](repeating: 0, count: 2 * k), count: 2 * k)
            for (z, y) in zip(logits, truths) {
                let p = EmotionCalibration.calibrated(z, scales: scales, offsets: offsets)
                // Class c's features: z_c in scale slot c, 1 in offset slot c; the Hessian is their covariance under p.
                for c in 0..<k {
                    let residual = p[c] - (c == y ? 1 : 0)
                    gradient[c] += residual * z[c]
                    gradient[k + c] += residual
                    for d in 0..<k {
                        let joint = (c == d ? p[c] : 0) - p[c] * p[d]
                        hessian[c][d] += joint * z[c] * z[d]
                        hessian[c][k + d] += joint * z[c]
                        hessian[k + c][d] += joint * z[d]
                        hessian[k + c][k + d] += joint
                    }
                }
            }
            let n = Double(logits.count)
            for i in 0..<(2 * k) {
                gradient[i] = gradient[i] / n + ridge * (theta[i] - prior[i])
                for j in 0..<(2 * k) { hessian[i][j] /= n }
                hessian[i][i] += ridge
            }
            guard let step = solve(hessian, gradient) else { break }
            var rate = 1.0
            var accepted = false
            while rate > 1e-6 {
                let next = zip(theta, step).map { $0 - rate * $1 }
                let value = loss(next)
                if value <= current, next[..<k].allSatisfy({ $0 > 0.01 && $0 < 100 }) {
                    accepted = current - value > 1e-12
                    theta = next
                    current = value
                    break
                }
                rate /= 2
            }
            if !accepted { break }
        }
        return split(theta)
    }

    /// Valence per expression minimising `sum (p . v - t)^2 + ridge * sum (v - own)^2`, each kept in -1...1 (a value
    /// past a bound is fixed there and the rest fitted again).
    static func leastSquaresValence(_ probabilities: [[Double]], _ targets: [Double]) -> [Double] {
        let k = Emotion.allCases.count
        let own = Emotion.allCases.map(\.valence)
        var fixed: [Int: Double] = [:]
        while true {
            let free = (0..<k).filter { fixed[$0] == nil }
            var a = [[Double]](repeating: [Double](repeating: 0, count: free.count), count: free.count)
            var b = [Double](repeating: 0, count: free.count)
            for (p, t) in zip(probabilities, targets) {
                let residual = t - fixed.reduce(0) { $0 + p[$1.key] * $1.value }
                for (i, c) in free.enumerated() {
                    b[i] += p[c] * residual
                    for (j, d) in free.enumerated() { a[i][j] += p[c] * p[d] }
                }
            }
            for (i, c) in free.enumerated() {
                a[i][i] += valenceRidge
                b[i] += valenceRidge * own[c]
            }
            guard let solution = solve(a, b) else { return own }
            var values = own
            for (c, value) in fixed { values[c] = value }
            for (i, c) in free.enumerated() { values[c] = solution[i] }
            let outside = free.filter { abs(values[$0]) > 1 }
            if outside.isEmpty { return values }
            for c in outside { fixed[c] = values[c] > 0 ? 1 : -1 }
        }
    }

    /// `x` with `a x = b` (Gaussian elimination with partial pivoting); nil when `a` is singular.
    static func solve(_ a: [[Double]], _ b: [Double]) -> [Double]? {
        var m = zip(a, b).map { $0 + [$1] }
        let n = b.count
        for column in 0..<n {
            guard let pivot = (column..<n).max(by: { abs(m[$0][column]) < abs(m[$1][column]) }),
                abs(m[pivot][column]) > 1e-14
            else { return nil }
            m.swapAt(column, pivot)
            for row in 0..<n where row != column {
                let factor = m[row][column] / m[column][column]
                if factor != 0 { for j in column...n { m[row][j] -= factor * m[column][j] } }
            }
        }
        return (0..<n).map { m[$0][n] / m[$0][$0] }
    }
}
