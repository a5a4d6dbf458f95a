import Foundation
import SentinelTestSupport
import Testing

/// Every shell command a newcomer reads first (the fenced `sh` blocks of the README, getting-started, cameras and
/// tuning), run as written in a clone of the checkout, with the build's `sentinel` as the README's alias makes it; or,
/// where it cannot run here, the reason. A command the docs gain without a line here fails the test, and so does a
/// line here the docs no longer hold.
@Suite("The docs' shell commands, run as a newcomer runs them", .ownThread, .timeLimit(.minutes(5)))
struct DocumentedCommandsTests {
    static let pages = ["README.md", "docs/getting-started.md", "docs/cameras.md", "docs/tuning.md"]

    /// What becomes of a documented command here.
    enum Plan {
        /// Run as written (the demo's port excepted); it must exit with one of `statuses` and print each of `says`
        /// (standard output and error together).
        case runs(statuses: Set<Int32> = [0], says: [String] = [])
        /// A reading client of the demo started below, read for a few seconds.
        case readsTheDemo(says: [String])
        /// Not run here, and why.
        case cannot(String)
    }

    static let yourClip =
        "clip.mp4 (and other.mp4, a.jsonl, gt.xml...) are the reader's own files; TuningCommandTests runs the same commands on the sample"
    static let bench = "a benchmark: minutes in a release build (`make bench`, docs/benchmarks.md)"
    static let releaseBuild =
        "a release build, about 18 minutes on 2 cores; the commands here run the debug build as `sentinel`, as the alias would"

