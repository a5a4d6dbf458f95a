import Foundation
import SentinelModels
import SentinelTestSupport
import Testing

/// `sentinel eval emotion` as an operator runs it: photos read as the pipeline reads a face, the figures, the JSON, the
/// head fitted and named in a pipeline, and what check refuses of it; and on ../shared/emotion, the shipped head and the
/// issue's targets.
@Suite("sentinel eval emotion", .ownThread)
struct EvalEmotionTests {
    struct Report: Decodable {
        struct Summary: Decodable {
            var faces: Int
            var accuracy: Double
            var meanRecall: Double
            var calibrationError: Double
            var meanValence: [String: Double]
            var valenceCorrelation: Double
            var confusion: [String: [String: Int]]
        }
        struct Face: Decodable {
            var image: String
            var label: String
            var probabilities: [String: Double]
            var emotion: String
            var confidence: Double
            var valence: Double
        }
        struct Fit: Decodable {
            var crossValidated: Summary
            var calibration: Calibration?
            var head: String?
        }
        struct Calibration: Decodable, Equatable {
            var temperature: Double
            var scales: [String: Double]
            var offsets: [String: Double]
            var valence: [String: Double]
        }
        var summary: Summary
        var faces: [Face]
        var noFace: [String]
        var fit: Fit?
    }

    func sha256(_ path: String) throws -> String {
        try ModelStore.sha256(of: URL(fileURLWithPath: path))
    }

    func sentinel(_ arguments: [String]) async throws -> (status: Int32, output: String, errors: String) {
        try await Fixtures.run(Fixtures.sentinel, arguments)
    }

    /// The hand-labelled set: the astronaut smiles broadly, Grace Hopper's portrait is calm; the ice has no face.
    func handLabelled() throws -> (folder: URL, labels: String) {
        let folder = try Fixtures.temporaryFolder()
        let labels = folder.appendingPathComponent("labels.csv").path
        try """
        image,emotion
        astronaut.png,happiness
        grace_hopper_512x512.jpg,neutral
        640px-IceBlockNearJoekullsarlon.jpg,neutral

        """.write(toFile: labels, atomically: true, encoding: .utf8)
        return (folder, labels)
    }

