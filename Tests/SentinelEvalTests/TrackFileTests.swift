import Foundation
import SentinelCore
import SentinelEval
import SentinelTestSupport
import SentinelWire
import Testing

@Suite("Label files: MOT Challenge, CVAT for video 1.1 and Label Studio in and out, with clear refusals", .ownThread)
struct TrackFileTests {
    static let corpus = Fixtures.root.appendingPathComponent("Tests/Corpus/labels")

    static func cases() throws -> [(file: String, outcome: String, text: String)] {
        let lines = try String(contentsOf: corpus.appendingPathComponent("expected.tsv"), encoding: .utf8)
            .split(separator: "\n").filter { !$0.hasPrefix("#") }
        return lines.map {
            let f = $0.split(separator: "\t", omittingEmptySubsequences: false).map(String.init)
            return (f[0], f[1], f[2])
        }
    }

    /// Two tracks, one with a gap, boxes with fractions, pseudonymous ids.
    static let twoTracks: TrackSet = {
        var entries: [TrackSet.Entry] = []
        for frame in 0..<30 where !(10..<14).contains(frame) {
            entries.append(
                .init(
                    frame: frame, id: "k667ls2eeexqvooj",
                    box: Box(x: 10.25 + Double(frame), y: 20.5, width: 40.125, height: 50)))
        }
        for frame in 5..<25 {
            entries.append(
                .init(
                    frame: frame, id: "abcdefghijklmnop",
                    box: Box(x: 300, y: 100.75 - Double(frame), width: 33.3, height: 44.4)))
        }
        return TrackSet(entries, width: 640, height: 480, frameCount: 30)
    }()

    @Test("every file of Tests/Corpus/labels is read or refused as expected.tsv says, naming the file and the place")
    func corpus() throws {
        let cases = try Self.cases()
        let files = try FileManager.default.contentsOfDirectory(atPath: Self.corpus.path).filter {
            $0 != "expected.tsv"
        }
        #expect(Set(files) == Set(cases.map(\.file)), "every file has a line and every line a file")
        for entry in cases {
            let path = Self.corpus.appendingPathComponent(entry.file).path
            if entry.outcome == "ok" {
                #expect(throws: Never.self, "\(entry.file)") { _ = try TrackFile.read(path) }
                continue
            }
            let error = #expect(throws: LabelError.self, "\(entry.file)") { _ = try TrackFile.read(path) }
            #expect(error?.code.rawValue == entry.outcome, "\(entry.file): \(String(describing: error))")
            let text = entry.text.replacingOccurrences(of: "FILE", with: path)
            #expect(error?.message.hasPrefix(text) == true, "\(entry.file): \(error?.message ?? "") vs \(text)")
        }
    }

    @Test(
        "what the good files hold: MOT's conf-0 rows ignored and frames from 0; CVAT's outside ends a span; Label Studio interpolated between enabled keyframes"
    )
    func contents() throws {
        let mot = try TrackFile.read(Self.corpus.appendingPathComponent("mot-good.txt").path)
        #expect(mot.entries.map(\.frame) == [0, 1] && mot.ids == ["1"])
        let cvat = try TrackFile.read(Self.corpus.appendingPathComponent("cvat-good.xml").path)
        #expect(cvat.entries.map(\.frame) == [0, 3] && cvat.width == 64 && cvat.frameCount == 10)
        #expect(cvat.entries[0].box == Box(x: 1, y: 2, width: 10, height: 10))
        let studio = try TrackFile.read(Self.corpus.appendingPathComponent("labelstudio-good.json").path)
        #expect(studio.entries.map(\.frame) == [0, 1, 2, 3, 4, 7])
        // x from 0 % to 40 % of 100 px over frames 1 to 5 (Label Studio's numbering): 10 px a frame.
        #expect(studio.entries.prefix(5).map(\.box.x) == [0, 10, 20, 30, 40])
        #expect(studio.entries[0].box == Box(x: 0, y: 5, width: 10, height: 10))
        let counted = try TrackFile.read(Self.corpus.appendingPathComponent("labelstudio-frameCount.json").path)
        #expect(counted.frameCount == 10 && counted.entries.count == 3)
        let images = try TrackFile.read(Self.corpus.appendingPathComponent("cvat-images-good.xml").path)
        #expect(images.entries.map(\.frame) == [0, 2, 2] && images.entries.map(\.id) == ["7", "7", "8"])
        #expect(images.width == 64 && images.frameCount == 10)
        let predicted = try TrackFile.read(Self.corpus.appendingPathComponent("labelstudio-predictions-only.json").path)
        #expect(predicted.entries.count == 1 && predicted.width == 100)
    }