    static let plans: [String: Plan] = [
        // README
        "make demo": .cannot(
            "installs Debian packages and builds a release (a fresh machine's CI, .ci/run, does both); what it serves, sentinel run Pipelines/showroom.yml --loop, runs here"
        ),
        "make test": .cannot("the command that runs this test"),
        "curl -N localhost:8080/events": .readsTheDemo(says: ["retry: 3000", "event: visitor.entered"]),
        "open http://localhost:8080/": .cannot(
            "opens the desktop's browser; DashboardTests opens the page in headless Chromium"),
        "curl localhost:8080/api/zones": .readsTheDemo(says: ["\"zones\""]),
        "swift build -c release && alias sentinel=\"$PWD/.build/release/sentinel\"": .cannot(releaseBuild),
        "sentinel check showroom.yml": .runs(says: ["showroom.yml: ok"]),
        // The example's cameras are not on this network: each is said, and the probe fails.
        "sentinel check --probe showroom.yml": .runs(
            statuses: [1], says: ["source entrance: rtsp://192.0.2.10:554/stream1", "source counter: /dev/video0"]),
        "sentinel zones showroom.yml": .cannot(
            "serves the example's cameras, which are not on this network; ZoneEditorTests drives the editor on the sample in Chromium"
        ),
        "sentinel run showroom.yml": .cannot(
            "serves the example's cameras, which are not on this network; sentinel run Pipelines/showroom.yml --loop runs here"
        ),
        "sentinel eval tracking clip.mp4 --pipeline showroom.yml": .cannot(yourClip),
        "sentinel replay clip.mp4 --set tracker.visitTimeoutSeconds=4 -o out.jsonl": .cannot(yourClip),
        "sentinel tune --pipeline showroom.yml --space space.yml clip.mp4 --holdout other.mp4 --out sweep": .cannot(
            yourClip),
        // getting-started
        "sentinel detect Recordings/out/showroom-640x480.mp4": .runs(says: ["\"frame\":599,"]),
        "sentinel detect /dev/video0 --detector cascade": .cannot("a V4L2 camera: this machine's kernel has none"),
        "sentinel detect rtsp://camera.local/stream --scale 480": .cannot(
            "the reader's camera; LiveSourceTests reads the RTSP camera stand-in"),
        "sentinel detect ./photos --folder-fps 2": .cannot(
            "the reader's folder of photos; FileCorpusTests reads folders"),
        "sentinel detect clip.mkv --pace 4x": .cannot(yourClip),
        "sentinel check Pipelines/showroom.yml": .runs(says: ["Pipelines/showroom.yml: ok"]),
        "sentinel check --reference": .runs(says: ["confirmFrames: 3"]),
        "sentinel zones Pipelines/showroom.yml": .cannot(
            "serves until stopped, on port 8081, which another test may hold; ZoneEditorTests drives it in Chromium"),
        "sentinel replay --pipeline Pipelines/showroom.yml -o events.jsonl": .runs(says: ["4 visits"]),
        "sentinel replay --annotate review.mp4 -o /dev/null": .cannot(
            "15 s more in a debug build; PrivacyLeakTests runs replay --annotate on both samples and scans the video"),
        "sentinel eval tracking --detectors retinaface centerface": .cannot(
            "80 s in a debug build; make eval runs it, and TuningCommandTests runs eval tracking on the sample"),
        "sentinel eval tracks --truth gt.xml --tracks theirs.txt": .cannot(yourClip),
        "sentinel replay clip.mp4 --tracks clip.xml -o /dev/null": .cannot(yourClip),
        "sentinel replay --set tracker.visitTimeoutSeconds=4 -o out.jsonl": .runs(says: ["4 visits"]),
        "sentinel tune --space space.yml clip.mp4 --holdout b.mp4 --out sweep": .cannot(yourClip),
        "sentinel explain clip.mp4": .cannot(yourClip),
        "sentinel diff a.jsonl b.jsonl": .cannot(yourClip),
        "sentinel eval masking": .cannot("46 s in a debug build; PrivacyLeakTests measures the same masks"),
        "sentinel run Pipelines/showroom.yml --loop": .readsTheDemo(says: []),
        // Beyond localhost without a token: refused before anything opens, saying what to give.
        "sentinel run Pipelines/showroom.yml --host 0.0.0.0 --port 9000": .runs(statuses: [1], says: ["token"]),
        // Exit 1 while a model is missing: YuNet, which no registry carries, is missing on a newcomer's machine.
        "sentinel models": .runs(statuses: [0, 1], says: ["retinaface         ready"]),
        "sentinel models setup": .runs(),
        "sentinel synth Recordings/showroom.yml": .cannot(
            "renders the samples, which make test has just done (and every test reads)"),
        "sentinel eval detections": .cannot("three minutes in a debug build; make eval runs it"),
        "sentinel-bench": .cannot(bench),
        "sentinel-bench pipeline": .cannot(bench),
        "sentinel-bench process": .cannot(bench),
        "sentinel-bench sizing": .cannot(bench),
        "sentinel-bench sse --subscribers 100 1000": .cannot(bench),
        "sentinel-bench mqtt --rate 200 --seconds 10": .cannot(bench),
        "sentinel-bench fleet --sites 100 --rate 5 --seconds 20": .cannot(bench),
        // cameras
        "sentinel check --probe Pipelines/showroom.yml": .runs(says: ["source showroom: "]),
        "/usr/bin/python3 Tests/SentinelTestSupport/rtsp_camera.py --port 8554 --h264 --loop cam=Recordings/out/showroom-640x480.mp4 &":
            .cannot(
                "run as written, with the next line, by LiveSourceTests (the camera stand-in as docs/cameras.md says)"),
        "sentinel detect rtsp://127.0.0.1:8554/cam": .cannot(
            "run as written, after the stand-in, by LiveSourceTests (the camera stand-in as docs/cameras.md says)"),
    ]

