import Dispatch
import Foundation
public import SentinelCore
public import SentinelWire

/// Fits an `EmotionHead`: a multinomial logistic regression from a model's feature layer to the seven expressions, on
/// standardised features, as scikit-learn's `LogisticRegression` fits one (L2 penalty `1 / (2 C)` on the weights, not
/// the intercepts; classes weighted by their inverse frequency or not), then a temperature. `C` and the class weighting
/// are chosen by cross-validation grouped by person (each candidate's out-of-fold log-loss, every label counting
/// alike), the temperature on the chosen candidate's out-of-fold logits. Figures about a head are only quoted from
/// those out-of-fold readings: each face read by weights fitted without its person. (The choice of one candidate of six
/// and of the temperature is made on the same readings: a slight flattery, which figures on other people measure.)
public enum HeadFit {
    public struct Sample: Sendable {
        /// The model's feature layer for the face.
        public var features: [Float]
        public var truth: Emotion
        /// Samples of one group (a person) fall in one fold.
        public var group: String

        public init(features: [Float], truth: Emotion, group: String) {
            self.features = features
            self.truth = truth
            self.group = group
        }
    }

    /// A candidate of the choice: the inverse of the L2 penalty, and whether classes are weighted.
    public struct Candidate: Sendable, Equatable, CustomStringConvertible {
        public var c: Double
        public var balanced: Bool
        public init(c: Double, balanced: Bool) {
            self.c = c
            self.balanced = balanced
        }
        public var classWeight: String { balanced ? "balanced" : "none" }
        public var description: String { "C \(c), class weight \(classWeight)" }
    }

    /// The candidates tried, weakest penalty last (each fit starts from the previous one's solution).
    public static let candidates: [Candidate] = [0.001, 0.003, 0.01].flatMap { c in
        [Candidate(c: c, balanced: true), Candidate(c: c, balanced: false)]
    }

    /// A head's parameters on raw features (the standardisation folded in), the choice made and its temperature.
    public struct Fitted: Sendable {
        public var weights: [[Double]]
        public var bias: [Double]
        public var temperature: Double
        public var candidate: Candidate
        /// Each candidate's out-of-fold balanced log-loss, in `candidates` order.
        public var scores: [Double]
        /// Each sample read by the chosen candidate fitted on the other folds (at the temperature chosen on them all).
        public var crossValidated: [(truth: Emotion, reading: EmotionReading)]
    }

    /// The head that fits `samples` best: the candidate chosen by `folds`-fold cross-validation by group, the temperature
    /// on its out-of-fold logits, the weights fitted on every sample.
    public static func fit(_ samples: [Sample], folds: Int) -> Fitted {
        let data = Matrix(samples)
        let fold = samples.map { CalibrationFit.fold(of: $0.group, folds: folds) }
        // Out-of-fold logits of every candidate, fold by fold (the folds side by side on the machine's cores).
        let results = FoldResults(candidates: candidates.count, samples: samples.count)
        DispatchQueue.concurrentPerform(iterations: folds) { k in
            let training = samples.indices.filter { fold[$0] != k }
            let held = samples.indices.filter { fold[$0] == k }
            guard !training.isEmpty, !held.isEmpty else { return }
            let path = fitPath(data, rows: training)
            results.lock.withLock {
                for (c, model) in path.enumerated() {
                    for i in held { results.logits[c][i] = model.logits(data.row(i)) }
                }
            }
        }
        let outOfFold = results.logits
        let truths = samples.map { Emotion.allCases.firstIndex(of: $0.truth)! }
        let read = samples.indices.filter { !outOfFold[0][$0].isEmpty }
        var scores: [Double] = []
        var temperatures: [Double] = []
        for c in candidates.indices {
            let logits = read.map { outOfFold[c][$0] }
            let labels = read.map { truths[$0] }
            let temperature = bestTemperature(logits, labels)
            temperatures.append(temperature)
            scores.append(balancedLogLoss(logits.map { $0.map { $0 / temperature } }, labels))
        }
        let best = scores.indices.min { scores[$0] < scores[$1] } ?? 0
        let model = fitPath(data, rows: Array(samples.indices), upTo: best)[best]
        let (weights, bias) = model.raw
        let valence = Emotion.allCases.map(\.valence)
        let readings = read.map { i in
            let p = ClassifierDescription.softmax(outOfFold[best][i].map { $0 / temperatures[best] })
            return (
                samples[i].truth,
                EmotionReading(probabilities: p, valence: zip(p, valence).reduce(0) { $0 + $1.0 * $1.1 })
            )
        }
        return Fitted(
            weights: weights, bias: bias, temperature: temperatures[best], candidate: candidates[best], scores: scores,
            crossValidated: readings)
    }

