public import Foundation
import SentinelCore
import SentinelEval
import SentinelPipeline

/// What a sweep writes: `trials.csv` (a row per trial, written as trials complete and read back to resume),
/// `report.html` (ranked table, Pareto front of the objective against frames per second, each setting's effect, the
/// held-out figures, how the label-free measures rank) and the winner.
public enum SweepReport {
    static let metricColumns = [
        "idf1", "idp", "idr", "mota", "motp", "hota", "detA", "assA", "idSwitches", "fragmentations", "dwellError",
        "splits", "stability", "suspectedSplits", "shortVisits", "zoneFlicker", "emotionChurn", "detectionGaps",
        "visits",
        "fps",
    ]

    /// The CSV header for a space.
    public static func header(_ space: SearchSpace, recordings: [String]) -> String {
        (["trial", "status"] + space.dimensions.map(\.key) + ["objective"] + metricColumns
            + recordings.map { "\($0):\(space.objective.rawValue)" }).map(CSV.field).joined(separator: ",")
    }

    /// One result as a CSV row.
    public static func row(_ result: Sweep.Result, _ space: SearchSpace, recordings: [String]) -> String {
        let figures = result.combined
        let m = figures.metrics
        let s = figures.stability
        func number(_ value: Double?) -> String { value.map { String(format: "%.6g", $0) } ?? "" }
        let metrics: [String] = [
            number(m?.idf1), number(m?.idp), number(m?.idr), number(m?.mota), number(m?.motp), number(m?.hota),
            number(m?.detA), number(m?.assA), m.map { "\($0.idSwitches)" } ?? "",
            m.map { "\($0.fragmentations)" } ?? "",
            number(figures.dwellError), number(figures.splits), number(s.score), number(s.suspectedSplits),
            number(s.shortVisits), number(s.zoneFlicker), number(s.emotionChurn), number(s.detectionGaps),
            "\(s.visits)",
            number(figures.fps),
        ]
        let status = result.problem.map { "invalid: \($0)" } ?? "ok"
        return
            ([String(result.number), status] + space.dimensions.map { result.settings[$0.key] ?? "" }
            + [number(result.objective)] + metrics
            + recordings.map { number(result.perRecording[$0]?.value(of: space.objective)) }).map(CSV.field).joined(
                separator: ",")
    }