    /// The commands of a page's fenced `sh` blocks: one a line (a line ending in `\` goes on), without the comment.
    static func commands(in text: String) -> [String] {
        var commands: [String] = []
        var inBlock = false
        var pending = ""
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("```") {
                inBlock = !inBlock && ["```sh", "```bash", "```shell"].contains(trimmed)
                continue
            }
            guard inBlock else { continue }
            // A comment begins at a # after a space, outside quotes.
            var command = ""
            var quote: Character?
            for (index, character) in trimmed.enumerated() {
                if character == "\"" || character == "'" { quote = quote == character ? nil : (quote ?? character) }
                if character == "#", quote == nil, index > 0,
                    trimmed[trimmed.index(trimmed.startIndex, offsetBy: index - 1)] == " "
                {
                    break
                }
                command.append(character)
            }
            command = command.trimmingCharacters(in: .whitespaces)
            if command.hasSuffix("\\") {
                pending += command.dropLast() + " "
                continue
            }
            command = pending + command
            pending = ""
            if !command.isEmpty { commands.append(command) }
        }
        return commands
    }

    @Test(
        "every shell command of the README, getting-started, cameras and tuning runs as written in a clone (the build's sentinel as the alias makes it, a free port for 8080), or is listed with why it cannot"
    )
    func asWritten() async throws {
        var documented: [(page: String, command: String)] = []
        for page in Self.pages {
            let text = try String(contentsOf: Fixtures.root.appendingPathComponent(page), encoding: .utf8)
            documented += Self.commands(in: text).map { (page, $0) }
        }
        for (page, command) in documented {
            #expect(Self.plans[command] != nil, "\(page): \(command) is neither run nor said why not")
        }
        let found = Set(documented.map(\.command))
        for command in Self.plans.keys.sorted() where !found.contains(command) {
            Issue.record("no longer in the docs: \(command)")
        }

        // A clone of the checkout, as a newcomer has it: the recordings `make test` rendered, and the README's first
        // camera saved as showroom.yml, as it says to.
        let folder = try Fixtures.temporaryFolder()
        let clone = folder.appendingPathComponent("clone")
        let cloned = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/git"), ["clone", "--quiet", Fixtures.root.path, clone.path], timeout: 120)
        #expect(cloned.status == 0, "\(cloned.errors)")
        let out = clone.appendingPathComponent("Recordings/out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        for name in ["showroom-640x480.mp4", "showroom-640x480.truth.json"] {
            try FileManager.default.copyItem(
                at: Fixtures.recordings.appendingPathComponent(name), to: out.appendingPathComponent(name))
        }
        let readme = try String(contentsOf: Fixtures.root.appendingPathComponent("README.md"), encoding: .utf8)
        let heading = try #require(readme.range(of: "## A first camera"))
        let open = try #require(readme[heading.upperBound...].range(of: "```yaml\n"))
        let close = try #require(readme[open.upperBound...].range(of: "```"))
        try String(readme[open.upperBound..<close.lowerBound]).write(
            to: clone.appendingPathComponent("showroom.yml"), atomically: true, encoding: .utf8)

        // `sentinel`, as `alias sentinel="$PWD/.build/release/sentinel"` makes it, with this build's binary.
        let prelude = "sentinel() { '\(Fixtures.sentinel.path)' \"$@\"; }; "
        func shell(_ command: String, timeout: Double) async throws -> Fixtures.Outcome {
            try await Fixtures.run(
                URL(fileURLWithPath: "/bin/bash"), ["-c", prelude + command], timeout: timeout, in: clone)
        }
        for command in Set(documented.map(\.command)).sorted() {
            guard case .runs(let statuses, let says) = Self.plans[command] else { continue }
            let outcome = try await shell(command, timeout: 120)
            let said = outcome.output + outcome.errors
            #expect(
                statuses.contains(outcome.status) && !outcome.timedOut, "\(command): exit \(outcome.status)\n\(said)")
            for text in says { #expect(said.contains(text), "\(command) did not say \(text):\n\(said)") }
        }

        // The demo, served from the clone as getting-started says (on a free port, and a database of its own), and
        // the commands that read it.
        let database = folder.appendingPathComponent("demo.sqlite").path
        let demo = try await RunningSentinel(
            arguments: ["run", "Pipelines/showroom.yml", "--loop", "--port", "0", "--database", database],
            folder: folder, database: database, directory: clone)
        defer { kill(demo.process.processIdentifier, SIGKILL) }
        for command in Set(documented.map(\.command)).sorted() {
            guard case .readsTheDemo(let says) = Self.plans[command], !says.isEmpty else { continue }
            let aimed = command.replacingOccurrences(of: "localhost:8080", with: "localhost:\(demo.port)")
            // A stream does not end: read for 15 s (the first visitor comes within seconds), then stop.
            let outcome = try await shell(aimed, timeout: command.contains("-N") ? 15 : 30)
            for text in says {
                #expect(outcome.output.contains(text), "\(command) did not say \(text):\n\(outcome.output)")
            }
        }
    }
}
