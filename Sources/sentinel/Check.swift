import ArgumentParser
import SentinelCommandLine
import SentinelConfig
import SentinelPipeline
import SentinelServer

struct Check: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract:
            "Check a pipeline file as `sentinel run` does before serving: print every problem with file, line and field; exit 1 if any."
    )

    @Argument(help: "Pipeline file, such as Pipelines/showroom.yml.")
    var pipeline: String?

    @Flag(help: "Print every tunable setting with its default, range and meaning (docs/reference.md) instead.")
    var reference = false

    @OptionGroup var models: ModelOptions

    func validate() throws {
        if reference == (pipeline != nil) { throw ValidationError("give a pipeline file, or --reference") }
    }

    func run() throws {
        guard let pipeline else {
            print(ServiceDefinition.reference, terminator: "")
            return
        }
        var problems: [ConfigProblem] = []
        do {
            // The checks `sentinel run` makes before it serves: one function for both.
            _ = try SentinelService.preflight(definition: ServiceDefinition.load(pipeline), models: try models.store())
        } catch let error as ConfigError {
            problems = error.problems
        }
        for problem in problems { print(problem) }
        if !problems.isEmpty { throw ExitCode(1) }
        print("\(pipeline): ok")
    }
}
