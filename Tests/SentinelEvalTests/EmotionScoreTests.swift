import Foundation
import SentinelCore
import SentinelEval
import SentinelTestSupport
import SentinelWire
import Testing

@Suite("Emotion scoring: the figures, the calibration fit, the labels", .computing)
struct EmotionScoreTests {
    func reading(_ probabilities: [Double], valence: Double) -> EmotionReading {
        EmotionReading(probabilities: probabilities, valence: valence)
    }

    /// Seven probabilities with `top` at `p` and the rest shared equally.
    func peaked(_ top: Emotion, _ p: Double) -> [Double] {
        Emotion.allCases.map { $0 == top ? p : (1 - p) / 6 }
    }

    @Test("the expected calibration error over 15 bins, computed by hand")
    func calibrationErrorByHand() {
        // Bins (k/15, (k+1)/15]: 0.9 in bin 13 (two right, one wrong: accuracy 2/3), 0.5 in bin 7 (right), 0.2 in bin
        // 2 (wrong). 3/5 x |0.9 - 2/3| + 1/5 x |0.5 - 1| + 1/5 x |0.2 - 0| = 0.14 + 0.1 + 0.04 = 0.28.
        let tops: [(probability: Double, right: Bool)] = [
            (0.9, true), (0.9, true), (0.9, false), (0.5, true), (0.2, false),
        ]
        #expect(abs(EmotionScore.expectedCalibrationError(tops) - 0.28) < 1e-12)
        // A probability of exactly 1 is in the last bin, not past it; perfect calibration is 0.
        #expect(EmotionScore.expectedCalibrationError([(1, true), (1, true)]) == 0)
        #expect(
            abs(
                EmotionScore.expectedCalibrationError([
                    (0.6, true), (0.6, true), (0.6, false), (0.6, false), (0.6, true),
                ])) < 1e-12)
    }

    @Test("accuracy, recall per label and their unweighted mean, the confusion, valence per label and its correlation")
    func figures() {
        let faces: [(truth: Emotion, reading: EmotionReading)] = [
            (.happy, reading(peaked(.happy, 0.8), valence: 0.9)),
            (.happy, reading(peaked(.happy, 0.6), valence: 0.7)),
            (.happy, reading(peaked(.neutral, 0.5), valence: 0.1)),
            (.neutral, reading(peaked(.neutral, 0.7), valence: 0.0)),
            (.angry, reading(peaked(.sad, 0.4), valence: -0.6)),
        ]
        let score = EmotionScore(faces, minConfidence: 0.45)
        #expect(score.faces == 5)
        #expect(abs(score.accuracy - 3.0 / 5) < 1e-12)
        #expect(score.recall == ["happy": 2.0 / 3, "neutral": 1, "angry": 0])
        #expect(abs(score.meanRecall - (2.0 / 3 + 1 + 0) / 3) < 1e-12)
        #expect(score.confusion["happy"] == ["happy": 2, "neutral": 1])
        #expect(score.confusion["angry"] == ["sad": 1])
        #expect(abs(score.meanValence["happy"]! - 0.5666666666666667) < 1e-12)
        #expect(score.counts == ["happy": 3, "neutral": 1, "angry": 1])
        #expect(abs(score.unknownShare - 1.0 / 5) < 1e-12, "one top probability below 0.45")
        #expect(abs(score.meanConfidence - (0.8 + 0.6 + 0.5 + 0.7 + 0.4) / 5) < 1e-12)
        // Labels' valence 1, 1, 1, 0, -1 against 0.9, 0.7, 0.1, 0, -0.6: Pearson's r by hand.
        let a = [0.9, 0.7, 0.1, 0.0, -0.6]
        let b = [1.0, 1, 1, 0, -1]
        let ma = a.reduce(0, +) / 5
        let mb = b.reduce(0, +) / 5
        let r =
            zip(a, b).reduce(0) { $0 + ($1.0 - ma) * ($1.1 - mb) }
            / (a.reduce(0) { $0 + ($1 - ma) * ($1 - ma) } * b.reduce(0) { $0 + ($1 - mb) * ($1 - mb) }).squareRoot()
        #expect(abs(score.valenceCorrelation - r) < 1e-12)
    }

    /// A deterministic stream of numbers in [0, 1).
    struct Numbers {
        var state: UInt64 = 42
        mutating func next() -> Double {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            return Double(state >> 11) / Double(1 << 53)
        }
    }

    /// Faces whose true expression is drawn from `softmax(s)` while the model says `softmax(model(s))`.
    func samples(_ count: Int, model: ([Double]) -> [Double]) -> [CalibrationFit.Sample] {
        var numbers = Numbers()
        return (0..<count).map { i in
            let s = Emotion.allCases.map { _ in numbers.next() * 4 - 2 }
            let truth = ClassifierDescription.softmax(s)
            var u = numbers.next()
            var y = 0
            while y < 6, u > truth[y] {
                u -= truth[y]
                y += 1
            }
            return CalibrationFit.Sample(
                probabilities: ClassifierDescription.softmax(model(s)), truth: Emotion.allCases[y], group: "p\(i % 97)")
        }
    }

    @Test(
        "a model twice as sure as it should be gets a temperature of about 2; a bias against neutral, an offset for it")
    func fitRecoversMiscalibration() {
        let overconfident = CalibrationFit.fit(samples(6000) { $0.map { $0 * 2 } })
        for scale in overconfident.scales {
            #expect(abs(scale / overconfident.temperature - 0.5) < 0.06, "\(overconfident)")
        }
        let neutral = Emotion.allCases.firstIndex(of: .neutral)!
        let biased = CalibrationFit.fit(samples(6000) { s in s.indices.map { s[$0] - ($0 == neutral ? 1.5 : 0) } })
        let others = biased.offsets.enumerated().filter { $0.offset != neutral }.map(\.element)
        let lift = biased.offsets[neutral] - others.reduce(0, +) / Double(others.count)
        #expect(abs(lift - 1.5) < 0.2, "\(biased.offsets)")
        // Calibrated, the model's readings are as sure as they are right: mean confidence near accuracy.
        let data = samples(6000) { $0.map { $0 * 2 } }
        let score = EmotionScore(
            data.map { ($0.truth, overconfident.reading($0.probabilities)) }, minConfidence: 0.4)
        #expect(score.calibrationError < 0.03, "\(score.calibrationError)")
    }

    @Test("valence by least squares: one-hot readings of each expression give back each expression's own valence")
    func valenceFit() {
        let data = Emotion.allCases.flatMap { emotion in
            (0..<200).map { i in
                CalibrationFit.Sample(
                    probabilities: Emotion.allCases.map { $0 == emotion ? 0.999_94 : 0.000_01 }, truth: emotion,
                    group: "\(emotion)\(i)")
            }
        }
        let fitted = CalibrationFit.fit(data)
        for (value, emotion) in zip(fitted.valence, Emotion.allCases) {
            #expect(abs(value - emotion.valence) < 0.02, "\(emotion): \(value)")
        }
    }

    @Test("cross-validation reads each fold with a calibration that never saw it")
    func crossValidationHoldsOut() throws {
        // Two folds. The people of fold 0 are happy, those of fold 1 sad, and the model says happy of everyone: fitted
        // on all, a calibration could learn that half are sad; fitted on fold 0 alone, it reads fold 1 happy.
        let people = (0..<40).map { "person\($0)" }
        let data = people.flatMap { person in
            (0..<5).map { _ in
                CalibrationFit.Sample(
                    probabilities: peaked(.happy, 0.7),
                    truth: CalibrationFit.fold(of: person, folds: 2) == 0 ? .happy : .sad, group: person)
            }
        }
        #expect(Set(people.map { CalibrationFit.fold(of: $0, folds: 2) }) == [0, 1])
        let validated = CalibrationFit.crossValidated(data, folds: 2)
        #expect(validated.count == data.count)
        let sad = validated.filter { $0.truth == .sad }
        let happy = validated.filter { $0.truth == .happy }
        // Read by a calibration fitted on the happy fold alone: surer of happy than the model itself.
        #expect(sad.allSatisfy { $0.reading.top.emotion == .happy && $0.reading.top.probability > 0.7 })
        // And the happy fold by one fitted on the sad fold alone: sad.
        #expect(happy.allSatisfy { $0.reading.top.emotion == .sad })
    }

    @Test("a labels CSV: header by name, quoted fields, the person from the name; problems name the line")
    func labelsCSV() throws {
        let text = """
            file,Expression,note\r
            "Colin_Powell_0003.jpg",anger,"a note, with a comma"\r
            Dileep_12.jpg,happiness,"two
            lines"\r
            plain.png,neutral,\r

            """
        let rows = try EmotionLabels.csv(Data(text.utf8), file: "labels.csv")
        #expect(rows.map(\.name) == ["Colin_Powell_0003.jpg", "Dileep_12.jpg", "plain.png"])
        #expect(rows.map(\.label) == ["anger", "happiness", "neutral"])
        func refusal(_ text: String) -> String? {
            do {
                _ = try EmotionLabels.csv(Data(text.utf8), file: "l.csv")
                return nil
            } catch { return error.message }
        }
        #expect(refusal("image,emotion\na.jpg,happy\nb.jpg\n") == "l.csv:3: 1 fields where the header has 2")
        #expect(refusal("image,emotion\na.jpg,happy\na.jpg,sad\n") == "l.csv:3: a.jpg is labelled twice")
        #expect(refusal("photo,mood\na.jpg,happy\n")?.hasPrefix("l.csv:1: the header must name") == true)
        #expect(
            refusal("image,emotion\n../secret.jpg,happy\n")
                == "l.csv:2: image: ../secret.jpg is not inside the images folder")
        #expect(refusal("image,emotion\n\"a.jpg,happy\n") == "l.csv:2: a quoted field is not closed")
        #expect(refusal("image,emotion\na.jpg,\n") == "l.csv:2: an empty emotion")
        #expect(
            refusal("image,emotion\n\u{1B}]0;x\u{07}.jpg,happy\n\u{1B}]0;x\u{07}.jpg,sad\n")?.contains("\u{1B}")
                == false)
    }

    @Test(
        "a Label Studio export's image URL with an access token in its query: the photo is named by its path, and the token is never part of the name (nor of any message that shows it)"
    )
    func labelStudioTokenIsNoName() throws {
        let export = """
            [{"id": 1, "data": {"image": "https://ls.example/data/upload/3/1a2b3c4d-face_1.jpg?token=SECRET#x"},
              "annotations": [{"result": [{"type": "choices", "value": {"choices": ["Happy"]}}]}]}]
            """
        let rows = try EmotionLabels.labelStudio(Data(export.utf8), file: "export.json") { $0 == "face_1.jpg" }
        #expect(rows.map(\.name) == ["face_1.jpg"], "\(rows)")
    }

    @Test("every file of Tests/Corpus/emotion is read or refused as expected.tsv says, naming the file and the line")
    func corpus() throws {
        for line in try Corpus.lines("emotion") {
            let path = line.file.path
            do {
                let rows = try EmotionLabels.rows(Data(contentsOf: line.file), file: path) { _ in false }
                #expect(
                    line.outcome == "ok" && line.expected.hasPrefix("\(rows.count) rows"), "\(line): \(rows.count) rows"
                )
            } catch let error as LabelError {
                #expect(error.code.rawValue == line.outcome, "\(line): \(error.message)")
                #expect(
                    error.message.hasPrefix(line.expected.replacingOccurrences(of: "FILE", with: path)),
                    "\(error.message)")
                #expect(!error.message.unicodeScalars.contains { $0.properties.generalCategory == .control })
            }
        }
    }

    @Test("labels: Sentinel's seven and their common spellings; another is read as the model maps it, or left out")
    func labelNames() throws {
        #expect(Emotion(label: "Anger") == .angry && Emotion(label: "happiness") == .happy)
        #expect(Emotion(label: "sadness") == .sad && Emotion(label: "surprised") == .surprise)
        #expect(Emotion(label: "contempt") == nil)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("labels-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        for (label, file) in [
            ("happiness", "a.jpg"), ("contempt", "b.jpg"), ("contempt", "c.png"), ("neutral", "d.txt"),
        ] {
            try FileManager.default.createDirectory(
                at: folder.appendingPathComponent(label), withIntermediateDirectories: true)
            try Data().write(to: folder.appendingPathComponent("\(label)/\(file)"))
        }
        let refused = try EmotionLabels.read(images: folder.path, labels: nil)
        #expect(refused.photos.map(\.name) == ["happiness/a.jpg"], "d.txt is no picture")
        #expect(refused.otherLabels.map(\.label) == ["contempt"] && refused.otherLabels[0].photos == 2)
        #expect(refused.otherLabels[0].readAs == nil)
        let mapped = try EmotionLabels.read(images: folder.path, labels: nil) { $0 == "contempt" ? .disgust : nil }
        #expect(mapped.photos.count == 3 && mapped.photos.compactMap(mapped.emotion).count == 3)
        #expect(mapped.emotion(of: mapped.photos[1]) == .disgust)
    }

    @Test(
        "the person in a photo is its name before the last _number",
        arguments: [
            ("Colin_Powell_0003.jpg", "Colin_Powell"), ("Dileep_12.jpg", "Dileep"),
            ("happy/PrivateTest_88.png", "PrivateTest"),
            ("plain.png", "plain"), ("_7.jpg", "_7"), ("x_.jpg", "x_"),
        ])
    func person(name: String, person: String) {
        #expect(EmotionLabels.person(of: name) == person)
    }
}
