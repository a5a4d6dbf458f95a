import ArgumentParser
import Foundation
import SentinelCommandLine
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

                --fit fits a calibration (temperature and offsets by log-loss, valence by least squares) and prints \
                its figures cross-validated: each fold of people (the name before a file's last _number) read with a \
                calibration fitted on the other folds, never on its own photos. --apply writes the calibration fitted \
                on all the photos into the pipeline file's emotion.calibration.
                """)

        @Argument(help: "Folder of photos.")
        var images: String

        @Option(help: "CSV of image,emotion rows (default: one folder per label in IMAGES).")
        var labels: String?

        @Option(help: "Pipeline file.")
        var pipeline = "Pipelines/showroom.yml"

        @Option(help: "Also write every reading and the figures as JSON to this file.")
        var json: String?

        @Flag(help: "Fit a calibration and print its cross-validated figures.")
        var fit = false

        @Flag(help: "With --fit: write the fitted calibration into the pipeline file.")
        var apply = false

        @Option(help: "With --fit: folds of the cross-validation.")
        var folds = 5

        @OptionGroup var settings: SettingOverrides
        @OptionGroup var models: ModelOptions

        func validate() throws {
            if apply && !fit { throw ValidationError("--apply writes what --fit fits: give --fit too") }
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
            let calibrationSource =
                definition.emotionCalibration != nil
                ? "the pipeline's" : description.calibration != nil ? "the model's" : "none"
            print(
                "pipeline \(pipeline): detector \(definition.detection.kind.rawValue), emotion model \(definition.emotionModel) (\(description.input.width)x\(description.input.height) \(description.input.channels.rawValue), align \(definition.emotionAlign && description.crop.align == .eyes ? "eyes" : "none"), mirror \(definition.emotionMirror ? "on" : "off")), calibration: \(calibrationSource)"
            )
            if let fitted = evaluation.calibration.fitted {
                print("  calibration fitted: \(fitted)")
                if fitted.contains(photos.fingerprint) {
                    print(
                        "  in-sample: the calibration was fitted on these very photos, so the figures below flatter it; --fit prints them cross-validated"
                    )
                }
            }
            print("faces read \(evaluation.faces.count); photos without a reading \(evaluation.missed.count)")
            for why in EmotionEvaluation.Miss.allCases {
                let names = evaluation.missed.filter { $0.why == why }.map(\.photo.name.controlCharactersShown)
                if !names.isEmpty {
                    print(
                        "  \(names.count) \(why.rawValue): \(names.prefix(5).joined(separator: ", "))\(names.count > 5 ? ", ..." : "")"
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
                let samples = evaluation.faces.map {
                    CalibrationFit.Sample(probabilities: $0.probabilities, truth: $0.photo.truth, group: $0.photo.group)
                }
                let groups = Set(samples.map(\.group)).count
                print(
                    "\nfit: scales and offsets by log-loss, valence by least squares; \(folds)-fold cross-validation by person (\(groups) people): each fold read with a calibration fitted on the other folds"
                )
                let validated = EmotionScore(
                    CalibrationFit.crossValidated(samples, folds: folds), minConfidence: minConfidence)
                Self.report(validated, minConfidence: minConfidence)
                var calibration = CalibrationFit.fit(samples)
                let source = ((labels ?? images) as NSString).lastPathComponent
                calibration.fitted =
                    "sentinel eval emotion --fit on \(samples.count) faces of \(groups) people (\(source)), labels \(photos.fingerprint)"
                print(
                    "\nfitted on all \(samples.count) faces (Models/models.yml's block, or a pipeline's emotion: section):"
                )
                for line in Self.lines(calibration) { print("  " + line) }
                output.fit = .init(crossValidated: validated, folds: folds, calibration: calibration)
                if apply {
                    try Self.write(calibration, into: pipeline, store: store)
                    print("applied to \(pipeline) (emotion.calibration)")
                } else {
                    print("--apply writes it into \(pipeline)")
                }
            }
            if let json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
                try OutputFile.write(encoder.encode(output), to: json)
            }
        }

        /// The calibration as `emotion.calibration` settings, written into the pipeline's text (every other byte kept)
        /// and checked as the file will be read.
        static func write(_ calibration: EmotionCalibration, into pipeline: String, store: ModelStore) throws {
            let original = try String(contentsOfFile: pipeline, encoding: .utf8)
            do {
                // Each key the file lacks goes in first in its mapping: written last to first, they read in order.
                let written = try SettingsEditor.apply(
                    Self.settings(calibration).reversed(), to: original, file: pipeline)
                let checked = try ServiceDefinition.parse(written, file: pipeline)
                let problems = checked.pipeline.environmentProblems(
                    models: store, frameSize: VideoFileSource.frameSize(of:))
                guard problems.isEmpty else { throw ConfigError(problems: problems) }
                guard checked.pipeline.emotionCalibration == Self.rounded(calibration) else {
                    throw CommandError("the calibration did not read back as written into \(pipeline)")
                }
                do { try PipelineFile.replace(pipeline, with: written) } catch { throw CommandError(error.message) }
            } catch let error as ConfigError {
                throw CommandError("the calibration cannot be written into \(pipeline): \(error.description)")
            }
        }

        /// Figures as written: four decimals.
        static func rounded(_ calibration: EmotionCalibration) -> EmotionCalibration {
            func r(_ x: Double) -> Double { (x * 10_000).rounded() / 10_000 }
            return EmotionCalibration(
                temperature: r(calibration.temperature), scales: calibration.scales.map(r),
                offsets: calibration.offsets.map(r),
                valence: calibration.valence.map(r), fitted: calibration.fitted)
        }

        static func settings(_ calibration: EmotionCalibration) -> [(key: String, value: String)] {
            let c = rounded(calibration)
            func text(_ x: Double) -> String { String(format: "%.4f", x) }
            var settings = [("emotion.calibration.temperature", text(c.temperature))]
            for (emotion, scale) in zip(Emotion.allCases, c.scales) {
                settings.append(("emotion.calibration.scales.\(emotion.rawValue)", text(scale)))
            }
            for (emotion, offset) in zip(Emotion.allCases, c.offsets) {
                settings.append(("emotion.calibration.offsets.\(emotion.rawValue)", text(offset)))
            }
            for (emotion, valence) in zip(Emotion.allCases, c.valence) {
                settings.append(("emotion.calibration.valence.\(emotion.rawValue)", text(valence)))
            }
            if let fitted = c.fitted, let data = try? JSONEncoder().encode(fitted) {
                settings.append(("emotion.calibration.fitted", String(decoding: data, as: UTF8.self)))
            }
            return settings
        }

        /// The calibration as a `calibration:` block of Models/models.yml or of a pipeline's `emotion:` section.
        static func lines(_ calibration: EmotionCalibration) -> [String] {
            let c = rounded(calibration)
            func block(_ name: String, _ values: [Double]) -> String {
                "  \(name): { "
                    + zip(Emotion.allCases, values).map { "\($0.rawValue): \(String(format: "%.4f", $1))" }
                    .joined(separator: ", ") + " }"
            }
            return ["calibration:", String(format: "  temperature: %.4f", c.temperature)]
                + [block("scales", c.scales), block("offsets", c.offsets), block("valence", c.valence)]
                + (c.fitted.map { ["  fitted: \($0)"] } ?? [])
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
                var calibration: EmotionCalibration
            }
        }
    }
}

extension String {
    fileprivate func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