    @Test(
        "replay --faces writes the faces the pipeline read, a visitor's every --faces-every seconds, named by the published pseudonym, owner-only; eval emotion finds one face in each"
    )
    func collectFaces() async throws {
        let folder = try Fixtures.temporaryFolder()
        // A folder whose name holds a terminal's escape: shown, never sent.
        let stills = folder.appendingPathComponent("stills \u{1B}]0;owned\u{07}").path
        let events = folder.appendingPathComponent("events.jsonl").path
        let replay = try await sentinel([
            "replay", Fixtures.recording(), "--faces", stills, "--faces-every", "1.5", "-o",
            events,
        ])
        #expect(replay.status == 0, "\(replay.errors)")
        let names = try FileManager.default.contentsOfDirectory(atPath: stills).sorted()
        let pattern = /^([a-z2-7]{16})_([0-9]+)\.jpg$/
        #expect(names.count >= 10 && names.allSatisfy { $0.wholeMatch(of: pattern) != nil }, "\(names)")
        var byVisitor: [String: Int] = [:]
        for name in names { byVisitor[String(name.wholeMatch(of: pattern)!.1), default: 0] += 1 }
        #expect(byVisitor.count >= 3)
        #expect(
            replay.errors.contains(
                "\(names.count) face stills of \(byVisitor.count) visitors in \(folder.path)/stills \\u{1b}]0;owned\\u{7}"
            )
                && !replay.errors.contains("\u{1B}"), "\(replay.errors)")
        // Every name is a visitor the events published, and no visitor has more stills than its visit allows.
        struct Event: Decodable {
            struct Visitor: Decodable {
                var faceId: String
                var dwellSeconds: Double
            }
            var visitor: Visitor?
        }
        let published = try String(contentsOfFile: events, encoding: .utf8).split(separator: "\n").map {
            try JSONDecoder().decode(Event.self, from: Data($0.utf8))
        }
        var dwell: [String: Double] = [:]
        for case let visitor? in published.map(\.visitor) {
            dwell[visitor.faceId] = max(dwell[visitor.faceId] ?? 0, visitor.dwellSeconds)
        }
        for (visitor, count) in byVisitor {
            let seconds = try #require(dwell[visitor], "\(visitor) is no published faceId")
            #expect(count <= Int(seconds / 1.5) + 1, "\(visitor): \(count) stills in \(seconds) s")
        }
        var status = stat()
        stat(stills, &status)
        #expect(status.st_mode & 0o777 == 0o700)
        stat(stills + "/" + names[0], &status)
        #expect(status.st_mode & 0o777 == 0o600)
        // The loop's next step reads them: a face found in every still, and read in nearly all (a face cut by the
        // frame's edge may come out a pixel under emotion.minFaceSize in its still).
        let labels = folder.appendingPathComponent("labels.csv").path
        try ("image,emotion\n" + names.map { "\($0),neutral\n" }.joined()).write(
            toFile: labels, atomically: true, encoding: .utf8)
        let read = try await sentinel(["eval", "emotion", stills, "--labels", labels])
        #expect(read.status == 0, "\(read.errors)")
        let counts = try #require(read.output.firstMatch(of: /faces read ([0-9]+); photos without a reading ([0-9]+)/))
        #expect(Int(counts.1)! + Int(counts.2)! == names.count && Int(counts.1)! * 10 >= names.count * 9)
        #expect(!read.output.contains("no face at the detector's score"), "\(read.output)")
    }

    @Test(
        "replay --faces makes each still new in its own folder: a link planted under a still's name is not followed, and a folder that is a link or open to others is refused"
    )
    func facesStayInTheirFolder() async throws {
        let folder = try Fixtures.temporaryFolder()
        let key = folder.appendingPathComponent("pseudonym.key").path
        let pipeline = folder.appendingPathComponent("p.yml").path
        try
            "version: 1\nsources: [{ id: s, input: \(Fixtures.recording()) }]\nprivacy: { pseudonyms: { keyFile: \(key) } }\n"
            .write(
                toFile: pipeline, atomically: true, encoding: .utf8)
        func replay(into stills: String) async throws -> (status: Int32, output: String, errors: String) {
            try await sentinel([
                "replay", Fixtures.recording(), "--pipeline", pipeline, "--faces", stills, "--faces-every", "3", "-o",
                folder.appendingPathComponent("events.jsonl").path,
            ])
        }
        // The names a run gives its stills (the pseudonyms are the key file's, the same each run).
        let first = folder.appendingPathComponent("first").path
        let run = try await replay(into: first)
        #expect(run.status == 0, "\(run.errors)")
        let names = try FileManager.default.contentsOfDirectory(atPath: first).sorted()
        #expect(names.count >= 3, "\(names)")

        // Each of those names planted, as a link to a place outside, in an owner-only folder: none is followed.
        let planted = folder.appendingPathComponent("planted").path
        let outside = folder.appendingPathComponent("outside").path
        try FileManager.default.createDirectory(atPath: outside, withIntermediateDirectories: false)
        mkdir(planted, 0o700)
        for name in names { symlink("\(outside)/\(name)", "\(planted)/\(name)") }
        let again = try await replay(into: planted)
        #expect(again.status == 0, "\(again.errors)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside).isEmpty)
        let written = try FileManager.default.contentsOfDirectory(atPath: planted)
        #expect(written.count == names.count * 2, "\(written)")
        // The control: the links do lead outside (a write through them would have landed there).
        #expect(try FileManager.default.destinationOfSymbolicLink(atPath: "\(planted)/\(names[0])").hasPrefix(outside))

        // A folder others may read, and a link to an owner-only folder: refused, saying why, nothing written.
        let open = folder.appendingPathComponent("open").path
        mkdir(open, 0o755)
        chmod(open, 0o755)
        let link = folder.appendingPathComponent("link").path
        symlink(first, link)
        for (stills, why) in [(open, "others may read or write it (mode 755"), (link, "a link or not a folder")] {
            let refused = try await replay(into: stills)
            #expect(refused.status != 0 && refused.errors.contains(why), "\(refused.errors)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: open).isEmpty)
        #expect(try FileManager.default.contentsOfDirectory(atPath: first).sorted() == names)
    }

    @Test("a hand-labelled set: each face read right, the photo without a face named, every reading in the JSON")
    func handLabelledFigures() async throws {
        let (folder, labels) = try handLabelled()
        let json = folder.appendingPathComponent("readings.json").path
        let (status, output, errors) = try await sentinel([
            "eval", "emotion", Fixtures.photos.path, "--labels", labels, "--json", json,
        ])
        #expect(status == 0, "\(errors)")
        #expect(output.contains("faces read 2; photos without a reading 1"), "\(output)")
        #expect(output.contains("1 no face at the detector's score: 640px-IceBlockNearJoekullsarlon.jpg"), "\(output)")
        #expect(output.contains("accuracy 1.000, mean recall over labels 1.000 (2 faces)"), "\(output)")
        #expect(output.contains("read with the model's head emotion-head.json"), "\(output)")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        #expect(report.noFace == ["640px-IceBlockNearJoekullsarlon.jpg"])
        #expect(report.faces.map(\.image) == ["astronaut.png", "grace_hopper_512x512.jpg"])
        #expect(
            report.faces.map(\.emotion) == ["happy", "neutral"] && report.faces.map(\.label) == ["happy", "neutral"])
        #expect(report.summary.confusion == ["happy": ["happy": 1], "neutral": ["neutral": 1]])
        for face in report.faces {
            #expect(abs(face.probabilities.values.reduce(0, +) - 1) < 1e-9)
            #expect(face.confidence == face.probabilities.values.max())
            #expect((-1...1).contains(face.valence))
        }
        // A calm face reads about 0, a broad smile well above.
        #expect(abs(report.faces[1].valence) < 0.2 && report.faces[0].valence > 0.6, "\(report.faces.map(\.valence))")
    }

    @Test("one folder per label: a label none of the seven (contempt) is left out and said, as the model maps none")
    func folderLayout() async throws {
        let folder = try Fixtures.temporaryFolder()
        for (label, photo) in [
            ("happy", "astronaut.png"), ("neutral", "grace_hopper_512x512.jpg"), ("contempt", "astronaut.png"),
        ] {
            let target = folder.appendingPathComponent(label)
            try FileManager.default.createDirectory(at: target, withIntermediateDirectories: true)
            try FileManager.default.copyItem(
                atPath: Fixtures.photo(photo), toPath: target.appendingPathComponent(photo).path)
        }
        let (status, output, errors) = try await sentinel(["eval", "emotion", folder.path])
        #expect(status == 0, "\(errors)")
        #expect(output.contains("contempt (1 photos): left out"), "\(output)")
        #expect(output.contains("faces read 2; photos without a reading 0"), "\(output)")
    }

    @Test(
        "hostile photo folders: a FIFO named x.jpg is passed over as unreadable, not read forever; escape sequences in a photo's name, a label and a folder's name reach the terminal shown, never sent; one photo labelled as good.jpg, ./good.jpg and .//good.jpg is refused as labelled twice"
    )
    func hostileFolders() async throws {
        let escape = "\u{1B}]0;owned\u{07}"
        let folder = try Fixtures.temporaryFolder()
        let images = folder.appendingPathComponent("photos \(escape)")
        try FileManager.default.createDirectory(at: images, withIntermediateDirectories: true)
        try FileManager.default.copyItem(
            atPath: Fixtures.photo("astronaut.png"), toPath: images.appendingPathComponent("astronaut.png").path)
        #expect(mkfifo(images.appendingPathComponent("x.jpg").path, 0o600) == 0)
        let labels = folder.appendingPathComponent("labels.csv").path
        try
            "image,emotion\nastronaut.png,happiness\nx.jpg,neutral\nmissing\(escape).jpg,sad\nastronaut.png\(escape),\(escape)\n"
            .write(toFile: labels, atomically: true, encoding: .utf8)
        let outcome = try await Fixtures.run(
            Fixtures.sentinel, ["eval", "emotion", images.path, "--labels", labels], timeout: 120)
        #expect(!outcome.timedOut && outcome.status == 0, "\(outcome.errors)")
        #expect(outcome.output.contains("faces read 1; photos without a reading 2"), "\(outcome.output)")
        #expect(
            outcome.output.contains("x.jpg")
                && outcome.output.contains("1 no such file: missing\\u{1b}]0;owned\\u{7}.jpg"),
            "\(outcome.output)")
        #expect(!(outcome.output + outcome.errors).contains("\u{1B}"), "\(outcome.output)\(outcome.errors)")

        try "image,emotion\ngood.jpg,happy\n./good.jpg,sad\n.//good.jpg,angry\n".write(
            toFile: labels, atomically: true, encoding: .utf8)
        let twice = try await sentinel(["eval", "emotion", images.path, "--labels", labels])
        #expect(
            twice.status == 1 && twice.errors.contains("\(labels):3: good.jpg is labelled twice"), "\(twice.errors)")
    }

    /// 24 photos of 12 people (each a shifted, scaled, lit and turned copy of the two portraits): 12 happy, 12 neutral.
    func twelvePeople() async throws -> (folder: URL, labels: String) {
        let folder = try Fixtures.temporaryFolder()
        let script = """
            import cv2, sys, math
            out = sys.argv[1]
            rows = ["image,emotion"]
            for source, label in (("astronaut.png", "happiness"), ("grace_hopper_512x512.jpg", "neutral")):
                image = cv2.imread(sys.argv[2] + "/" + source)
                h, w = image.shape[:2]
                for k in range(12):
                    m = cv2.getRotationMatrix2D((w / 2, h / 2), (k - 6) * 2.5, 0.8 + 0.03 * k)
                    m[0, 2] += (k % 4 - 2) * 9
                    m[1, 2] += (k % 3 - 1) * 9
                    v = cv2.warpAffine(image, m, (w, h), borderMode=cv2.BORDER_REPLICATE)
                    v = cv2.convertScaleAbs(v, alpha=0.75 + 0.04 * k, beta=(k % 5) * 6)
                    name = "%s%02d_1.jpg" % (label[:1], k)
                    cv2.imwrite(out + "/" + name, v)
                    rows.append(name + "," + label)
            open(out + "/labels.csv", "w").write("\\n".join(rows) + "\\n")
            """
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"), ["-c", script, folder.path, Fixtures.photos.path], timeout: 120)
        try #require(outcome.status == 0, "\(outcome.errors)")
        return (folder, folder.appendingPathComponent("labels.csv").path)
    }

    @Test(
        "--fit fits a head over the model's feature layer, prints before and after by person, writes it with its sha256; --apply names it in the pipeline, which check accepts; check refuses it read without the mirror, changed, of another size, or over a layer the model lacks; a fit on too few people is refused"
    )
    func fitAndApply() async throws {
        let (folder, labels) = try await twelvePeople()
        let pipeline = folder.appendingPathComponent("p.yml").path
        let text = """
            version: 1
            sources:
              - id: door
                input: rtsp://127.0.0.1:9/stream   # never opened by eval
            emotion:
              minConfidence: 0.4   # kept as written

            """
        try text.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let head = folder.appendingPathComponent("head.json").path
        let fitted = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "eval", "emotion", folder.path, "--labels", labels, "--pipeline", pipeline, "--fit", "--folds", "3",
                "--head", head, "--apply",
            ], timeout: 600)
        #expect(fitted.status == 0, "\(fitted.errors)")
        #expect(fitted.output.contains("fit on 24 faces of 24 people"), "\(fitted.output)")
        #expect(
            fitted.output.contains("model alone (recall, valence) calibration (recall, valence) head"),
            "\(fitted.output)")
        #expect(
            fitted.output.contains("head over layer add_4 (2048 values): chosen by cross-validation"),
            "\(fitted.output)")
        let sha = try sha256(head)
        #expect(fitted.output.contains("written to \(head), sha256 \(sha)"), "\(fitted.output)")
        #expect(fitted.output.contains("applied to \(pipeline) (emotion.head)"), "\(fitted.output)")
        let written = try String(contentsOfFile: pipeline, encoding: .utf8)
        #expect(written.contains("minConfidence: 0.4   # kept as written") && written.contains(sha), "\(written)")
        let check = try await sentinel(["check", pipeline])
        #expect(check.status == 0, "\(check.output)\(check.errors)")
        let again = try await sentinel(["eval", "emotion", folder.path, "--labels", labels, "--pipeline", pipeline])
        #expect(again.output.contains("read with the pipeline's head \(head)"), "\(again.output)")
        #expect(again.output.contains("in-sample: it was fitted on these very photos"), "\(again.output)")

        // Read without the mirror images it was fitted with.
        try written.replacingOccurrences(of: "# kept as written", with: "# kept as written\n  mirror: false").write(
            toFile: pipeline, atomically: true, encoding: .utf8)
        let unmirrored = try await sentinel(["check", pipeline])
        #expect(
            unmirrored.status == 1
                && (unmirrored.output + unmirrored.errors).contains(
                    "was fitted on faces read another way (emotion.mirror: false, fitted with true)"),
            "\(unmirrored.output)\(unmirrored.errors)")
        try written.write(toFile: pipeline, atomically: true, encoding: .utf8)
        // Changed after it was named.
        let original = try Data(contentsOf: URL(fileURLWithPath: head))
        try (original + Data(" ".utf8)).write(to: URL(fileURLWithPath: head))
        let changed = try await sentinel(["check", pipeline])
        #expect(
            changed.status == 1
                && (changed.output + changed.errors).contains("expected \(sha): it changed since it was named"),
            "\(changed.output)\(changed.errors)")
        // Of another size, its checksum named right.
        var json = try #require(try JSONSerialization.jsonObject(with: original) as? [String: Any])
        json["features"] = ["layer": "add_4", "size": 4]
        json["weights"] = Array(repeating: [0.0, 0, 0, 0], count: 7)
        try JSONSerialization.data(withJSONObject: json).write(to: URL(fileURLWithPath: head))
        try text.appending("  head: { file: \(head), sha256: \(try sha256(head)) }\n").write(
            toFile: pipeline, atomically: true, encoding: .utf8)
        let small = try await sentinel(["check", pipeline])
        #expect(
            small.status == 1
                && (small.output + small.errors).contains(
                    "reads layer add_4 of 4 values; model emotion names add_4 of 2048"),
            "\(small.output)\(small.errors)")
        // A model description naming a layer the network lacks.
        let models = folder.appendingPathComponent("models")
        try FileManager.default.createDirectory(at: models, withIntermediateDirectories: true)
        let manifest = try String(
            contentsOf: Fixtures.root.appendingPathComponent("Models/models.yml"), encoding: .utf8)
        try manifest.replacingOccurrences(of: "layer: add_4", with: "layer: add_9").write(
            to: models.appendingPathComponent("models.yml"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            at: models.appendingPathComponent("cache"),
            withDestinationURL: Fixtures.root.appendingPathComponent("Models/cache"))
        try FileManager.default.copyItem(
            at: Fixtures.root.appendingPathComponent("Models/emotion-head.json"),
            to: models.appendingPathComponent("emotion-head.json"))
        try text.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let layer = try await sentinel(["check", pipeline, "--models", models.path])
        #expect(
            layer.status == 1 && (layer.output + layer.errors).contains("has no layer add_9"),
            "\(layer.output)\(layer.errors)")

        // Two people are not a camera's faces.
        let (_, few) = try handLabelled()
        let refused = try await sentinel([
            "eval", "emotion", Fixtures.photos.path, "--labels", few, "--pipeline", pipeline, "--fit",
        ])
        #expect(
            refused.status == 1 && refused.errors.contains("the faces read are of 2 people; a fit needs at least 10"),
            "\(refused.output)\(refused.errors)")
    }

    @Test(
        "--fit counts a photo given twice once, whatever it is named: copies of one photo named as 24 people are one face of one person, refused; a fit whose faces are all one label is refused"
    )
    func fitNeedsDistinctPhotosAndLabels() async throws {
        let (folder, labels) = try await twelvePeople()
        let pipeline = folder.appendingPathComponent("p.yml").path
        try "version: 1\nsources:\n  - id: door\n    input: rtsp://127.0.0.1:9/stream\n".write(
            toFile: pipeline, atomically: true, encoding: .utf8)
        func fit(_ labels: String) async throws -> (status: Int32, output: String, errors: String) {
            try await sentinel(["eval", "emotion", folder.path, "--labels", labels, "--pipeline", pipeline, "--fit"])
        }
        // 24 copies of one photo under 24 people's names, half of them labelled each way.
        let copies = folder.appendingPathComponent("copies.csv").path
        var rows = ["image,emotion"]
        for k in 0..<24 {
            let name = String(format: "c%02d_1.jpg", k)
            try FileManager.default.copyItem(
                at: folder.appendingPathComponent("h00_1.jpg"), to: folder.appendingPathComponent(name))
            rows.append("\(name),\(k % 2 == 0 ? "happiness" : "neutral")")
        }
        try (rows.joined(separator: "\n") + "\n").write(toFile: copies, atomically: true, encoding: .utf8)
        let copied = try await fit(copies)
        #expect(copied.output.contains("--fit: 23 photos are copies of another, each counted once"), "\(copied.output)")
        #expect(
            copied.status == 1 && copied.errors.contains("the faces read are of 1 people; a fit needs at least 10"),
            "\(copied.output)\(copied.errors)")
        // 24 distinct photos of 24 people, every one labelled happiness.
        let one = folder.appendingPathComponent("one.csv").path
        let relabelled = try String(contentsOfFile: labels, encoding: .utf8).replacingOccurrences(
            of: ",neutral", with: ",happiness")
        try relabelled.write(toFile: one, atomically: true, encoding: .utf8)
        let single = try await fit(one)
        #expect(
            single.status == 1
                && single.errors.contains("every face fitted is labelled happy; a fit needs at least two"),
            "\(single.output)\(single.errors)")
        // The control: the same photos labelled as they are fit.
        let both = try await fit(labels)
        #expect(both.status == 0, "\(both.output)\(both.errors)")
    }

    @Test(
        "the operator's loop cannot switch emotion off unseen: a label of fewer than 5 people is left out, saying so; a fit that leaves most faces unread is shown beside what the pipeline reads now and refused by --apply, the pipeline unchanged; --force applies it, and check then warns"
    )
    func fitCannotSilenceEmotion() async throws {
        let (folder, labels) = try await twelvePeople()
        // Labels that say nothing of the faces: each portrait happy for half of its "people", neutral for the others;
        // and sad for three people only.
        let rows = try String(contentsOfFile: labels, encoding: .utf8).split(separator: "\n").dropFirst().enumerated()
            .map { i, row in
                let name = row.split(separator: ",")[0]
                return "\(name),\(i % 2 == 0 ? "happiness" : "neutral")"
            }
        var copies: [String] = []
        for k in 0..<3 {
            let name = String(format: "s%02d_1.jpg", k)
            // Another photo's bytes and one more after its end: a photo of its own, to the fit's count of copies.
            let bytes = try Data(contentsOf: folder.appendingPathComponent(String(format: "n%02d_1.jpg", k + 3)))
            try (bytes + Data([UInt8(k)])).write(to: folder.appendingPathComponent(name))
            copies.append("\(name),sad")
        }
        let noise = folder.appendingPathComponent("noise.csv").path
        try (["image,emotion"] + rows + copies).joined(separator: "\n").appending("\n").write(
            toFile: noise, atomically: true, encoding: .utf8)
        let pipeline = folder.appendingPathComponent("p.yml").path
        let text =
            "version: 1\nsources:\n  - id: door\n    input: rtsp://127.0.0.1:9/stream\nemotion:\n  minConfidence: 0.6\n"
        try text.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let head = folder.appendingPathComponent("head.json").path
        let arguments = [
            "eval", "emotion", folder.path, "--labels", noise, "--pipeline", pipeline, "--fit", "--folds", "3",
            "--head",
            head, "--apply",
        ]
        let refused = try await sentinel(arguments)
        #expect(
            refused.output.contains(
                "--fit: sad is 3 faces of 3 people; a label needs at least 5 people to be fitted: left out"),
            "\(refused.output)")
        #expect(refused.output.contains("now (recall, valence)"), "\(refused.output)")
        #expect(
            refused.status == 1 && refused.errors.contains("--apply refused: the fit reads these faces worse")
                && refused.errors.contains("of faces read below emotion.minConfidence"),
            "\(refused.output)\(refused.errors)")
        #expect(try String(contentsOfFile: pipeline, encoding: .utf8) == text)
        // The control: asked for, it is applied, and check says what it recorded.
        let forced = try await sentinel(arguments + ["--force"])
        #expect(
            forced.status == 0 && forced.output.contains("applied to \(pipeline)"), "\(forced.output)\(forced.errors)")
        let check = try await sentinel(["check", pipeline])
        #expect(
            check.status == 0 && check.output.contains("warning: \(pipeline):")
                && check.output.contains(
                    "reads worse, by the figures it was fitted with, than model emotion's shipped head")
                && check.output.contains("\(pipeline): ok (1 warning)"),
            "\(check.output)\(check.errors)")
    }

    @Test(
        "--fit on a model without a feature layer fits a calibration: printed as a models.yml block, --apply writes it into the pipeline as the setting tables read it (its fitted text quoted, how the faces were read), check accepts it, and eval reads with it"
    )
    func fitCalibration() async throws {
        let (folder, labels) = try await twelvePeople()
        // The shipped model described without its feature layer and head: a calibration is all that can be fitted.
        let models = folder.appendingPathComponent("models")
        try FileManager.default.createDirectory(at: models, withIntermediateDirectories: true)
        let manifest = try String(
            contentsOf: Fixtures.root.appendingPathComponent("Models/models.yml"), encoding: .utf8)
        let bare = manifest.split(separator: "\n", omittingEmptySubsequences: false)
            .filter { !$0.hasPrefix("      features: ") && !$0.hasPrefix("      head: ") }.joined(separator: "\n")
        try bare.write(to: models.appendingPathComponent("models.yml"), atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(
            at: models.appendingPathComponent("cache"),
            withDestinationURL: Fixtures.root.appendingPathComponent("Models/cache"))
        let pipeline = folder.appendingPathComponent("p.yml").path
        try "version: 1\nsources:\n  - id: door\n    input: rtsp://127.0.0.1:9/stream\nemotion:\n  minConfidence: 0.4\n"
            .write(toFile: pipeline, atomically: true, encoding: .utf8)
        let fitted = try await sentinel([
            "eval", "emotion", folder.path, "--labels", labels, "--pipeline", pipeline, "--models", models.path,
            "--fit", "--folds", "3", "--apply",
        ])
        #expect(fitted.status == 0, "\(fitted.output)\(fitted.errors)")
        #expect(
            fitted.output.contains("model alone (recall, valence) calibration (recall, valence)"), "\(fitted.output)")
        let block = fitted.output.split(separator: "\n").drop { !$0.hasSuffix("  calibration:") }.prefix(8).map(
            String.init)
        #expect(block.count == 8 && block[1].contains("  temperature: "), "\(block)")
        #expect(
            block.contains { $0.contains("  fitted: \"sentinel eval emotion --fit on 24 faces of 24 people") },
            "\(block)")
        #expect(block.contains { $0.contains("  valence: { angry: ") }, "\(block)")
        #expect(block.contains { $0.contains("  fittedWith: { margin: 0.1, align: true, mirror: true }") }, "\(block)")
        #expect(fitted.output.contains("applied to \(pipeline) (emotion.calibration)"), "\(fitted.output)")
        let written = try String(contentsOfFile: pipeline, encoding: .utf8)
        #expect(written.contains("minConfidence: 0.4") && written.contains("calibration:"), "\(written)")
        let check = try await sentinel(["check", pipeline, "--models", models.path])
        #expect(check.status == 0, "\(check.output)\(check.errors)")
        let again = try await sentinel([
            "eval", "emotion", folder.path, "--labels", labels, "--pipeline", pipeline, "--models", models.path,
        ])
        #expect(again.output.contains("read with the pipeline's calibration"), "\(again.output)")
        #expect(again.output.contains("in-sample: it was fitted on these very photos"), "\(again.output)")
    }

    @Test("check refuses a face detector named as the emotion model, with the file and line")
    func detectorIsNoClassifier() async throws {
        let pipeline = try Fixtures.temporaryFolder().appendingPathComponent("p.yml").path
        try """
        version: 1
        sources:
          - id: door
            input: rtsp://127.0.0.1:9/stream
        emotion:
          model: haar-frontalface

        """.write(toFile: pipeline, atomically: true, encoding: .utf8)
        let (status, output, errors) = try await sentinel(["check", pipeline])
        #expect(status == 1)
        #expect(
            (output + errors).contains(
                "\(pipeline):6:10: emotion.model: model haar-frontalface is a face detector (kind cascade), not an emotion classifier"
            ),
            "\(output)\(errors)")
    }

    @Test(
        "on ../shared/emotion, cross-validated by person, the head meets the targets and --fit gives the shipped head again",
        .enabled(if: Fixtures.hasShared, "needs ../shared/emotion (the labelled faces), which a fresh clone lacks"))
    func sharedTargets() async throws {
        let folder = try Fixtures.temporaryFolder()
        let json = folder.appendingPathComponent("fit.json").path
        let head = folder.appendingPathComponent("head.json").path
        let outcome = try await Fixtures.run(
            Fixtures.sentinel,
            [
                "eval", "emotion", Fixtures.sharedFile("emotion/images"), "--labels",
                Fixtures.sharedFile("emotion/labels.csv"), "--fit", "--json", json, "--head", head,
            ], timeout: 900)
        let output = outcome.output
        #expect(outcome.status == 0, "\(outcome.errors)")
        let report = try JSONDecoder().decode(Report.self, from: Data(contentsOf: URL(fileURLWithPath: json)))
        let figures = try #require(report.fit).crossValidated
        // The issue's targets are for other people; these, on photos no fold's head saw, are a little above where
        // other people's figures land (docs/emotion.md: accuracy and correlation on another mix of labels differ).
        #expect(figures.accuracy >= 0.70 && figures.meanRecall >= 0.53, "\(output)")
        #expect(figures.calibrationError <= 0.04 && figures.valenceCorrelation >= 0.74, "\(output)")
        #expect(abs(figures.meanValence["neutral"]!) <= 0.10, "\(output)")
        #expect(figures.meanValence["angry"]! <= -0.45 && figures.meanValence["sad"]! <= -0.30, "\(output)")
        #expect(figures.meanValence["surprise"]! >= 0.15 && figures.meanValence["happy"]! >= 0.65, "\(output)")
        // Models/emotion-head.json is this very fit, to what OpenCV's kernels change from one processor to another.
        struct Head: Decodable {
            var weights: [[Double]]
            var bias: [Double]
            var temperature: Double
        }
        let shipped = try JSONDecoder().decode(
            Head.self, from: Data(contentsOf: Fixtures.root.appendingPathComponent("Models/emotion-head.json")))
        let fitted = try JSONDecoder().decode(Head.self, from: Data(contentsOf: URL(fileURLWithPath: head)))
        let largest = shipped.weights.joined().map(abs).max()!
        let apart = zip(shipped.weights.joined(), fitted.weights.joined()).map { abs($0 - $1) }.max()!
        #expect(apart <= 0.02 * largest, "weights up to \(apart) apart, the largest \(largest)")
        #expect(abs(shipped.temperature - fitted.temperature) <= 0.02, "\(shipped.temperature) \(fitted.temperature)")
    }
}
