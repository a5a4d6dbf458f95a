public import Foundation
import SentinelEval
import SentinelPipeline

/// `report.html`: one self-contained page (Chart.js from Debian's libjs-chart.js inlined) that an operator opens
/// from the sweep's folder.
public enum SweepPage {
    /// A configuration scored on the tuned and the held-out recordings.
    public struct Comparison: Sendable {
        public var name: String
        public var settings: [String: String]
        public var tuned: Double?
        public var heldOut: Double?
        public init(name: String, settings: [String: String], tuned: Double?, heldOut: Double?) {
            self.name = name
            self.settings = settings
            self.tuned = tuned
            self.heldOut = heldOut
        }
    }

    public static let chartJS = URL(fileURLWithPath: "/usr/share/javascript/chart.js/Chart.min.js")

    public static func html(
        space: SearchSpace, results: [Sweep.Result], noise: Double, comparisons: [Comparison], tuned: [String],
        heldOut: [String], speedUp: String, agreement: [(measure: String, idf1: Double?, dwell: Double?)]
    ) -> String {
        let objective = space.objective
        let name = objective.title
        let ok = results.filter { $0.objective != nil }
        let ranked = ok.sorted {
            objective.maximised ? $0.objective! > $1.objective! : $0.objective! < $1.objective!
        }
        let (header, rows, tied) = bestTrials(space, ranked: ranked, noise: noise)
        let (points, front) = paretoFront(ok, objective: objective, noise: noise)
        let effects = effects(space, ok)
        var comparisonRows = ""
        for c in comparisons {
            let settings = c.settings.keys.sorted().map { "\($0)=\(c.settings[$0]!)" }.joined(separator: " ")
            comparisonRows +=
                "<tr><td>\(escape(c.name))</td><td><code>\(escape(settings.isEmpty ? "(the file's)" : settings))</code></td><td>\(number(c.tuned))</td><td>\(number(c.heldOut))</td></tr>\n"
        }
        var agreementRows = ""
        for a in agreement {
            agreementRows +=
                "<tr><td>\(a.measure)</td><td>\(number(a.idf1, 2))</td><td>\(number(a.dwell, 2))</td></tr>\n"
        }
        let chart =
            (try? String(contentsOf: chartJS, encoding: .utf8)).map { "<script>\($0)</script>" }
            ?? "<p>Charts need Debian's libjs-chart.js (\(chartJS.path)).</p>"
        return """
            <!doctype html>
            <html lang="en"><head><meta charset="utf-8"><title>Sentinel sweep: \(name)</title>
            <style>
            body { font: 14px system-ui, sans-serif; margin: 1.5rem; color: #1d2430; }
            table { border-collapse: collapse; margin: .5rem 0 1.5rem; } td, th { padding: .25rem .6rem; border-bottom: 1px solid #ddd; text-align: left; }
            .chart { position: relative; height: 260px; max-width: 720px; } .effects { display: grid; grid-template-columns: repeat(auto-fit, minmax(360px, 1fr)); gap: 1rem; }
            h3 { font-size: 14px; margin: .3rem 0; } code { font-size: 12px; }
            </style></head><body>
            <h1>Sweep: \(name) (\(objective.maximised ? "higher" : "lower") is better)</h1>
            <p>\(results.count) trials (\(ok.count) valid), \(space.search.rawValue) search, tuned on \(tuned.map(escape).joined(separator: ", "))\(heldOut.isEmpty ? "" : "; held out: " + heldOut.map(escape).joined(separator: ", ")). \(escape(speedUp))</p>
            <h2>Tuned and held out</h2>
            <p>A setting tuned on one recording is worth what it scores on another: the held-out column is the one to believe.</p>
            <table><tr><th>configuration</th><th>settings</th><th>\(name), tuned</th><th>\(name), held out</th></tr>
            \(comparisonRows)</table>
            <h2>Best trials</h2>
            <table><tr><th>rank</th><th>trial</th>\(header)</tr>
            \(rows)</table>
            \(tied ? "<p>Trials whose \(name) is within \(written(noise)) of each other (the sweep's noise: what the file's settings move between two runs, or the figure's resolution) are a tie and share a rank (=).</p>" : "")
            <h2>Accuracy against speed</h2>
            <p>Each trial by its objective and the frames a second it would analyse at (detection's measured cost per detected frame, plus tracking). The line joins the Pareto front: no trial is better and faster than one on it by more than the sweep can tell apart (\(written(noise)) in \(name), 5 % in speed).</p>
            <div class="chart"><canvas id="pareto"></canvas></div>
            <h2>Each setting's effect</h2>
            <p>The mean objective over the trials that gave the setting each value (or a value in each fifth of its range). The axes start at zero: a difference of 0.001 looks as small as it is.</p>
            <div class="effects">\(effects)</div>
            <h2>Without labels</h2>
            <p>Spearman's ρ between each label-free measure and the labelled figures over these trials (1: the same order; see docs/tuning.md). A dash: the measure took one value over every trial, or fewer than three trials had it, so there is no order to compare.</p>
            <table><tr><th>measure</th><th>ρ with IDF1</th><th>ρ with the dwell error</th></tr>\(agreementRows)</table>
            \(chart)
            <script>
            if (window.Chart) {
              new Chart(document.getElementById('pareto'), { type: 'scatter', data: { datasets: [
                { label: 'trials', data: \(points), backgroundColor: '#8aa4c8' },
                { label: 'Pareto front', data: \(front), showLine: true, borderColor: '#c0392b', backgroundColor: '#c0392b' } ] },
                options: { maintainAspectRatio: false, animation: false, scales: { x: { title: { display: true, text: 'frames per second (estimated)' } },
                  y: { title: { display: true, text: '\(name)' } } },
                  plugins: { tooltip: { callbacks: { label: (c) => 'trial ' + c.raw.trial + ': ' + c.raw.y.toFixed(3) + ' at ' + c.raw.x.toFixed(0) + ' fps' } } } } });
              for (const canvas of document.querySelectorAll('canvas[data-labels]')) {
                new Chart(canvas, { type: 'bar', data: { labels: JSON.parse(canvas.dataset.labels),
                  datasets: [{ label: 'mean \(name)', data: JSON.parse(canvas.dataset.means), backgroundColor: '#5b7db1' }] },
                  options: { maintainAspectRatio: false, animation: false, scales: { y: { beginAtZero: true } }, plugins: { legend: { display: false } } } });
              }
            }
            </script>
            </body></html>

            """
    }

    /// The best 25 trials' rows (`ranked` best first), their header's cells after rank and trial, and whether two
    /// share a rank.
    static func bestTrials(_ space: SearchSpace, ranked: [Sweep.Result], noise: Double) -> (
        header: String, rows: String, tied: Bool
    ) {
        let objective = space.objective
        let name = objective.title
        let keys = space.dimensions.map(\.key)
        // One column a figure, the objective's in bold.
        var columns: [(title: String, digits: Int, value: (Sweep.Figures) -> Double?)] = [
            (SearchSpace.Objective.idf1.title, 3, { $0.metrics?.idf1 }),
            (SearchSpace.Objective.hota.title, 3, { $0.metrics?.hota }),
            (SearchSpace.Objective.dwell.title, 2, { $0.dwellError }),
            (SearchSpace.Objective.stability.title, 3, { $0.stability.score }),
        ]
        if !columns.contains(where: { $0.title == name }) {
            columns.insert((name, 3, { $0.value(of: objective) }), at: 0)
        }
        columns.append(("fps (est.)", 0, { $0.fps }))
        // Trials within the noise of the first of their group share its rank, marked "=".
        let shown = Array(ranked.prefix(25))
        var ranks: [Int] = []
        for (index, r) in shown.enumerated() {
            let previous = ranks.last.map { shown[$0 - 1].objective! }
            ranks.append(previous.map { abs(r.objective! - $0) <= noise } == true ? ranks.last! : index + 1)
        }
        let tied = Set(ranks).count < ranks.count
        var rows = ""
        for (r, rank) in zip(shown, ranks) {
            let shared = ranks.filter { $0 == rank }.count > 1
            rows += "<tr><td>\(rank)\(shared ? "=" : "")</td><td>\(r.number)</td>"
            rows += keys.map { "<td>\(escape(r.settings[$0] ?? ""))</td>" }.joined()
            rows += columns.map { column in
                let text = number(column.value(r.combined), column.digits)
                return column.title == name ? "<td><b>\(text)</b></td>" : "<td>\(text)</td>"
            }.joined()
            rows += "</tr>\n"
        }
        let header =
            keys.map { "<th>\(escape($0))</th>" }.joined() + columns.map { "<th>\($0.title)</th>" }.joined()
        return (header, rows, tied)
    }

    /// Every valid trial as a point (frames a second, objective), and those on the Pareto front, as JSON for the
    /// chart.
    static func paretoFront(_ ok: [Sweep.Result], objective: SearchSpace.Objective, noise: Double) -> (
        points: String, front: String
    ) {
        // Pareto front over what the sweep can tell apart: objectives within the noise are equal, and so are speeds
        // within 5 % (the estimate's own spread); no other trial is then at least as good in both and better in one.
        let points = ok.map { (x: $0.combined.fps, y: $0.objective!, n: $0.number) }
        func steps(_ p: (x: Double, y: Double, n: Int)) -> (x: Double, y: Double) {
            let y = (objective.maximised ? p.y : -p.y) / max(noise, 1e-12)
            return ((log(max(p.x, 1e-9)) / log(1.05)).rounded(), y.rounded())
        }
        func dominates(_ a: (x: Double, y: Double, n: Int), _ b: (x: Double, y: Double, n: Int)) -> Bool {
            let (sa, sb) = (steps(a), steps(b))
            return sa.x >= sb.x && sa.y >= sb.y && (sa.x > sb.x || sa.y > sb.y)
        }
        let front = points.filter { p in !points.contains { dominates($0, p) } }.sorted { $0.x < $1.x }
        func json(_ list: [(x: Double, y: Double, n: Int)]) -> String {
            "["
                + list.map { String(format: "{\"x\":%.2f,\"y\":%.5f,\"trial\":%d}", $0.x, $0.y, $0.n) }.joined(
                    separator: ",")
                + "]"
        }
        return (json(points), json(front))
    }

    /// One bar chart a setting: the mean objective over the trials that gave it each value.
    static func effects(_ space: SearchSpace, _ ok: [Sweep.Result]) -> String {
        // Each setting's effect: the mean objective per value (intervals in five bins).
        var effects = ""
        for dimension in space.dimensions {
            var groups: [(label: String, values: [Double])] = []
            if let interval = dimension.interval {
                let width = (interval.high - interval.low) / 5
                for bin in 0..<5 {
                    let low = interval.low + Double(bin) * width
                    let values = ok.filter {
                        guard let v = Double($0.settings[dimension.key] ?? "") else { return false }
                        return v >= low && (v < low + width || bin == 4)
                    }.map { $0.objective! }
                    groups.append((String(format: "%.3g–%.3g", low, low + width), values))
                }
            } else {
                for value in dimension.values {
                    groups.append((value, ok.filter { $0.settings[dimension.key] == value }.map { $0.objective! }))
                }
            }
            // JSON first, then escaped as an attribute's value: the browser gives the script the JSON back.
            let labels = String(
                decoding: (try? JSONEncoder().encode(groups.map(\.label))) ?? Data("[]".utf8), as: UTF8.self)
            let means = groups.map {
                $0.values.isEmpty ? "null" : String(format: "%.5f", $0.values.reduce(0, +) / Double($0.values.count))
            }
            .joined(separator: ",")
            effects += """
                <section><h3>\(escape(dimension.key))</h3><div class="chart"><canvas data-labels='\(escape(labels))' data-means='[\(means)]'></canvas></div></section>

                """
        }
        return effects
    }

    static func number(_ value: Double?, _ digits: Int = 3) -> String {
        value.map { String(format: "%.\(digits)f", $0) } ?? "–"
    }

    /// For text and for attribute values in either quote: a setting's value may hold anything.
    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
            .replacingOccurrences(of: "'", with: "&#39;")
    }
}