    /// The results a `trials.csv` holds, to resume a sweep of the same space; nil when there is none or its columns
    /// are another space's.
    public static func read(_ url: URL, _ space: SearchSpace, recordings: [String]) -> [Sweep.Result]? {
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return nil }
        var lines = text.split(whereSeparator: \.isNewline).map(String.init)
        guard !lines.isEmpty, lines.removeFirst() == header(space, recordings: recordings) else { return nil }
        let columns = ["trial", "status"] + space.dimensions.map(\.key) + ["objective"] + metricColumns
        // Rows are written as trials complete; read back in trial order.
        return lines.compactMap { line -> Sweep.Result? in
            let fields = parse(line)
            guard fields.count >= columns.count else { return nil }
            let value = Dictionary(uniqueKeysWithValues: zip(columns, fields))
            var metrics = TrackMetrics()
            let d = { (key: String) in Double(value[key] ?? "") }
            metrics.idf1 = d("idf1") ?? 0
            metrics.idp = d("idp") ?? 0
            metrics.idr = d("idr") ?? 0
            metrics.mota = d("mota") ?? 0
            metrics.motp = d("motp") ?? 0
            metrics.hota = d("hota") ?? 0
            metrics.detA = d("detA") ?? 0
            metrics.assA = d("assA") ?? 0
            metrics.idSwitches = Int(value["idSwitches"] ?? "") ?? 0
            metrics.fragmentations = Int(value["fragmentations"] ?? "") ?? 0
            var stability = Stability()
            stability.suspectedSplits = d("suspectedSplits") ?? 0
            stability.shortVisits = d("shortVisits") ?? 0
            stability.zoneFlicker = d("zoneFlicker") ?? 0
            stability.emotionChurn = d("emotionChurn") ?? 0
            stability.detectionGaps = d("detectionGaps") ?? 0
            stability.visits = Int(value["visits"] ?? "") ?? 0
            let ok = value["status"] == "ok"
            return Sweep.Result(
                number: Int(value["trial"] ?? "") ?? 0,
                settings: Dictionary(uniqueKeysWithValues: space.dimensions.map { ($0.key, value[$0.key] ?? "") }),
                objective: ok ? d("objective") : nil, problem: ok ? nil : value["status"],
                combined: Sweep.Figures(
                    metrics: value["idf1"]?.isEmpty == false ? metrics : nil, dwellError: d("dwellError"),
                    splits: d("splits"), stability: stability, fps: d("fps") ?? 0),
                perRecording: [:])
        }.sorted { $0.number < $1.number }
    }

    /// CSV fields, quotes undone (RFC 4180).
    static func parse(_ line: String) -> [String] {
        let characters = Array(line)
        var fields: [String] = []
        var field = ""
        var quoted = false
        var i = 0
        while i < characters.count {
            let c = characters[i]
            if quoted {
                if c == "\"" {
                    if i + 1 < characters.count && characters[i + 1] == "\"" {
                        field.append("\"")
                        i += 1
                    } else {
                        quoted = false
                    }
                } else {
                    field.append(c)
                }
            } else if c == "\"" && field.isEmpty {
                quoted = true
            } else if c == "," {
                fields.append(field)
                field = ""
            } else {
                field.append(c)
            }
            i += 1
        }
        fields.append(field)
        return fields
    }

    /// Spearman's rank correlation of two series (average ranks for ties); nil below three pairs.
    public static func spearman(_ a: [Double], _ b: [Double]) -> Double? {
        guard a.count == b.count, a.count >= 3 else { return nil }
        func ranks(_ values: [Double]) -> [Double] {
            let order = values.indices.sorted { values[$0] < values[$1] }
            var ranks = [Double](repeating: 0, count: values.count)
            var i = 0
            while i < order.count {
                var j = i
                while j + 1 < order.count && values[order[j + 1]] == values[order[i]] { j += 1 }
                for k in i...j { ranks[order[k]] = Double(i + j) / 2 + 1 }
                i = j + 1
            }
            return ranks
        }
        let (x, y) = (ranks(a), ranks(b))
        let mx = x.reduce(0, +) / Double(x.count)
        let my = y.reduce(0, +) / Double(y.count)
        let cov = zip(x, y).reduce(0) { $0 + ($1.0 - mx) * ($1.1 - my) }
        let vx = x.reduce(0) { $0 + ($1 - mx) * ($1 - mx) }
        let vy = y.reduce(0) { $0 + ($1 - my) * ($1 - my) }
        return vx > 0 && vy > 0 ? cov / (vx * vy).squareRoot() : nil
    }

    /// How well each label-free measure ranks the trials as a labelled figure does: ρ against IDF1 (higher better)
    /// and against the dwell error (lower better), each measure oriented so that 1 is perfect agreement.
    public static func labelFreeAgreement(_ results: [Sweep.Result]) -> [(
        measure: String, idf1: Double?, dwell: Double?
    )] {
        let ok = results.filter { $0.problem == nil && $0.combined.metrics != nil }
        let idf1 = ok.map { $0.combined.metrics!.idf1 }
        let withDwell = ok.filter { $0.combined.dwellError != nil }
        let dwell = withDwell.map { -$0.combined.dwellError! }
        let measures: [(String, (Stability) -> Double)] = [
            ("stability (the score)", { $0.score }), ("suspected splits", { -$0.suspectedSplits }),
            ("short visits", { -$0.shortVisits }), ("detection gaps bridged", { $0.detectionGaps }),
            ("zone flicker", { -$0.zoneFlicker }), ("emotion churn", { -$0.emotionChurn }),
        ]
        return measures.map { name, pick in
            (
                name, spearman(ok.map { pick($0.combined.stability) }, idf1),
                spearman(withDwell.map { pick($0.combined.stability) }, dwell)
            )
        }
    }
}