    @Test(
        "labels of another video are refused with both figures; a project export's task is picked by the video's name")
    func boundedByVideo() throws {
        let cvat = Self.corpus.appendingPathComponent("cvat-good.xml").path
        #expect(throws: Never.self) {
            _ = try TrackFile.read(cvat, video: VideoBounds(frames: 10, width: 64, height: 48))
        }
        let size = #expect(throws: LabelError.self) {
            _ = try TrackFile.read(cvat, video: VideoBounds(frames: 10, width: 1280, height: 720))
        }
        #expect(size?.message.contains("the labels are of a 64x48 video, the video is 1280x720") == true)
        let length = #expect(throws: LabelError.self) {
            _ = try TrackFile.read(cvat, video: VideoBounds(frames: 472, width: 64, height: 48))
        }
        #expect(length?.message.contains("the labels are of a 10-frame video, the video has 472 frames") == true)
        // MOT declares nothing: its boxes are bounded by the video's frames and size.
        let mot = Self.corpus.appendingPathComponent("mot-good.txt").path
        let beyond = #expect(throws: LabelError.self) {
            _ = try TrackFile.read(mot, video: VideoBounds(frames: 1, width: 640, height: 480))
        }
        #expect(beyond?.message.contains("frame 1 is beyond the video (1 frames, from 0)") == true)
        let project = Self.corpus.appendingPathComponent("labelstudio-project-two-tasks.json").path
        let picked = try TrackFile.read(project, video: VideoBounds(frames: 10, width: 100, height: 50, name: "b.mp4"))
        #expect(picked.entries.isEmpty && picked.width == 100)
        let unknown = #expect(throws: LabelError.self) {
            _ = try TrackFile.read(project, video: VideoBounds(frames: 10, width: 100, height: 50, name: "c.mp4"))
        }
        #expect(unknown?.message.contains("0 of 2 Label Studio tasks are of the video c.mp4") == true)
    }

    @Test("tracks written in each format and read back are the same tracks: IDF1, MOTA and HOTA 1 against the original")
    func roundTrip() throws {
        let original = Self.twoTracks
        let folder = try Fixtures.temporaryFolder()
        for name in ["tracks.txt", "tracks.xml", "tracks.json"] {
            let path = folder.appendingPathComponent(name).path
            try TrackFile.write(original, to: path)
            let back = try TrackFile.read(path)
            #expect(back.entries.count == original.entries.count, "\(name)")
            for (a, b) in zip(back.entries, original.entries) {
                #expect(a.frame == b.frame, "\(name)")
                #expect(abs(a.box.x - b.box.x) < 1e-9 && abs(a.box.y - b.box.y) < 1e-9, "\(name)")
                #expect(abs(a.box.width - b.box.width) < 1e-9 && abs(a.box.height - b.box.height) < 1e-9, "\(name)")
            }
            let score = try TrackMetrics.evaluate(truth: original, tracks: back)
            #expect(score.idf1 == 1 && score.mota == 1 && abs(score.hota - 1) < 1e-12, "\(name)")
        }
    }

    @Test(
        "datumaro (the tool CVAT's and MOT's users convert with) reads Sentinel's CVAT for video and MOT box for box; Sentinel reads datumaro's MOT at IDF1 1 and refuses its CVAT for images, which carries no track ids, naming track_id"
    )
    func datumaro() async throws {
        let original = Self.twoTracks
        let folder = try Fixtures.temporaryFolder()
        let source = folder.appendingPathComponent("sentinel")
        for sub in ["cvat", "mot/gt"] {
            try FileManager.default.createDirectory(
                at: source.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        try TrackFile.write(original, to: source.appendingPathComponent("cvat/annotations.xml").path)
        try TrackFile.write(original, to: source.appendingPathComponent("mot/gt/gt.txt").path)
        let out = folder.appendingPathComponent("datumaro")
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [Fixtures.root.appendingPathComponent("Tests/Peers/datumaro_roundtrip.py").path, source.path, out.path],
            timeout: 300, environment: ["PYTHONPATH": Fixtures.root.appendingPathComponent(".build/datumaro").path])
        try #require(outcome.status == 0, "datumaro (make datumaro?): \(outcome.errors)")
        let seen = try #require(
            try JSONSerialization.jsonObject(with: Data(outcome.output.utf8)) as? [String: Any], "\(outcome.output)")
        for format in ["cvat", "mot"] {
            let summary = seen[format] as? [String: Any]
            #expect(summary?["boxes"] as? Int == original.entries.count, "\(format): \(seen)")
            #expect(summary?["tracks"] as? Int == 2, "\(format): \(seen)")
            // MOT's results layout (-1 visibility) read as occluded on every box; gt.txt is the ground-truth layout.
            #expect(summary?["occluded"] as? Int == 0, "\(format): \(seen)")
        }
        let back = try TrackFile.read(out.appendingPathComponent("mot/gt/gt.txt").path)
        let score = try TrackMetrics.evaluate(truth: original, tracks: back)
        #expect(score.idf1 == 1 && score.mota == 1, "datumaro's MOT: IDF1 \(score.idf1), MOTA \(score.mota)")
        let images = #expect(throws: LabelError.self) {
            _ = try TrackFile.read(out.appendingPathComponent("cvat/default.xml").path)
        }
        #expect(images?.message.contains("CVAT for images: a <box> without a track_id attribute") == true)
    }

    @Test(
        "Sentinel's own truth format is the JSON Schema in Schemas/: the sample's truth validates, a broken copy names its faults"
    )
    func truthSchema() async throws {
        let truth = try JSONSerialization.jsonObject(
            with: Data(
                contentsOf: URL(fileURLWithPath: Fixtures.recording()).deletingPathExtension().appendingPathExtension(
                    "truth.json")))
        var broken = try #require(truth as? [String: Any])
        var frames = try #require(broken["frames"] as? [[String: Any]])
        frames[3]["index"] = nil
        broken["frames"] = frames
        let folder = try Fixtures.temporaryFolder()
        func validate(_ object: Any) async throws -> (Int32, String) {
            let file = folder.appendingPathComponent("truth.jsonl")
            try JSONSerialization.data(withJSONObject: object).write(to: file)
            let outcome = try await Fixtures.run(
                URL(fileURLWithPath: "/usr/bin/python3"),
                [
                    Fixtures.root.appendingPathComponent("Schemas/validate.py").path,
                    Fixtures.root.appendingPathComponent("Schemas/ground-truth.v1.json").path, file.path,
                ])
            return (outcome.status, outcome.output)
        }
        let (good, goodText) = try await validate(truth)
        #expect(good == 0 && goodText.contains("1 events, 0 invalid"), "\(goodText)")
        let (bad, badText) = try await validate(broken)
        #expect(bad == 1 && badText.contains("frames/3: 'index' is a required property"), "\(badText)")
    }
}