    /// Out-of-fold logits by candidate and sample, written by the folds side by side under the lock.
    final class FoldResults: @unchecked Sendable {
        let lock = NSLock()
        var logits: [[[Double]]]
        init(candidates: Int, samples: Int) {
            logits = [[[Double]]](repeating: [[Double]](repeating: [], count: samples), count: candidates)
        }
    }

    // MARK: The regression

    /// Features as rows of doubles, standardised by the rows a fit uses.
    struct Matrix {
        let values: [Double]
        let columns: Int
        let truths: [Int]

        init(_ samples: [Sample]) {
            columns = samples.first?.features.count ?? 0
            values = samples.flatMap { $0.features.map(Double.init) }
            truths = samples.map { Emotion.allCases.firstIndex(of: $0.truth)! }
        }

        init(values: [Double], columns: Int, truths: [Int]) {
            self.values = values
            self.columns = columns
            self.truths = truths
        }

        func row(_ i: Int) -> ArraySlice<Double> { values[i * columns..<(i + 1) * columns] }
    }

    /// A fitted regression on standardised features.
    struct Model {
        /// Per class, `columns` weights on standardised features.
        var weights: [[Double]]
        var bias: [Double]
        var mean: [Double]
        var scale: [Double]

        func logits(_ x: ArraySlice<Double>) -> [Double] {
            zip(weights, bias).map { w, b in
                var sum = b
                for (j, v) in x.enumerated() { sum += w[j] * (v - mean[j]) / scale[j] }
                return sum
            }
        }

        /// The same map on raw features.
        var raw: (weights: [[Double]], bias: [Double]) {
            let weights = self.weights.map { w in w.indices.map { w[$0] / scale[$0] } }
            let bias = zip(self.weights, self.bias).map { w, b in
                b - w.indices.reduce(0) { $0 + w[$1] * mean[$1] / scale[$1] }
            }
            return (weights, bias)
        }
    }

    /// The candidates fitted in order on `rows` (each from the previous one's solution), up to `upTo`.
    static func fitPath(_ data: Matrix, rows: [Int], upTo last: Int? = nil) -> [Model] {
        let d = data.columns
        var mean = [Double](repeating: 0, count: d)
        var scale = [Double](repeating: 0, count: d)
        for i in rows { for j in 0..<d { mean[j] += data.values[i * d + j] } }
        mean = mean.map { $0 / Double(rows.count) }
        for i in rows {
            for j in 0..<d {
                let v = data.values[i * d + j] - mean[j]
                scale[j] += v * v
            }
        }
        // As scikit-learn's StandardScaler: the population deviation, 1 where a feature does not vary.
        scale = scale.map { $0 > 0 ? ($0 / Double(rows.count)).squareRoot() : 1 }
        var standardised = [Double](repeating: 0, count: rows.count * d)
        for (r, i) in rows.enumerated() {
            for j in 0..<d { standardised[r * d + j] = (data.values[i * d + j] - mean[j]) / scale[j] }
        }
        let truths = rows.map { data.truths[$0] }
        var models: [Model] = []
        var start: [Double]?
        for candidate in candidates.prefix((last ?? candidates.count - 1) + 1) {
            let (weights, bias, solution) = logistic(
                standardised, columns: d, truths: truths, c: candidate.c, balanced: candidate.balanced, start: start)
            start = solution
            models.append(Model(weights: weights, bias: bias, mean: mean, scale: scale))
        }
        return models
    }

