import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelPipeline
import SentinelPrivacy
import SentinelStore
import SentinelVision
import SentinelVisitors
import SentinelWire

struct Replay: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run a pipeline on a recording and write what it publishes as JSON lines.",
        discussion: """
            One line per visitor event and per sentiment gauge reading (type sentiment.gauge), as `sentinel run` \
            publishes them on its SSE stream. Events pass the pipeline's privacy mask. They are identical at any pace: every time comes from the \
            recording's timestamps, placed on the wall clock at the file's modification time. faceIds are \
            pseudonyms under a key held in memory, so they differ from run to run unless the pipeline sets \
            privacy.pseudonyms.keyFile. A progress bar goes to standard error when it is a terminal.
            """)

    @Argument(help: "Recording to replay (default: the pipeline's first source input).")
    var recording: String?

    @Option(help: "Pipeline file.")
    var pipeline = defaultPipeline

    @Option(help: "Source id in the pipeline whose zones apply (default: the first).")
    var source: String?

    @Option(help: "Pace: fastest, realtime, or a factor such as 4x (default: the pipeline's).")
    var pace: Pacing?

    @Option(
        name: .shortAndLong,
        help:
            "Write events to this file instead of standard output (- is standard output; a device or FIFO is written in place)."
    )
    var output: String?

    @Option(
        help:
            "Also write a review video here (.mp4 or .avi): zones and pseudonymous labels drawn, every face masked as the pipeline's privacy.review says."
    )
    var annotate: String?

    @Option(
        help:
            "Also write the tracked faces here, to correct in a labelling tool and score against: .txt (MOT Challenge), .xml (CVAT for video 1.1) or .json (Label Studio). Boxes with pseudonymous ids: keep the file on this box."
    )
    var tracks: String?

    @Option(
        help:
            "With --tracks as .json: import the boxes into Label Studio as a person's annotations or as a model's predictions."
    )
    var tracksAs: TrackFile.LabelStudioRole = .annotations

    @Option(
        help: ArgumentHelp(
            "Also write the faces the pipeline reads for emotion here, to label and fit a head on (eval emotion --fit): PSEUDONYM_N.jpg, every other face in a still blurred. Footage of people: keep the folder on this box.",
            valueName: "folder"))
    var faces: String?

    @Option(help: "With --faces: seconds of the recording between two stills of one visitor.")
    var facesEvery = 2.0

    @Flag(help: "Log each event (pseudonymous id, type and zone only) at debug level.")
    var verbose = false

    @OptionGroup var settings: SettingOverrides
    @OptionGroup var models: ModelOptions

    func validate() throws {
        if let tracks, (try? TrackFile.format(of: tracks)).map({ $0 == .sentinel }) != false {
            throw ValidationError(
                "--tracks \(tracks): tracks are written as .txt (MOT), .xml (CVAT) or .json (Label Studio)")
        }
        if !(facesEvery >= 0 && facesEvery.isFinite) {
            throw ValidationError("--faces-every \(facesEvery): seconds, 0 or more")
        }
        if let annotate, !VideoWriter.canWrite(annotate) {
            throw ValidationError("--annotate \(annotate): a review video must end in .mp4 or .avi")
        }
    }

    func run() throws {
        let definition = try loadPipeline(pipeline, models: models, overrides: try settings.overrides)
        if faces != nil, !definition.emotionEnabled {
            throw ValidationError("--faces: \(pipeline) reads no emotion (emotion.enabled: false), so no face is read")
        }
        let rate = definition.visitors.emotion.maxPerSecond
        if faces != nil, rate > 0, facesEvery < 1 / rate - 1e-9 {
            // A still is written with an emotion reading, and readings come at most `maxPerSecond` a visitor.
            FileHandle.standardError.write(
                Data(
                    String(
                        format:
                            "--faces-every %g: a still comes with an emotion reading, at most emotion.maxPerSecond (%g) a second per visitor: one every %.2f s at most (raise emotion.maxPerSecond, --set emotion.maxPerSecond=N, for more)\n",
                        facesEvery, rate, 1 / rate
                    ).utf8))
        }
        let chosen = try pickSource(definition, source)
        let logger = makeLogger("sentinel.replay", verbose: verbose)
        let runner = try SourceRunner(
            definition: definition, source: chosen, models: try models.store(), input: recording, pace: pace,
            logger: logger)
        let sink = try OutputFile(path: output ?? "-")
        let video = try annotate.map(OutputVideo.init)
        var gauge = definition.aggregation.sentimentGauge()
        let encoder = JSONEncoder.sentinel()
        let review = video.map {
            ReviewVideo(
                path: $0.path, fps: runner.nominalFPS, zones: runner.source.zones, settings: definition.privacy.review)
        }
        var progress = ProgressBar(total: runner.expectedFrames)
        var recorder = RunRecorder()
        var refused: (count: Int, why: String?) = (0, nil)
        var stills = try faces.map { try FaceStills(directory: $0, interval: facesEvery) }
        try runner.run { step in
            recorder.record(step)
            for masked in step.events {
                let published = masked.published
                gauge.record(published)
                sink.handle.write(published.json + Data("\n".utf8))
            }
            if let reading = gauge.tick(now: step.date) {
                sink.handle.write(try encoder.encode(TypedReading(reading: reading)) + Data("\n".utf8))
            }
            guard let frame = step.frame else { return }
            try review?.write(frame)
            try stills?.write(frame)
            if let why = frame.timings.refused.first {
                refused = (refused.count + frame.timings.refused.count, refused.why ?? why)
            }
            progress.advance(to: frame.index + 1)
        }
        review?.finish()
        progress.finish()
        if let tracks {
            try TrackFile.write(
                recorder.tracks, to: tracks, video: recording ?? chosen.input, fps: runner.nominalFPS, as: tracksAs)
        }
        try sink.commit()
        if let why = refused.why {
            FileHandle.standardError.write(Data("\(refused.count) emotion readings refused (the first: \(why))\n".utf8))
        }
        if let stills {
            FileHandle.standardError.write(
                Data(
                    "\(stills.written) face stills of \(stills.visitors) visitors in \(stills.directory.controlCharactersShown)\n"
                        .utf8))
        }
        // A summary on standard error: standard output may be the events.
        for line in recorder.summary(origin: runner.origin).lines {
            FileHandle.standardError.write(Data((line + "\n").utf8))
        }
        try video?.commit()
    }
}

