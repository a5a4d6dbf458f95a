import ArgumentParser
import Foundation
import SentinelCore
import SentinelTuning

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Compare two runs' events visit by visit (matched by zone and time, not by faceId).",
        discussion: """
            A and B are event files as `sentinel replay -o` writes them (JSON lines). Pseudonyms differ between runs, \
            so visits are matched one to one by the seconds they spent in the same zone at the same time (then by \
            the seconds both were seen); a visit to which several of the other run's are attributed was split there. Prints the counts, the dwell \
            differences, each split and each visit found in one run only. Exit status 1 when the runs differ.
            """)

    @Argument(help: "The first run's events.")
    var a: String

    @Argument(help: "The second run's events.")
    var b: String

    @Option(help: "Seconds of dwell (per visit or zone) below which a difference is not listed.")
    var threshold = 0.5

    func run() throws {
        func read(_ path: String) throws -> [RunDiff.Visit] {
            guard let data = FileManager.default.contents(atPath: path) else {
                throw CommandError("\(path): cannot read the file")
            }
            do { return try RunDiff.visits(data, file: path) } catch { throw CommandError("\(error)") }
        }
        let diff = RunDiff(a: try read(a), b: try read(b))
        let lines = diff.lines(
            nameA: URL(fileURLWithPath: a).lastPathComponent, nameB: URL(fileURLWithPath: b).lastPathComponent,
            threshold: threshold)
        for line in lines { print(line) }
        if lines.count > 2 || !diff.onlyA.isEmpty || !diff.onlyB.isEmpty { throw ExitCode(1) }
    }
}
