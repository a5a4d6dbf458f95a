package import ArgumentParser
import Foundation
package import Logging
package import SentinelConfig
import SentinelCore
package import SentinelModels
import SentinelVision

/// Where the model manifest and cache are.
package struct ModelOptions: ParsableArguments {
    @Option(
        name: .customLong("models"),
        help: ArgumentHelp(
            "Folder holding models.yml and the model cache (env SENTINEL_MODELS).",
            discussion: """
                Default: ./Models in a checkout; installed, the manifest in {prefix}/share/sentinel/models and the \
                files in the state directory (/var/lib/sentinel/models, or ~/.local/share/sentinel/models).
                """))
    package var folder: String?

    package init() {}

    package func store() throws -> ModelStore {
        do {
            return try ModelStore.located(folder: folder ?? ProcessInfo.processInfo.environment["SENTINEL_MODELS"])
        } catch {
            throw CommandError(error.message)
        }
    }
}

/// Loads a pipeline and fails with every problem, as `check` prints them.
package func loadPipeline(_ path: String, models: ModelOptions, overrides: [ConfigOverride] = []) throws
    -> PipelineDefinition
{
    do {
        let definition = try PipelineDefinition.load(path, overrides: overrides)
        let problems = definition.environmentProblems(
            models: try models.store(), frameSize: VideoFileSource.frameSize(of:),
            openClassifier: FaceClassifier.open)
        guard problems.isEmpty else { throw CommandError(problems.map(\.description).joined(separator: "\n")) }
        return definition
    } catch let error as ConfigError {
        throw CommandError(error.description)
    }
}

/// Logs to standard error so that standard output carries only data.
package func makeLogger(_ label: String, verbose: Bool = false) -> Logger {
    var logger = Logger(label: label) { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = verbose ? .debug : .info
    return logger
}

/// `--set key=value`: settings over the pipeline file's, checked as if written there.
package struct SettingOverrides: ParsableArguments {
    @Option(
        name: .customLong("set"),
        help: ArgumentHelp(
            "A setting over the pipeline file's, as key=value (repeatable).",
            discussion: """
                Any key `sentinel check --reference` lists (tracker.minIoU=0.3, events.referencePoint=bottom), with \
                [n] or [*] for list elements (sources[0].zones[*].grace.seconds=1); checked exactly as the same value in the \
                file.
                """, valueName: "key=value"))
    package var values: [String] = []

    package init() {}

    package var overrides: [ConfigOverride] {
        get throws {
            do { return try values.map { argument throws(ConfigError) in try ConfigOverride(argument) } } catch {
                throw CommandError(error.description)
            }
        }
    }
}