/// A gauge reading as a line of replay output: the reading's JSON with its SSE event type beside it.
struct TypedReading: Encodable {
    var reading: GaugeReading

    private enum Keys: String, CodingKey { case type }

    func encode(to encoder: any Encoder) throws {
        try reading.encode(to: encoder)
        var container = encoder.container(keyedBy: Keys.self)
        try container.encode(EventEnvelope.gaugeType, forKey: .type)
    }
}

func pickSource(_ definition: PipelineDefinition, _ id: String?) throws -> PipelineDefinition.SourceDefinition {
    guard let id else { return definition.sources[0] }
    guard let source = definition.sources.first(where: { $0.id == id }) else {
        throw ValidationError(
            "no source \(id) in \(definition.file); sources: \(definition.sources.map(\.id).joined(separator: ", "))")
    }
    return source
}

/// Frames, fps and ETA on standard error, redrawn at most ten times a second, only when it is a terminal.
struct ProgressBar {
    let total: Int?
    let enabled = isatty(STDERR_FILENO) == 1
    private let clock = ContinuousClock()
    private let start = ContinuousClock().now
    private var lastDraw = ContinuousClock().now
    private var frames = 0

    init(total: Int?) { self.total = total }

    mutating func advance(to frames: Int) {
        self.frames = frames
        guard enabled, clock.now - lastDraw > .milliseconds(100) else { return }
        lastDraw = clock.now
        draw()
    }

    mutating func finish() {
        guard enabled else { return }
        draw()
        FileHandle.standardError.write(Data("\n".utf8))
    }

    private func draw() {
        let elapsed = (clock.now - start).seconds
        let fps = elapsed > 0 ? Double(frames) / elapsed : 0
        var line = "\r\(frames)"
        if let total, total > 0 {
            let done = min(1, Double(frames) / Double(total))
            let width = 30
            let filled = Int(done * Double(width))
            let eta = fps > 0 ? Double(total - frames) / fps : 0
            line +=
                "/\(total) [" + String(repeating: "#", count: filled) + String(repeating: ".", count: width - filled)
                + "]"
                + String(format: " %3.0f%%  %.1f fps  ETA %.0fs ", done * 100, fps, max(0, eta))
        } else {
            line += String(format: " frames  %.1f fps ", fps)
        }
        FileHandle.standardError.write(Data(line.utf8))
    }
}
