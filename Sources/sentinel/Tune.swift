public import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelModels
import SentinelPipeline
import SentinelTuning
import SentinelVision
import Synchronization

struct Tune: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Search a pipeline's settings on recordings and keep the best, measured.",
        discussion: """
            SPACE names each setting (a --set key) with its values, a range or `range` (its declared one), how to \
            search (grid, random, adaptive), how many trials and the objective: idf1, hota, mota, dwell, splits \
            (with labels beside each recording: NAME.truth.json, .xml, .txt or .json) or stability (label-free). \
            Detections are computed once per recording and detector setting and reused by every trial; trials run \
            on every core. DIR gets trials.csv (written as trials complete, sealed in trials.seal: run again on the same inputs to resume), report.html and \
            best.yml (the pipeline file with the winner written in, every other byte kept); --apply writes the \
            winner into PIPELINE itself if the result passes `sentinel check`. Recordings given with --holdout are \
            not tuned on: the winner and the file's settings are scored on them, side by side.
            """)

    @Argument(help: "Recordings to tune on (default: the pipeline's first source input).")
    var recordings: [String] = []

    @Option(help: "Pipeline file.")
    var pipeline = defaultPipeline

    @Option(help: "The search space (YAML).")
    var space: String

    @Option(help: "Folder for trials.csv, report.html and best.yml.")
    var out: String

    @Option(help: "Recordings to score the winner on, not tuned on (repeatable).")
    var holdout: [String] = []

    @Option(help: "The objective, over the space file's.")
    var objective: SearchSpace.Objective?

    @Option(help: "Trials, over the space file's.")
    var trials: Int?

    @Option(help: "Trials run at once (default: every core).")
    var workers = ProcessInfo.processInfo.activeProcessorCount

    @Flag(help: "Write the winner into the pipeline file (only if it then passes sentinel check).")
    var apply = false

    @OptionGroup var settings: SettingOverrides
    @OptionGroup var models: ModelOptions

    func validate() throws {
        try checkRange(workers, "workers", 1...256)
        if let trials { try checkRange(trials, "trials", 1...100_000) }
    }

    func run() throws {
        var space: SearchSpace
        do { space = try SearchSpace.load(self.space) } catch { throw CommandError(error.description) }
        if let objective { space.objective = objective }
        if let trials { space.trials = trials }
        let base = try settings.overrides
        let definition = try loadPipeline(pipeline, models: models, overrides: base)
        let store = try models.store()
        let (tuned, heldOut) = try tunedAndHeldOut(definition, objective: space.objective)
        let sweep = Sweep(
            pipeline: pipeline, base: base, space: space, recordings: tuned, models: store, workers: workers,
            logger: makeLogger("sentinel.tune"))
        // The whole space, before anything is decoded or written.
        do { try sweep.checkSpace() } catch { throw CommandError(error.description) }
        let folder = URL(fileURLWithPath: out)
        let folderExisted = try Self.makeOut(folder)
        try checkApplicable()
        let names = tuned.map(\.name)
        let inputs = try TuneBaseline.Inputs(
            pipeline: pipeline, overrides: settings.values, recordings: (tuned + heldOut).map(\.path))
        let (results, resumed, kept, elapsed) = try Self.trials(
            sweep, space, names: names, inputs: inputs, in: folder, folderExisted: folderExisted)
        let csv = folder.appendingPathComponent("trials.csv")
        guard results.contains(where: { $0.objective != nil }) else {
            let reasons = Set(results.compactMap(\.problem)).prefix(3).joined(separator: "; ")
            throw CommandError("no trial gave a valid pipeline: \(reasons)")
        }
        let speedUp = Self.speedUp(
            sweep, results: results, resumed: resumed, kept: kept != nil, elapsed: elapsed, workers: workers,
            folder: folder)
        print(speedUp)
        var baseline = try kept ?? Self.measure(sweep, space, inputs: inputs)
        print(
            "replay determinism: the file's settings run twice give \(baseline.deterministic ? "the same" : "DIFFERENT") visits"
        )
        // A trial with an objective exists (checked above).
        let verdict = TuneVerdict(
            results, space: sweep.space, fileObjective: baseline.objective, noise: baseline.noise,
            fileValues: PipelineReference.values(of: definition))!
        let best = verdict.best
        if !heldOut.isEmpty, baseline.heldOutBestTrial != (best?.number ?? 0) {
            try sweep.prepare(heldOut)
            baseline.heldOutObjective = sweep.evaluate([:], number: 0, on: heldOut).objective
            baseline.heldOutBestTrial = best?.number ?? 0
            baseline.heldOutBestObjective =
                best.map { sweep.evaluate($0.settings, number: $0.number, on: heldOut).objective }
                ?? baseline.heldOutObjective
        }
        try baseline.write(in: folder)
        let agreement = SweepReport.labelFreeAgreement(results)
        Self.say(verdict, space: space, baseline: baseline, heldOut: heldOut.map(\.name), agreement: agreement)
        try Self.writeReport(
            space, results, baseline: baseline, verdict: verdict, tuned: names, heldOut: heldOut.map(\.name),
            speedUp: speedUp, agreement: agreement, in: folder)
        let bestFile = folder.appendingPathComponent("best.yml").path
        let written = try writeBest(best?.settings ?? [:], to: bestFile, store: store)
        print(
            "wrote \(csv.path), \(folder.appendingPathComponent("report.html").path), \(bestFile)"
        )
        if apply && verdict.beaten {
            do { try PipelineFile.replace(pipeline, with: written) } catch { throw CommandError(error.message) }
            // The trials set every swept key themselves: they hold for the file as applied, which differs only there.
            try TrialsSeal(
                inputs: try TuneBaseline.Inputs(
                    pipeline: pipeline, overrides: settings.values, recordings: (tuned + heldOut).map(\.path)),
                in: folder, bytes: try Data(contentsOf: csv)
            ).write()
            print("applied to \(pipeline)")
        } else if apply {
            print("nothing applied: \(pipeline) keeps its settings")
        }
    }
}

