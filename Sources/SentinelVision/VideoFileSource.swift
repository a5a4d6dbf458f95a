import CSentinelCV
import Foundation
import SentinelCore

/// Frames of a recorded video file (whatever Debian's OpenCV and FFmpeg decode), with container timestamps.
///
/// A file that stops decoding part-way ends the source with the frames read so far; `endReason` says why. One that
/// yields no frame at all throws.
public final class VideoFileSource: FrameSource {
    public let name: String
    /// The frame rate the container states; 0 when it states none.
    public let nominalFPS: Double
    /// The frame count the container states, when it states one.
    public let declaredFrameCount: Int?
    public let width: Int
    public let height: Int
    /// FFmpeg's codec tag (`h264`, `mp4v`, `MJPG`), when it names one.
    public let codec: String?
    /// Why the source ended early, once it has: a decode error or fewer frames than the container declared.
    public private(set) var endReason: String?
    /// Frames whose container timestamp was unusable (not a number, negative, absurdly large, behind the previous
    /// frame or far ahead of it) and that were placed one nominal frame interval after the previous frame instead.
    public private(set) var repairedTimestamps = 0
    /// The first few of them: the frame's index, what the container said (in seconds; nil: not a number), and the time
    /// it was given.
    private var repaired: [(index: Int, said: Double?, placed: MediaTime)] = []

    public var notes: [SourceNote] {
        (endReason.map { [SourceNote(message: "source ended early", details: ["reason": $0])] } ?? [])
            + (repairedTimestamps == 0
                ? []
                : [
                    SourceNote(
                        message:
                            "container timestamps that repeat, go back or leap were replaced: each such frame placed one nominal frame after the one before",
                        details: [
                            "frames": "\(repairedTimestamps)",
                            "first": repaired.map { frame in
                                "frame \(frame.index) at \(frame.said.map { String(format: "%.3f s", $0) } ?? "no number"), placed at \(String(format: "%.3f s", frame.placed.seconds))"
                            }.joined(separator: "; "),
                        ])
                ])
    }

    private var capture: OpaquePointer?
    private var index = 0
    private var lastTime: MediaTime?

    /// The frame size of the video file at `path` (what checking a pipeline's pixel zones needs to know of it).
    public static func frameSize(of path: String) throws(VisionError) -> (width: Int, height: Int) {
        let video = try VideoFileSource(path: path)
        return (video.width, video.height)
    }

    public init(path: String) throws(VisionError) {
        var out: OpaquePointer?
        do {
            try bridge { snl_capture_open_file(path, &out, $0) }
        } catch {
            var status = stat()
            let why =
                stat(path, &status) != 0
                ? String(cString: strerror(errno))
                : status.st_size == 0
                    ? "the file is empty"
                    : "FFmpeg finds no video it can read in its \(status.st_size) bytes (not a video, or a damaged one)"
            throw VisionError(error.code, "\(error.message): \(why)")
        }
        var info = snl_capture_info()
        do {
            try bridge { snl_capture_info_get(out, &info, $0) }
        } catch {
            snl_capture_destroy(out)
            throw error
        }
        capture = out
        name = path
        nominalFPS = info.fps.isFinite && info.fps > 0 ? info.fps : 0
        declaredFrameCount = info.frame_count > 0 ? Int(info.frame_count) : nil
        width = Int(info.width)
        height = Int(info.height)
        codec = SourceProbe.fourcc(info.fourcc)
    }

    deinit { close() }

    /// Moves to the frame at `seconds` of media time (exactly, decoding from the keyframe before it): the next frame
    /// is that one, numbered as in the file. Before the first read only, so that timestamps still only go forward.
    public func seek(to seconds: Double) throws(VisionError) {
        guard let capture, index == 0, lastTime == nil, seconds > 0 else { return }
        var frame: Int64 = 0
        try bridge { snl_capture_seek(capture, seconds * 1_000, &frame, $0) }
        index = Int(frame)
    }

    public func next() throws(VisionError) -> Frame? {
        guard let capture else { return nil }
        var image: OpaquePointer?
        var positionMs = 0.0
        do {
            try bridge { snl_capture_read(capture, &image, &positionMs, $0) }
        } catch {
            try endWithoutFrames(error.message)
            endReason = "\(name): decoding stopped after \(index) frames: \(error.message)"
            close()
            return nil
        }
        guard let image else {
            try endWithoutFrames("the decoder gave none (corrupt, truncated or an unsupported codec)")
            if let declared = declaredFrameCount, index < declared - 1 {
                // Containers may round their count by one; more than that is a truncated or corrupt file.
                endReason = "\(name): ended after \(index) of \(declared) declared frames (truncated or corrupt)"
            }
            close()
            return nil
        }
        let frame = Frame(index: index, time: timestamp(positionMs), image: Image(handle: image))
        index += 1
        return frame
    }

    /// A file that opens but yields no frame at all is no recording: an error that ends the source, not an empty
    /// run that looks like a quiet showroom.
    private func endWithoutFrames(_ why: String) throws(VisionError) {
        guard index == 0 else { return }
        close()
        throw VisionError(
            .open,
            "cannot decode any frame of \(name) (\(width)x\(height), \(declaredFrameCount ?? 0) frames declared): \(why)"
        )
    }

    /// Longest gap between two frames' container timestamps taken as real: a longer one is a broken timestamp.
    static let maxGapSeconds = 600.0

    /// The container's timestamp where it is sane, kept strictly increasing. FFmpeg reports nonsense for some inputs
    /// (a still image renamed .mp4 gives about -9e15 ms), which must never reach a visitor stage: such a frame, or
    /// one whose timestamp repeats, goes back or leaps more than `maxGapSeconds`, gets one nominal frame interval past
    /// the previous frame instead (the first frame: 0).
    private func timestamp(_ positionMs: Double) -> MediaTime {
        var time = MediaTime(decoderSeconds: positionMs / 1000)
        if let candidate = time, let lastTime,
            candidate <= lastTime || (candidate - lastTime).seconds > Self.maxGapSeconds
        {
            time = nil
        }
        guard let time else {
            repairedTimestamps += 1
            let step = nominalFPS > 0 ? MediaTime(seconds: 1 / nominalFPS) : MediaTime(microseconds: 1)
            let placed = lastTime.map { $0 + step } ?? .zero
            if repaired.count < 3 {
                repaired.append((index, positionMs.isFinite ? positionMs / 1000 : nil, placed))
            }
            lastTime = placed
            return placed
        }
        lastTime = time
        return time
    }

    private func close() {
        if let capture { snl_capture_destroy(capture) }
        capture = nil
    }
}
