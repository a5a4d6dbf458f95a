import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelPipeline
import SentinelVision
import Synchronization

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Check a pipeline file as `sentinel run` does before serving: print every problem with file, line and field; exit 1 if any."
    )

    @Argument(help: "Pipeline file, such as Pipelines/showroom.yml.")
    var pipeline: String?

    @Flag(
        help:
            "Then open every source for a few seconds and print what it delivers (resolution, frame rate stated and measured, codec, time to the first frame) or exactly why it delivers nothing; exit 1 if a source fails."
    )
    var probe = false

    @Option(help: "With --probe: how long each live source is read, in seconds.")
    var probeSeconds = 3.0

    @Flag(help: "Print every tunable setting with its default, range and meaning (docs/reference.md) instead.")
    var reference = false

    @OptionGroup var models: ModelOptions

    func validate() throws {
        if reference == (pipeline != nil) { throw ValidationError("give a pipeline file, or --reference") }
        if !(probeSeconds > 0 && probeSeconds <= 60) {
            throw ValidationError("--probe-seconds: from above 0 to 60, not \(probeSeconds)")
        }
    }

    func run() throws {
        guard let pipeline else {
            print(ServiceDefinition.reference, terminator: "")
            return
        }
        var problems: [ConfigProblem] = []
        var warnings: [ConfigProblem] = []
        var sources: [PipelineDefinition.SourceDefinition] = []
        do {
            // The checks `sentinel run` makes before it serves: one function for both.
            let definition = try ServiceDefinition.load(pipeline)
            sources = definition.pipeline.sources
            let store = try models.store()
            _ = try SentinelService.preflight(definition: definition, models: store)
            warnings = definition.pipeline.emotionWarnings(models: store)
        } catch let error as ConfigError {
            problems = error.problems
        }
        for problem in problems { print(problem) }
        if !problems.isEmpty { throw ExitCode(1) }
        for warning in warnings { print("warning: \(warning)") }
        print(
            "\(pipeline): ok"
                + (warnings.isEmpty ? "" : " (\(warnings.count) warning\(warnings.count == 1 ? "" : "s"))"))
        guard probe else { return }
        // Every source at once, as `run` opens them: a fleet of cameras takes the time of one.
        let specs = sources.map { SourceSpec($0.resolvedInput) }
        let seconds = probeSeconds
        // A thread each, not a pool's: a probe mostly waits on the network, and a pool runs one per core. Each source
        // is printed as it finishes: FFmpeg opens streams one at a time, so a hundred cameras take a while, and a
        // silent wait says nothing of which answered.
        let failed = Mutex(false)
        let done = DispatchGroup()
        for (source, spec) in zip(sources, specs) {
            done.enter()
            Thread.detachNewThread {
                let result = SourceProbe.run(spec, seconds: seconds)
                failed.withLock {
                    $0 = $0 || result.problem != nil
                    print("source \(source.id): \(result)")
                    fflush(nil)
                }
                done.leave()
            }
        }
        done.wait()
        if failed.withLock({ $0 }) { throw ExitCode(1) }
    }
}