    /// scikit-learn's multinomial `LogisticRegression(C: c, class_weight: balanced ? "balanced" : None)` on rows of
    /// `columns` values: the weights and intercepts minimising `sum_i w_i CE_i + ||W||^2 / (2 c)`, by L-BFGS. Classes
    /// absent from `truths` get zero weights and an intercept of -30 (scikit-learn leaves them out). Returns the
    /// solution vector too, to start the next fit from.
    public static func logistic(
        _ x: [Double], columns d: Int, truths: [Int], c: Double, balanced: Bool, start: [Double]? = nil,
        tolerance: Double = 1e-9
    ) -> (weights: [[Double]], bias: [Double], solution: [Double]) {
        let k = Emotion.allCases.count
        let n = truths.count
        let present = (0..<k).filter { truths.contains($0) }
        let m = present.count
        let index = Dictionary(uniqueKeysWithValues: present.enumerated().map { ($1, $0) })
        let y = truths.map { index[$0]! }
        var counts = [Double](repeating: 0, count: m)
        for label in y { counts[label] += 1 }
        let sampleWeight = y.map { balanced ? Double(n) / (Double(m) * counts[$0]) : 1 }
        let dimension = m * d + m
        // The objective scaled by 1/n (the same minimum, gentler numbers).
        let penalty = 1 / (c * Double(n))
        // The rows in single precision: the products below are most of a fit's time, and vectorise twice as wide.
        let rows = x.map(Float.init)
        var w = [Float](repeating: 0, count: m * d)
        var gw = [Float](repeating: 0, count: m * d)
        func evaluate(_ theta: [Double], _ gradient: inout [Double]) -> Double {
            var loss = 0.0
            for j in 0..<(m * d) {
                w[j] = Float(theta[j])
                gw[j] = 0
            }
            var gb = [Double](repeating: 0, count: m)
            var z = [Double](repeating: 0, count: m)
            rows.withUnsafeBufferPointer { xs in
                w.withUnsafeBufferPointer { ws in
                    gw.withUnsafeMutableBufferPointer { gs in
                        for i in 0..<n {
                            let row = xs.baseAddress! + i * d
                            for a in 0..<m {
                                z[a] = Double(Self.dot(ws.baseAddress! + a * d, row, d)) + theta[m * d + a]
                            }
                            let top = z.max()!
                            var total = 0.0
                            for a in 0..<m { total += exp(z[a] - top) }
                            let logTotal = log(total) + top
                            loss += sampleWeight[i] * (logTotal - z[y[i]])
                            for a in 0..<m {
                                let r = sampleWeight[i] * (exp(z[a] - logTotal) - (a == y[i] ? 1 : 0)) / Double(n)
                                let ga = gs.baseAddress! + a * d
                                let rf = Float(r)
                                for j in 0..<d { ga[j] += rf * row[j] }
                                gb[a] += r
                            }
                        }
                    }
                }
            }
            var squares = 0.0
            for j in 0..<(m * d) {
                squares += theta[j] * theta[j]
                gradient[j] = Double(gw[j]) + penalty * theta[j]
            }
            for a in 0..<m { gradient[m * d + a] = gb[a] }
            return loss / Double(n) + penalty / 2 * squares
        }
        let theta = LBFGS.minimise(
            start?.count == dimension ? start! : [Double](repeating: 0, count: dimension), tolerance: tolerance,
            evaluate)
        var weights = [[Double]](repeating: [Double](repeating: 0, count: d), count: k)
        var bias = [Double](repeating: -30, count: k)
        for (a, label) in present.enumerated() {
            weights[label] = Array(theta[a * d..<(a + 1) * d])
            bias[label] = theta[m * d + a]
        }
        return (weights, bias, theta)
    }

    /// `sum a[j] b[j]` over `count` values, sixteen lanes at a time (a sum in order does not vectorise).
    static func dot(_ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, _ count: Int) -> Float {
        var lanes = SIMD16<Float>()
        var j = 0
        while j + 16 <= count {
            lanes +=
                UnsafeRawPointer(a + j).loadUnaligned(as: SIMD16<Float>.self)
                * UnsafeRawPointer(b + j).loadUnaligned(as: SIMD16<Float>.self)
            j += 16
        }
        var sum = lanes.sum()
        while j < count {
            sum += a[j] * b[j]
            j += 1
        }
        return sum
    }