extension Tune {
    /// report.html in `folder`: every trial, and the file's settings beside the nearest of the best trials (the winner
    /// when it beat them by more than the noise).
    static func writeReport(
        _ space: SearchSpace, _ results: [Sweep.Result], baseline: TuneBaseline, verdict: TuneVerdict,
        tuned: [String], heldOut: [String], speedUp: String,
        agreement: [(measure: String, idf1: Double?, dwell: Double?)], in folder: URL
    ) throws {
        let (nearest, beaten) = (verdict.nearest, verdict.beaten)
        let page = SweepPage.html(
            space: space, results: results, noise: baseline.noise,
            comparisons: [
                .init(
                    name: "the file's settings", settings: [:], tuned: baseline.objective,
                    heldOut: baseline.heldOutObjective),
                .init(
                    name: beaten
                        ? "winner (trial \(nearest.number))" : "best trial (\(nearest.number)), not kept: a tie",
                    settings: nearest.settings, tuned: nearest.objective,
                    heldOut: beaten ? baseline.heldOutBestObjective : nil),
            ], tuned: tuned, heldOut: heldOut, speedUp: speedUp, agreement: agreement)
        try OutputFile.write(Data(page.utf8), to: folder.appendingPathComponent("report.html").path)
    }

    /// --apply writes the pipeline file back (a new file beside it, renamed over it): a file or folder that cannot be
    /// written is said before the sweep, not after it.
    func checkApplicable() throws {
        if apply,
            access(pipeline, W_OK) != 0
                || access(URL(fileURLWithPath: pipeline).deletingLastPathComponent().path, W_OK) != 0
        {
            throw CommandError(
                "--apply: \(pipeline) or its folder cannot be written (\(String(cString: strerror(errno))))")
        }
    }

    /// The recordings to tune on and those held out, each with its labels if it has some beside it (which `objective`
    /// may need).
    func tunedAndHeldOut(_ definition: PipelineDefinition, objective: SearchSpace.Objective) throws -> (
        tuned: [Sweep.Recording], heldOut: [Sweep.Recording]
    ) {
        func recording(_ path: String) throws -> Sweep.Recording {
            guard FileManager.default.fileExists(atPath: path) else { throw CommandError("\(path): no such file") }
            let labelled = (try? Labels.beside(path)) != nil
            return Sweep.Recording(
                path: path,
                labels: labelled
                    ? try Labels.read(
                        for: path, named: nil, definition: definition, logger: makeLogger("sentinel.tune")) : nil)
        }
        let tuned = try (recordings.isEmpty ? [definition.sources[0].resolvedInput] : recordings).map(recording)
        let heldOut = try holdout.map(recording)
        if objective.needsLabels, let unlabelled = (tuned + heldOut).first(where: { $0.labels == nil }) {
            throw CommandError(
                "\(unlabelled.path): no labels beside it, which the objective \(objective.rawValue) needs (or tune for stability, which needs none)"
            )
        }
        return (tuned, heldOut)
    }

