import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelPipeline
import SentinelTuning
import SentinelVision
import SentinelVisitors

struct Explain: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Why each visitor was followed as it was: a timeline of matches, misses, zones and the end.",
        discussion: """
            Replays a recording with the tracker saying why, and prints for each visitor (by the pseudonym replay \
            and diff show): the spans its detections were matched (overlap with the prediction, centre within the \
            gate, a weak detection, back where it was lost, out from hiding), the spans they were missed with the \
            nearest detection's distance against the gate and IoU against minIoU, zone entries and exits with the \
            inertia and grace that delayed them, and why the visit ended. Times are media seconds.
            """)

    @Argument(help: "Recording (default: the pipeline's first source input).")
    var recording: String?

    @Option(help: "Pipeline file.")
    var pipeline = defaultPipeline

    @Option(help: "Only this visitor (a pseudonym, or its first characters).")
    var visitor: String?

    @OptionGroup var settings: SettingOverrides
    @OptionGroup var models: ModelOptions

    func run() throws {
        var definition = try loadPipeline(pipeline, models: models, overrides: try settings.overrides)
        definition.visitors.trace = true
        let source = definition.sources[0]
        let runner = try SourceRunner(
            definition: definition.forEvaluation, source: source, models: try models.store(), input: recording,
            pace: .fastest, logger: makeLogger("sentinel.explain"))
        var explanation = Explanation(settings: definition.visitors.tracker, zones: source.zones)
        try runner.run { step in explanation.add(step, origin: runner.origin) }
        for line in explanation.report(visitor: visitor) { print(line) }
    }
}