    /// The temperature minimising the mean log-loss of `softmax(logits / T)` (golden-section search on log T).
    static func bestTemperature(_ logits: [[Double]], _ truths: [Int]) -> Double {
        func loss(_ logT: Double) -> Double {
            let t = exp(logT)
            return zip(logits, truths).reduce(0) { sum, pair in
                let p = ClassifierDescription.softmax(pair.0.map { $0 / t })
                return sum - log(max(p[pair.1], 1e-300))
            }
        }
        var (a, b) = (log(0.05), log(20.0))
        let ratio = (5.0.squareRoot() - 1) / 2
        for _ in 0..<80 {
            let c = b - ratio * (b - a)
            let d = a + ratio * (b - a)
            if loss(c) < loss(d) { b = d } else { a = c }
        }
        return exp((a + b) / 2)
    }

    /// The mean over labels of each label's mean log-loss: every label counts alike, as the mean recall does.
    static func balancedLogLoss(_ logits: [[Double]], _ truths: [Int]) -> Double {
        var sums: [Int: (Double, Int)] = [:]
        for (z, y) in zip(logits, truths) {
            let p = ClassifierDescription.softmax(z)
            sums[y, default: (0, 0)].0 -= log(max(p[y], 1e-300))
            sums[y, default: (0, 0)].1 += 1
        }
        return sums.values.reduce(0) { $0 + $1.0 / Double($1.1) } / Double(max(sums.count, 1))
    }
}

/// Limited-memory BFGS with a backtracking line search (Nocedal and Wright, algorithm 7.4), for the smooth convex
/// objectives of the fits here. It stops when the objective falls by less than `tolerance` of itself in a step, or the
/// gradient's largest component is under 100 times that.
enum LBFGS {
    static func minimise(
        _ start: [Double], memory: Int = 10, iterations: Int = 5000, tolerance: Double,
        _ evaluate: ([Double], inout [Double]) -> Double
    ) -> [Double] {
        var x = start
        var g = [Double](repeating: 0, count: x.count)
        var f = evaluate(x, &g)
        var s: [[Double]] = []
        var y: [[Double]] = []
        func dot(_ a: [Double], _ b: [Double]) -> Double {
            var sum = 0.0
            for i in a.indices { sum += a[i] * b[i] }
            return sum
        }
        for _ in 0..<iterations {
            if g.reduce(0, { max($0, abs($1)) }) < tolerance * 100 { break }
            // The two-loop recursion: the direction -H g.
            var q = g
            var alphas: [Double] = []
            for i in stride(from: s.count - 1, through: 0, by: -1) {
                let alpha = dot(s[i], q) / dot(y[i], s[i])
                alphas.append(alpha)
                for j in q.indices { q[j] -= alpha * y[i][j] }
            }
            if let last = s.indices.last {
                let gamma = dot(s[last], y[last]) / dot(y[last], y[last])
                for j in q.indices { q[j] *= gamma }
            } else {
                let norm = dot(g, g).squareRoot()
                for j in q.indices { q[j] /= max(norm, 1) }
            }
            for i in s.indices {
                let beta = dot(y[i], q) / dot(y[i], s[i])
                let alpha = alphas[s.count - 1 - i]
                for j in q.indices { q[j] += (alpha - beta) * s[i][j] }
            }
            var slope = -dot(g, q)
            if slope >= 0 {
                // Not a descent direction: start the memory again along the gradient.
                s = []
                y = []
                q = g
                slope = -dot(g, g)
            }
            var step = 1.0
            var next = x
            var nextGradient = g
            var nextF = f
            var accepted = false
            while step > 1e-12 {
                for j in x.indices { next[j] = x[j] - step * q[j] }
                nextF = evaluate(next, &nextGradient)
                if nextF <= f + 1e-4 * step * slope {
                    accepted = true
                    break
                }
                step /= 2
            }
            guard accepted else { break }
            let sk = zip(next, x).map { $0 - $1 }
            let yk = zip(nextGradient, g).map { $0 - $1 }
            let change = f - nextF
            x = next
            g = nextGradient
            f = nextF
            if dot(sk, yk) > 1e-12 {
                s.append(sk)
                y.append(yk)
                if s.count > memory {
                    s.removeFirst()
                    y.removeFirst()
                }
            }
            // As SciPy's L-BFGS-B stops (its ftol), scikit-learn's solver: the objective no longer falls.
            if change < tolerance * max(abs(f), 1) { break }
        }
        return x
    }
}