    /// What the cache saved: the trials run, in how long, against decoding and detecting again for each.
    static func speedUp(
        _ sweep: Sweep, results: [Sweep.Result], resumed: Int, kept: Bool, elapsed: Double, workers: Int, folder: URL
    ) -> String {
        let trialsRun = results.count - resumed
        // Without the cache, every trial would decode and detect its recordings again.
        let detectPerTrial = sweep.detectionSeconds / Double(sweep.detectorSettings)
        let withoutCache = Double(trialsRun) * detectPerTrial + max(elapsed - sweep.detectionSeconds, 0)
        return trialsRun == 0
            ? kept
                ? "No trial left to run: all \(results.count) were in trials.csv, and the file's settings as measured by the run that finished them (\(TuneBaseline.url(in: folder).lastPathComponent)): nothing decoded."
                : String(
                    format:
                        "No trial left to run: all %d were in trials.csv (decoding and detecting again for the file's settings took %.1f s).",
                    results.count, sweep.detectionSeconds)
            : String(
                format:
                    "%d trials in %.1f s on %d workers%@; decoding and detecting took %.1f s for %d detector setting(s), reused by every trial; without the cache about %.0f s (%.1fx longer).",
                trialsRun, elapsed, workers, resumed == 0 ? "" : " (\(resumed) more read from trials.csv)",
                sweep.detectionSeconds, sweep.detectorSettings, withoutCache, withoutCache / max(elapsed, 1e-9))
    }

