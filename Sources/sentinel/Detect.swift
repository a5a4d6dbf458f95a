import ArgumentParser
import Foundation
import Logging
import SentinelAssembly
import SentinelCore
import SentinelVision
import SentinelWire

struct Detect: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Detect faces in a source and print one JSON line per frame.",
        discussion: """
            SOURCE is a video file (mp4, avi, mkv...), a folder of images, a camera (/dev/video0 or 0) or a \
            stream URL (rtsp://, http://). Each line: {"frame", "time" (media seconds), "faces": [{"box": \
            [x, y, width, height], "score", "landmarks"}]}.
            """)

    @Argument(help: "Video file, image folder, camera device or stream URL.")
    var source: String

    @OptionGroup var detectorOptions: DetectorOptions
    @OptionGroup var models: ModelOptions

    @Option(help: "Pace for files and folders: fastest, realtime, or a factor such as 4x.")
    var pace: Pacing = .fastest

    @Option(name: .customLong("folder-fps"), help: "Frame rate given to a folder of images.")
    var folderFPS: Double = 1

    @Option(name: .customLong("max-frames"), help: "Stop after this many frames.")
    var maxFrames: Int?

    func validate() throws {
        try checkRange(folderFPS, "folder-fps", 0.001...1000)
        try checkRange(maxFrames, "max-frames", 1...1_000_000_000)
    }

    func run() throws {
        let logger = makeLogger("sentinel.detect")
        let detector = try detectorOptions.make(store: try models.store())
        let frames = try SourceSpec(source).open(pacing: pace, folderFPS: folderFPS, logger: logger)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys]
        var count = 0
        while count < (maxFrames ?? .max), let frame = try frames.next() {
            let faces = try detector.detect(frame.image)
            let line = FrameDetections(
                frame: frame.index, time: frame.time, faces: faces.map(FrameDetections.Face.init))
            FileHandle.standardOutput.write(try encoder.encode(line) + Data("\n".utf8))
            count += 1
        }
        reportEnd(of: frames, logger: logger)
    }
}

/// One output line of `sentinel detect`, rounded to what is meaningful (0.1 px, 0.001 score).
struct FrameDetections: Codable {
    var frame: Int
    var time: MediaTime
    var faces: [Face]

    struct Face: Codable {
        var box: [Double]
        var score: Double
        var landmarks: [[Double]]?

        init(_ detection: Detection) {
            func round(_ value: Double, _ places: Double) -> Double { (value * places).rounded() / places }
            box = [detection.box.x, detection.box.y, detection.box.width, detection.box.height].map { round($0, 10) }
            score = round(detection.score, 1000)
            landmarks =
                detection.landmarks.isEmpty ? nil : detection.landmarks.map { [round($0.x, 10), round($0.y, 10)] }
        }
    }
}

/// Says on standard error what went wrong along the way, once the source has ended.
func reportEnd(of source: any FrameSource, logger: Logger) {
    for note in source.notes { logger.warning("\(note.message)", metadata: note.details.mapValues { .string($0) }) }
}
