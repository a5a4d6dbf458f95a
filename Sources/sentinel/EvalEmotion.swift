import ArgumentParser
import Crypto
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelModels
import SentinelPipeline
import SentinelVision
import SentinelVisitors
import SentinelWire

extension Eval {
    struct EmotionCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "emotion",
            abstract: "Read labelled photos of faces as the pipeline reads a face, and score the readings.",
            discussion: """
                IMAGES is a folder of photos with --labels naming each one's expression (a CSV with a header: image \
                and emotion columns), or, without --labels, a folder of one folder per label (angry/, happy/, ...; \
                FER2013 and AffectNet style). Labels: Sentinel's seven (angry, disgust, fear, happy, sad, surprise, \
                neutral) and their common spellings (anger, happiness, sadness, ...); any other (contempt) is read as \
                the model's description maps it, or left out and counted. Each photo goes through the pipeline's \
                detector (its largest face), the emotion gate, crop, alignment, mirror image, model and calibration. \
                Prints faces read, photos without a face, accuracy, recall per label and their mean, the confusion \
                matrix, the expected calibration error (15 bins of the top probability), the mean published valence \
                per label and its correlation with the labels' valence.

                --fit adapts the model to the photos. For a model whose description names a feature layer, it fits a \
                head: a multinomial logistic regression from that layer to the seven, its L2 penalty and class \
                weighting chosen by cross-validation by person, then a temperature; it writes the head as a file \
                beside the model (or --head FILE) and prints its sha256. For another model it fits a calibration of \
                the seven outputs (scales and offsets by log-loss, valence by least squares). Either way it prints the \
                per-label figures before and after, cross-validated: each fold of people (the name before a file's \
                last _number) read with what was fitted on the other folds, never on its own photos. It refuses photos \
                of fewer than \(Self.minPeople) people, or a label with fewer than \(Self.minFacesPerLabel) faces \
                (leave such a label out); a label of fewer than \(Self.minPeoplePerLabel) people is left out. It \
                prints what the pipeline reads now on the same faces beside it. --apply writes what was fitted on all the photos into the pipeline file: \
                emotion.head (its file and sha256), or emotion.calibration; it refuses a fit whose valence \
                correlation is lower or calibration error higher than now, or that leaves more than half of the faces \
                below emotion.minConfidence, unless --force.
                """)

        @Argument(help: "Folder of photos.")
        var images: String

        @Option(
            help:
                "CSV of image,emotion rows, or a Label Studio image-classification export (JSON; default: one folder per label in IMAGES)."
        )
        var labels: String?

        @Option(help: "Pipeline file.")
        var pipeline = "Pipelines/showroom.yml"

        @Option(help: "Also write every reading and the figures as JSON to this file.")
        var json: String?

        @Flag(help: "Fit a calibration and print its cross-validated figures.")
        var fit = false

        @Flag(help: "With --fit: write the fitted calibration into the pipeline file.")
        var apply = false

        @Flag(help: "With --apply: apply a fit that reads the faces worse than the pipeline does now.")
        var force = false

        @Option(help: "With --fit: folds of the cross-validation.")
        var folds = 5

        @Option(help: "With --fit, for a model with a feature layer: the head's file (default: beside the model).")
        var head: String?

        /// The least a fit rests on: people, and the faces and people of each label it reads.
        static let minPeople = 10
        static let minFacesPerLabel = 10
        static let minPeoplePerLabel = 5

        @OptionGroup var settings: SettingOverrides
        @OptionGroup var models: ModelOptions

        func validate() throws {
            if apply && !fit { throw ValidationError("--apply writes what --fit fits: give --fit too") }
            if force && !apply { throw ValidationError("--force applies a fit --apply would refuse: give --apply too") }
            try checkRange(folds, "folds", 2...100)
        }

        func run() throws {
            let definition = try loadPipeline(pipeline, models: models, overrides: try settings.overrides)
            let store = try models.store()
            let description = try store.classifier(named: definition.emotionModel)
            let map = description.map ?? [:]
            let photos: EmotionLabels
            do {
                photos = try EmotionLabels.read(images: images, labels: labels) { label in
                    map.first { $0.key.lowercased() == label }.flatMap { Emotion(label: $0.value) }
                }
            } catch { throw CommandError(error.message) }
            // Names and labels come from the operator's files: control characters are shown, never sent.
            print(
                "labels: \((labels ?? "one folder per label in \(images)").controlCharactersShown): \(photos.photos.count) photos"
            )
            for other in photos.otherLabels {
                print(
                    "  \(other.label.controlCharactersShown) (\(other.photos) photos): "
                        + (other.readAs.map { "read as \($0.rawValue), as the model's description maps it" }
                            ?? "left out: none of the seven, and the model's description maps it to none"))
            }
            let evaluation = try EmotionEvaluation(
                photos.photos.map {
                    .init(name: $0.name, path: $0.path, truth: photos.emotion(of: $0)!, group: $0.person)
                }, definition: definition, models: store)
            let readoutSource =
                if let head = definition.emotionHead {
                    "the pipeline's head \(head.file)"
                } else if definition.emotionCalibration != nil {
                    "the pipeline's calibration"
                } else if let head = description.head {
                    "the model's head \(head.file)"
                } else {
                    description.calibration != nil ? "the model's calibration" : "the model's outputs as they are"
                }
            print(
                "pipeline \(pipeline): detector \(definition.detection.kind.rawValue), emotion model \(definition.emotionModel) (\(description.input.width)x\(description.input.height) \(description.input.channels.rawValue), align \(definition.emotionAlign && description.crop.align == .eyes ? "eyes" : "none"), mirror \(definition.emotionMirror ? "on" : "off")), read with \(readoutSource)"
            )
            if let fitted = evaluation.readout.fitted {
                print("  fitted: \(fitted)")
                if fitted.contains(photos.fingerprint) {
                    print(
                        "  in-sample: it was fitted on these very photos, so the figures below flatter it; --fit prints them cross-validated"
                    )
                }
            }
            print("faces read \(evaluation.faces.count); photos without a reading \(evaluation.missed.count)")
            for why in EmotionEvaluation.Miss.allCases {
                let names = evaluation.missed.filter { $0.why == why }.map(\.photo.name.controlCharactersShown)
                if !names.isEmpty {
                    let reasons = why == .gated ? " (\(RunSummary.unreadList(evaluation.unread)))" : ""
                    print(
                        "  \(names.count) \(why.rawValue)\(reasons): \(names.prefix(5).joined(separator: ", "))\(names.count > 5 ? ", ..." : "")"
                    )
                }
            }
            let minConfidence = definition.visitors.emotion.minConfidence
            let score = EmotionScore(
                evaluation.faces.map { ($0.photo.truth, $0.reading) }, minConfidence: minConfidence)
            Self.report(score, minConfidence: minConfidence)
            var output = Report(
                summary: score, faces: evaluation.faces.map(Report.Face.init),
                noFace: evaluation.missed.map(\.photo.name))
            if fit {
                output.fit = try fitAndReport(
                    evaluation, photos: photos, definition: definition, description: description, store: store,
                    minConfidence: minConfidence)
            }
            if let json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try OutputFile.write(encoder.encode(output), to: json)
            }
        }

        /// Fits a head (a model with a feature layer) or a calibration, prints the per-label figures before and after
        /// cross-validated, writes the head's file, and with --apply puts what was fitted in the pipeline.
        func fitAndReport(
            _ evaluation: EmotionEvaluation, photos: EmotionLabels, definition: PipelineDefinition,
            description: ClassifierDescription, store: ModelStore, minConfidence: Double
        ) throws -> Report.Fit {
            // A photo given twice (under two names, as two people) is one face: copies cannot make up the people or the
            // faces a fit needs.
            var contents = Set<Data>()
            var faces = evaluation.faces.filter { face in
                guard let bytes = try? Data(contentsOf: URL(fileURLWithPath: face.photo.path)) else { return true }
                return contents.insert(Data(SHA256.hash(data: bytes))).inserted
            }
            if faces.count < evaluation.faces.count {
                print("--fit: \(evaluation.faces.count - faces.count) photos are copies of another, each counted once")
            }
            func enoughPeople(_ what: String) throws {
                let people = Set(faces.map(\.photo.group)).count
                guard people < Self.minPeople else { return }
                throw CommandError(
                    "--fit: the faces \(what) are of \(people) people; a fit needs at least \(Self.minPeople), or its figures describe those people, not a camera's"
                )
            }
            try enoughPeople("read")
            // A label of a few people cannot be cross-validated by person: its figures would be those people's.
            var peopleByLabel: [Emotion: Set<String>] = [:]
            for face in faces { peopleByLabel[face.photo.truth, default: []].insert(face.photo.group) }
            let few = Set(peopleByLabel.filter { $0.value.count < Self.minPeoplePerLabel }.keys)
            for emotion in Emotion.allCases where few.contains(emotion) {
                print(
                    "--fit: \(emotion.rawValue) is \(faces.filter { $0.photo.truth == emotion }.count) faces of \(peopleByLabel[emotion]!.count) people; a label needs at least \(Self.minPeoplePerLabel) people to be fitted: left out (label more people to fit it)"
                )
            }
            faces.removeAll { few.contains($0.photo.truth) }
            peopleByLabel = peopleByLabel.filter { !few.contains($0.key) }
            try enoughPeople("of the labels fitted")
            let people = Set(faces.map(\.photo.group)).count
            var perLabel: [Emotion: Int] = [:]
            for face in faces { perLabel[face.photo.truth, default: 0] += 1 }
            if perLabel.count < 2, let only = perLabel.keys.first {
                throw CommandError(
                    "--fit: every face fitted is labelled \(only.rawValue); a fit needs at least two expressions, or it learns to read every face as that one"
                )
            }
            if let thin = Emotion.allCases.first(where: { (1..<Self.minFacesPerLabel).contains(perLabel[$0] ?? 0) }) {
                throw CommandError(
                    "--fit: \(thin.rawValue) has \(perLabel[thin]!) faces read; a label needs at least \(Self.minFacesPerLabel) to be fitted (label more, or leave it out)"
                )
            }
            let source = ((labels ?? images) as NSString).lastPathComponent
            let crop = definition.emotionCrop(description)
            // What the pipeline reads now, on the same faces: what a fit must not make worse. Read with what was fitted on
            // these very faces, it is in-sample: then the figures its fit recorded, cross-validated, are the ones to beat.
            let now = EmotionScore(faces.map { ($0.photo.truth, $0.reading) }, minConfidence: minConfidence)
            let inSample = evaluation.readout.fitted?.contains(photos.fingerprint) ?? false
            let bar: EmotionFigures? = inSample ? evaluation.readout.figures : now.figures
            if inSample {
                print(
                    "--fit: what the pipeline reads now was fitted on these faces, so \"now\" below flatters it; "
                        + (bar == nil
                            ? "it recorded no cross-validated figures to compare a fit with"
                            : "a fit is compared with the figures it recorded, cross-validated"))
            }
            let model = EmotionScore(
                faces.map { ($0.photo.truth, EmotionCalibration.identity.reading($0.output.probabilities)) },
                minConfidence: minConfidence)
            let calibrationSamples = faces.map {
                CalibrationFit.Sample(
                    probabilities: $0.output.probabilities, truth: $0.photo.truth, group: $0.photo.group)
            }
            let calibrated = EmotionScore(
                CalibrationFit.crossValidated(calibrationSamples, folds: folds), minConfidence: minConfidence)
            print(
                "\nfit on \(faces.count) faces of \(people) people; figures cross-validated by person, \(folds) folds: each fold read with what was fitted on the others"
            )
            guard let layer = description.features else {
                Self.compare(
                    [("now", now), ("model alone", model), ("calibration", calibrated)], people: peopleByLabel)
                try refuseWorse(calibrated, than: bar)
                var calibration = CalibrationFit.fit(calibrationSamples)
                calibration.fitted =
                    "sentinel eval emotion --fit on \(faces.count) faces of \(people) people (\(source)), labels \(photos.fingerprint)"
                calibration.fittedWith = crop
                print(
                    "\nthe calibration fitted on all \(faces.count) faces (Models/models.yml's block, or a pipeline's emotion: section):"
                )
                for line in calibration.block { print("  " + line) }
                if apply {
                    let settings = calibration.entries.map { ("emotion.calibration.\($0.key)", $0.value) }
                    try Self.write(settings, into: pipeline, store: store) {
                        $0.emotionCalibration == calibration.rounded
                    }
                    print("applied to \(pipeline) (emotion.calibration)")
                } else {
                    print("--apply writes it into \(pipeline)")
                }
                return Report.Fit(crossValidated: calibrated, folds: folds, calibration: calibration, head: nil)
            }
            let headSamples = faces.map {
                HeadFit.Sample(features: $0.output.features ?? [], truth: $0.photo.truth, group: $0.photo.group)
            }
            let fitted = HeadFit.fit(headSamples, folds: folds)
            let adapted = EmotionScore(fitted.crossValidated, minConfidence: minConfidence)
            Self.compare(
                [("now", now), ("model alone", model), ("calibration", calibrated), ("head", adapted)],
                people: peopleByLabel)
            try refuseWorse(adapted, than: bar)
            print(
                "\nhead over layer \(layer.layer) (\(layer.size) values): chosen by cross-validation, "
                    + String(
                        format: "C %g, class weight %@, temperature %.3f", fitted.candidate.c,
                        fitted.candidate.classWeight, fitted.temperature)
            )
            let modelEntry = store.manifest.entry(named: definition.emotionModel)!
            let head = EmotionHead(
                features: layer, modelSHA256: modelEntry.sha256, crop: crop, weights: fitted.weights, bias: fitted.bias,
                temperature: fitted.temperature,
                fitted: .init(
                    command: "sentinel eval emotion --fit on \(faces.count) faces of \(people) people (\(source))",
                    labels: photos.fingerprint, faces: faces.count, people: people, c: fitted.candidate.c,
                    classWeight: fitted.candidate.classWeight, figures: adapted.figures))
            let file =
                self.head
                ?? store.cache.appendingPathComponent(
                    "\(definition.emotionModel)-head-\(photos.fingerprint).json"
                ).path
            let data = head.json()
            do {
                try FileManager.default.createDirectory(
                    atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
                try OutputFile.write(data, to: file)
            } catch { throw CommandError("cannot write the head to \(file): \(error.localizedDescription)") }
            let sha256 = try ModelStore.sha256(of: URL(fileURLWithPath: file))
            let name = self.head == nil ? (file as NSString).lastPathComponent : file
            print("written to \(file), sha256 \(sha256)")
            print("  a pipeline's emotion: section names it as head: { file: \(name), sha256: \(sha256) }")
            if apply {
                guard definition.emotionCalibration == nil else {
                    throw CommandError(
                        "--apply: \(pipeline) gives emotion.calibration, which a head replaces: remove it, then apply again"
                    )
                }
                try Self.write(
                    [("emotion.head.file", name), ("emotion.head.sha256", sha256)], into: pipeline, store: store
                ) { $0.emotionHead == FileReference(file: name, sha256: sha256) }
                print("applied to \(pipeline) (emotion.head)")
            } else {
                print("--apply writes it into \(pipeline)")
            }
            return Report.Fit(crossValidated: adapted, folds: folds, calibration: nil, head: name)
        }

        /// Says what makes the fit read worse than the pipeline does now; with --apply and without --force, refuses it.
        func refuseWorse(_ fitted: EmotionScore, than now: EmotionFigures?) throws {
            let worse = fitted.figures.worse(than: now)
            guard !worse.isEmpty else { return }
            let what = "the fit reads these faces worse than the pipeline does now: \(worse.joined(separator: "; "))"
            print("\n" + what)
            if apply && !force {
                throw CommandError(
                    "--apply refused: \(what). Label more faces of more people and fit again, or give --force to apply it anyway"
                )
            }
        }

        /// Settings written into the pipeline's text (every other byte kept) and checked as the file will be read:
        /// `check` says whether it reads back as meant.
        static func write(
            _ settings: [(key: String, value: String)], into pipeline: String, store: ModelStore,
            check: (PipelineDefinition) -> Bool
        ) throws {
            let original = try String(contentsOfFile: pipeline, encoding: .utf8)
            do {
                // Each key the file lacks goes in first in its mapping: written last to first, they read in order.
                let written = try SettingsEditor.apply(settings.reversed(), to: original, file: pipeline)
                let checked = try ServiceDefinition.parse(written, file: pipeline)
                let problems = checked.pipeline.environmentProblems(
                    models: store, frameSize: VideoFileSource.frameSize(of:),
                    openClassifier: FaceClassifier.open)
                guard problems.isEmpty else { throw ConfigError(problems: problems) }
                guard check(checked.pipeline) else {
                    throw CommandError("what was fitted did not read back as written into \(pipeline)")
                }
                do { try PipelineFile.replace(pipeline, with: written) } catch { throw CommandError(error.message) }
            } catch let error as ConfigError {
                throw CommandError("what was fitted cannot be written into \(pipeline): \(error.description)")
            }
        }

        /// Per label, side by side: faces and people, then each reading's recall and mean valence; then the summary.
        static func compare(_ columns: [(name: String, score: EmotionScore)], people: [Emotion: Set<String>]) {
            Swift.print(
                "  label      faces people  "
                    + columns.map { "\($0.name) (recall, valence)".padding(toLength: 30, withPad: " ", startingAt: 0) }
                    .joined())
            let first = columns[0].score
            for emotion in Emotion.allCases {
                guard let count = first.counts[emotion.rawValue] else { continue }
                var line =
                    "  " + emotion.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
                    + String(format: " %5d %6d  ", count, people[emotion]?.count ?? 0)
                for column in columns {
                    line += String(
                        format: "%6.3f  %+6.3f                ", column.score.recall[emotion.rawValue] ?? 0,
                        column.score.meanValence[emotion.rawValue] ?? 0)
                }
                Swift.print(line)
            }
            for (name, score) in columns {
                Swift.print(
                    "  " + name.padding(toLength: 12, withPad: " ", startingAt: 0)
                        + String(
                            format:
                                "accuracy %.3f, mean recall %.3f, calibration error %.3f, valence correlation %.3f, below minConfidence %.1f %%",
                            score.accuracy, score.meanRecall, score.calibrationError, score.valenceCorrelation,
                            score.unknownShare * 100))
            }
        }

        static func report(_ s: EmotionScore, minConfidence: Double) {
            Swift.print(
                String(
                    format: "accuracy %.3f, mean recall over labels %.3f (%d faces)", s.accuracy, s.meanRecall, s.faces)
            )
            Swift.print("  label      faces  recall  mean valence (label's)")
            for emotion in Emotion.allCases {
                guard let count = s.counts[emotion.rawValue] else { continue }
                Swift.print(
                    "  " + emotion.rawValue.padding(toLength: 9, withPad: " ", startingAt: 0)
                        + String(
                            format: " %6d  %6.3f  %+6.3f (%+.2f)", count, s.recall[emotion.rawValue] ?? 0,
                            s.meanValence[emotion.rawValue] ?? 0, emotion.valence))
            }
            Swift.print("  confusion (rows: label, columns: read as)")
            let names = Emotion.allCases.map(\.rawValue)
            Swift.print(
                "  " + "".padding(toLength: 10, withPad: " ", startingAt: 0)
                    + names.map { String($0.prefix(7)).leftPadded(8) }.joined())
            for truth in names where s.counts[truth] != nil {
                Swift.print(
                    "  " + truth.padding(toLength: 10, withPad: " ", startingAt: 0)
                        + names.map { String(s.confusion[truth]?[$0] ?? 0).leftPadded(8) }.joined())
            }
            Swift.print(
                String(
                    format:
                        "  calibration error %.3f (15 bins); mean confidence %.3f; below emotion.minConfidence %.2f: %.1f %% (published as unknown)",
                    s.calibrationError, s.meanConfidence, minConfidence, s.unknownShare * 100))
            Swift.print(String(format: "  valence correlation with the labels' %.3f", s.valenceCorrelation))
        }

        struct Report: Encodable {
            var summary: EmotionScore
            var faces: [Face]
            var noFace: [String]
            var fit: Fit?

            struct Face: Encodable {
                var image: String
                var label: String
                var probabilities: [String: Double]
                var emotion: String
                var confidence: Double
                var valence: Double

                init(_ face: EmotionEvaluation.Face) {
                    image = face.photo.name
                    label = face.photo.truth.rawValue
                    probabilities = Dictionary(
                        uniqueKeysWithValues: zip(Emotion.allCases.map(\.rawValue), face.reading.probabilities))
                    emotion = face.reading.top.emotion.rawValue
                    confidence = face.reading.top.probability
                    valence = face.reading.valence
                }
            }

            struct Fit: Encodable {
                var crossValidated: EmotionScore
                var folds: Int
                var calibration: EmotionCalibration?
                /// The head's file, as a pipeline names it.
                var head: String?
            }
        }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