    /// Makes the `--out` folder if it is missing and checks it is one to write into; returns whether it existed.
    static func makeOut(_ folder: URL) throws -> Bool {
        var isFolder: ObjCBool = false
        let folderExisted = FileManager.default.fileExists(atPath: folder.path, isDirectory: &isFolder)
        if folderExisted, !isFolder.boolValue {
            throw CommandError("--out \(folder.path): a file, not a folder")
        }
        do { try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true) } catch {
            throw CommandError("--out \(folder.path): cannot make the folder (\(error.localizedDescription))")
        }
        try checkOutFolder(folder)
        return folderExisted
    }

    /// Runs the sweep's trials, each written to `trials.csv` in `folder` as it ends, after those a previous run left
    /// there (`resumed` of them); `kept`: every trial was done and the file's settings measured for these very inputs,
    /// so nothing was decoded.
    static func trials(
        _ sweep: Sweep, _ space: SearchSpace, names: [String], inputs: TuneBaseline.Inputs, in folder: URL,
        folderExisted: Bool
    ) throws -> (results: [Sweep.Result], resumed: Int, kept: TuneBaseline?, elapsed: Double) {
        let csv = folder.appendingPathComponent("trials.csv")
        let header = SweepReport.header(space, recordings: names)
        var done: [Sweep.Result] = []
        var start = Data((header + "\n").utf8)
        if FileManager.default.fileExists(atPath: csv.path) {
            guard let previous = SweepReport.read(csv, space, recordings: names) else {
                throw CommandError("\(csv.path) holds another sweep's trials: remove it, or choose another --out")
            }
            let bytes = try Data(contentsOf: csv)
            if TrialsSeal.holds(bytes, in: folder, for: inputs) {
                done = previous
                start = bytes
                print("resuming: \(done.count) trials already in \(csv.path)")
            } else {
                print(
                    "\(csv.path) was not measured on these inputs (a recording, label file, the pipeline or this build differs) or was changed since: its \(previous.count) trials are run again"
                )
            }
        }
        if done.isEmpty { try start.write(to: csv) }
        var seal = TrialsSeal(inputs: inputs, in: folder, bytes: start)
        try seal.write()
        let handle = try FileHandle(forWritingTo: csv)
        handle.seekToEndOfFile()
        let total = space.search == .grid ? space.grid(limit: space.trials).count : space.trials
        // Every trial done and the file's settings measured for these very inputs: nothing to decode.
        let kept = done.count >= total ? TuneBaseline.read(in: folder, for: inputs) : nil
        // Rows and progress from every worker, one at a time.
        let log = Mutex(
            (
                handle: handle, seal: seal, sealFailure: String?.none,
                progress: TrialProgress(total: total, done: done.count)
            ))
        let began = ContinuousClock.now
        let frozen = space
        let results: [Sweep.Result]
        do {
            if kept != nil {
                results = done
            } else {
                results = try sweep.run(done: done) { result in
                    log.withLock { log in
                        let row = Data((SweepReport.row(result, frozen, recordings: names) + "\n").utf8)
                        log.handle.write(row)
                        do { try log.seal.add(row) } catch { log.sealFailure = log.sealFailure ?? "\(error)" }
                        log.progress.advance()
                    }
                }
            }
        } catch {
            // A sweep that failed before its first trial (a recording that cannot be decoded) leaves nothing behind:
            // the rerun starts afresh instead of finding another sweep's trials.csv.
            if done.isEmpty, log.withLock({ $0.progress.done }) == 0 {
                try? FileManager.default.removeItem(at: csv)
                if !folderExisted { try? FileManager.default.removeItem(at: folder) }
            }
            throw error
        }
        try log.withLock { log in
            log.progress.finish()
            try log.handle.close()
            if let failure = log.sealFailure {
                throw CommandError(
                    "cannot seal \(csv.path) (\(failure)): its trials are all there, but a rerun measures them again")
            }
        }
        let elapsed = (ContinuousClock.now - began).seconds
        return (results, done.count, kept, elapsed)
    }

    /// The winner written into the pipeline's text, every other byte kept, checked as a pipeline, and copied to
    /// `bestFile`: it lies in --out, so its relative paths are written as the absolute paths they mean. Returns the
    /// pipeline's new text.
    func writeBest(_ chosen: [String: String], to bestFile: String, store: ModelStore) throws -> String {
        let original = try String(contentsOfFile: pipeline, encoding: .utf8)
        let written: String
        let copy: String
        do {
            written = try SettingsEditor.apply(
                chosen.keys.sorted().map { ($0, chosen[$0]!) }, to: original, file: pipeline)
            let checked = try ServiceDefinition.parse(written, file: pipeline)
            let problems = checked.pipeline.environmentProblems(
                models: store, frameSize: VideoFileSource.frameSize(of:),
                openClassifier: FaceClassifier.open)
            guard problems.isEmpty else { throw ConfigError(problems: problems) }
            copy = try SettingsEditor.absolute(checked.pipeline.relativePaths, in: written, file: pipeline)
        } catch let error as ConfigError {
            throw CommandError("the winner cannot be written into \(pipeline): \(error.description)")
        }
        try OutputFile.write(Data(copy.utf8), to: bestFile)
        return written
    }

    /// The file's own settings run twice on the tuned recordings: their objective, the noise between the two runs
    /// (at least the objective's resolution), and whether they gave the same visits (replay determinism, the last
    /// label-free measure).
    static func measure(_ sweep: Sweep, _ space: SearchSpace, inputs: TuneBaseline.Inputs) throws -> TuneBaseline {
        let defaults = sweep.evaluate([:], number: 0)
        let again = sweep.evaluate([:], number: 0)
        func visits(_ result: Sweep.Result) throws -> [RunDiff.Visit] {
            try result.perRecording.keys.sorted().flatMap { name in
                try RunDiff.visits(
                    Data(result.perRecording[name]!.lines.map { $0 + Data("\n".utf8) }.joined()), file: name)
            }
        }
        let rerun = RunDiff(a: try visits(defaults), b: try visits(again))
        let deterministic =
            rerun.onlyA.isEmpty && rerun.onlyB.isEmpty && rerun.splitInA.isEmpty
            && rerun.splitInB.isEmpty && rerun.pairs.allSatisfy { $0.a.dwell == $0.b.dwell }
        let resolution = space.objective == .dwell ? 0.01 : 0.001
        let noise = max(resolution, abs((defaults.objective ?? 0) - (again.objective ?? 0)))
        return TuneBaseline(inputs: inputs, objective: defaults.objective, noise: noise, deterministic: deterministic)
    }

    /// The sweep writes trials.csv, report.html and best.yml into `--out` by name: a folder another user owns or may
    /// write to could hold links planted there to make it replace or create files elsewhere (it replaced a root-owned
    /// 0600 file through a link named report.html). Such a folder is refused, and so is an output name that is a link.
    static func checkOutFolder(_ folder: URL) throws {
        var status = stat()
        guard stat(folder.path, &status) == 0, (status.st_mode & S_IFMT) == S_IFDIR else {
            throw CommandError("--out \(folder.path): not a folder")
        }
        guard status.st_uid == geteuid() else {
            throw CommandError(
                "--out \(folder.path): the folder belongs to another user (uid \(status.st_uid)); choose a folder of your own"
            )
        }
        guard status.st_mode & 0o022 == 0 else {
            throw CommandError(
                "--out \(folder.path): other users may write in this folder (mode \(String(status.st_mode & 0o777, radix: 8))); choose a folder only you may write to"
            )
        }
        for name in ["trials.csv", "report.html", "best.yml"] {
            let path = folder.appendingPathComponent(name).path
            if lstat(path, &status) == 0, (status.st_mode & S_IFMT) != S_IFREG {
                throw CommandError("--out: \(path) is not a regular file (a link?): refusing to write through it")
            }
        }
    }
}

extension SearchSpace.Objective: ExpressibleByArgument {}

/// Trials done out of the total, with the time left, on standard error while it is a terminal.
struct TrialProgress {
    let total: Int
    var done: Int
    let start = ContinuousClock.now
    let startDone: Int
    let enabled = isatty(STDERR_FILENO) == 1

    init(total: Int, done: Int) {
        self.total = total
        self.done = done
        startDone = done
    }

    mutating func advance() {
        done += 1
        draw()
    }

    func finish() {
        guard enabled else { return }
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func draw() {
        guard enabled, total > 0 else { return }
        let elapsed = (ContinuousClock.now - start).seconds
        let rate = elapsed > 0 ? Double(done - startDone) / elapsed : 0
        let fraction = min(1, Double(done) / Double(total))
        let filled = Int(fraction * 30)
        let eta = rate > 0 ? Double(max(total - done, 0)) / rate : 0
        let line =
            "\r\(done)/\(total) trials [" + String(repeating: "#", count: filled)
            + String(repeating: ".", count: 30 - filled)
            + String(format: "] %3.0f%%  ETA %.0fs ", fraction * 100, eta)
        FileHandle.standardError.write(Data(line.utf8))
    }
}

extension Tune {
    /// What the sweep found, as `tune` prints it: the winner's settings or why the file's own stay, the held-out
    /// figures, and how the label-free measures agreed with the labels.
    static func say(
        _ verdict: TuneVerdict, space: SearchSpace, baseline: TuneBaseline, heldOut: [String],
        agreement: [(measure: String, idf1: Double?, dwell: Double?)]
    ) {
        let nearest = verdict.nearest
        let objectiveName = space.objective.rawValue
        func value(_ objective: Double?) -> String { objective.map { String(format: "%.4f", $0) } ?? "–" }
        if let best = verdict.best {
            print(
                "best: trial \(best.number), \(objectiveName) \(value(best.objective)) (the file's settings: \(value(baseline.objective)))"
            )
            for key in best.settings.keys.sorted() { print("  --set \(key)=\(best.settings[key]!)") }
        } else {
            print(
                "best: the file's settings, \(objectiveName) \(value(baseline.objective)): no trial beat them by more than \(baseline.noise) (the best, trial \(nearest.number), \(value(nearest.objective))); nothing to change"
            )
            if verdict.allTied {
                print(
                    "every trial scored the same: these recordings' labels cannot tell the settings apart (label a clip where the settings matter: more visitors, crossings, someone hidden for a while, or search other settings)"
                )
            }
        }
        if !heldOut.isEmpty {
            print(
                "held out (\(heldOut.joined(separator: ", "))): \(objectiveName) \(value(baseline.heldOutBestObjective)) with the winner, \(value(baseline.heldOutObjective)) with the file's settings"
            )
        }
        if agreement.contains(where: { $0.idf1 != nil }) {
            print("label-free measures against the labels over these trials (Spearman's rho):")
            for a in agreement {
                print(
                    "  \(a.measure): \(a.idf1.map { String(format: "%.2f", $0) } ?? "–") with IDF1, \(a.dwell.map { String(format: "%.2f", $0) } ?? "–") with the dwell error"
                )
            }
        }
    }
}
