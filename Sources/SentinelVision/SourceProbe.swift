import CSentinelCV
import Foundation
public import SentinelCore

/// What a source delivers in its first seconds, or exactly why it delivers nothing (`sentinel check --probe`), as
/// Frigate's camera probe does: resolution, stated and measured frame rate, codec, time to the first frame.
public struct SourceProbe: Sendable {
    public var source: String
    public var width = 0
    public var height = 0
    /// As the container or stream states it (an RTSP stream often states none).
    public var statedFPS: Double?
    /// FFmpeg's codec tag (`h264`, `mp4v`, `MJPG`), when the backend names one.
    public var codec: String?
    /// Seconds from the start until the source was open, and until its first frame.
    public var opened: Double?
    public var firstFrame: Double?
    /// The frame count a recording's container states.
    public var declaredFrames: Int?
    /// Frames read; when each arrived (seconds after the first), and the time its stream gave it (seconds).
    public var frames = 0
    var arrivals: [Double] = []
    var streamTimes: [Double] = []
    /// Why the source delivers nothing: the exact cause where one can be found (refused, 401, no such device).
    public var problem: String?

    /// The frames a stream's decoder held when it opened (an H.264 stream: what FFmpeg read while opening) and hands
    /// over faster than the camera sends, however loaded the machine: until the frame where arrival has caught up with
    /// the stream's own clock (arrival minus stream time at its least, give or take 50 ms of jitter). The rate is
    /// measured after them. A stream without timestamps: the leading frames that came within a quarter of the median
    /// interval of the one before.
    public var burst: Int {
        guard arrivals.count > 2 else { return 0 }
        if let first = streamTimes.first, let last = streamTimes.last, last > first {
            let behind = zip(arrivals, streamTimes).map { $0 - $1 }
            let least = behind.min()!
            return behind.firstIndex { $0 <= least + 0.05 }!
        }
        let gaps = zip(arrivals.dropFirst(), arrivals).map { $0 - $1 }
        let median = gaps.sorted()[gaps.count / 2]
        return gaps.prefix { $0 < median / 4 }.count
    }

    /// Seconds over which the rate is measured: from the last frame the decoder held to the last frame.
    public var span: Double { arrivals.count > burst ? arrivals[arrivals.count - 1] - arrivals[burst] : 0 }

    /// Frames per second as they arrived, after the frames the decoder held.
    public var measuredFPS: Double? {
        let intervals = arrivals.count - 1 - burst
        return intervals > 0 && span > 0 ? Double(intervals) / span : nil
    }

    /// Opens `spec`, reads it for `seconds` (a recording or a folder: its first frame), and says what came.
    public static func run(_ spec: SourceSpec, seconds: Double) -> SourceProbe {
        var probe = SourceProbe(source: spec.description)
        let start = ContinuousClock.now
        do throws(VisionError) {
            switch spec {
            case .file(let path):
                let video = try VideoFileSource(path: path)
                probe.statedFPS = video.nominalFPS > 0 ? video.nominalFPS : nil
                probe.declaredFrames = video.declaredFrameCount
                probe.codec = video.codec
                try probe.first(of: video, since: start)
            case .folder(let path):
                // A folder of images has no stream: its first image.
                try probe.first(of: ImageFolderSource(path: path, fps: 1), since: start)
            case .live(let endpoint):
                probe.read(try endpoint.open(), for: seconds, since: start)
            }
        } catch {
            probe.problem = spec.diagnosis(of: error.message)
        }
        return probe
    }

    /// A recording's or folder's first frame (its rate is the container's).
    private mutating func first(of source: some FrameSource, since start: ContinuousClock.Instant) throws(VisionError) {
        opened = (ContinuousClock.now - start).seconds
        guard let frame = try source.next() else { return }
        firstFrame = (ContinuousClock.now - start).seconds
        frames = 1
        (width, height) = (frame.image.width, frame.image.height)
    }

    /// A stream, read for `seconds` once open (FFmpeg may take seconds to open one).
    private mutating func read(_ stream: LiveCapture, for seconds: Double, since start: ContinuousClock.Instant) {
        let capture = stream.handle
        func since() -> Double { (ContinuousClock.now - start).seconds }
        opened = since()
        var info = snl_capture_info()
        if (try? bridge({ snl_capture_info_get(capture, &info, $0) })) != nil {
            // An RTP stream states its clock (90 kHz) where a rate belongs: no rate.
            statedFPS = info.fps.isFinite && info.fps > 0 && info.fps <= 1000 ? info.fps : nil
            codec = Self.fourcc(info.fourcc)
        }
        let limit = since() + seconds
        while frames == 0 || since() < limit {
            var image: OpaquePointer?
            var position = 0.0
            guard (try? bridge({ snl_capture_read(capture, &image, &position, $0) })) != nil, let image else { break }
            let frame = Image(handle: image)
            let now = since()
            if firstFrame == nil {
                firstFrame = now
                (width, height) = (frame.width, frame.height)
            }
            frames += 1
            arrivals.append(now - (firstFrame ?? now))
            streamTimes.append(position.isFinite ? position / 1000 : 0)
        }
        if frames == 0 { problem = "opened, but no frame came within \(String(format: "%.1f", since())) s" }
    }

    static func fourcc(_ value: UInt32) -> String? {
        let bytes = (0..<4).map { UInt8((value >> ($0 * 8)) & 0xff) }
        guard value != 0, bytes.allSatisfy({ (0x20...0x7e).contains($0) }) else { return nil }
        return String(decoding: bytes, as: UTF8.self).trimmingCharacters(in: .whitespaces)
    }
}

extension SourceProbe: CustomStringConvertible {
    /// One line: `source: 640x480, 25 fps stated, 24.9 fps measured over 2.9 s (73 frames), codec mp4v, first frame after
    /// 0.42 s`; a stream that opened with a burst: `15.1 fps measured over 1.4 s (22 frames), after 31 frames the
    /// decoder held on opening`.
    public var description: String {
        if let problem { return "\(source): \(problem)" }
        var parts = ["\(width)x\(height)"]
        if let statedFPS { parts.append(String(format: "%g fps stated", (statedFPS * 100).rounded() / 100)) }
        if let measuredFPS {
            parts.append(
                String(format: "%.1f fps measured over %.1f s (%d frames)", measuredFPS, span, arrivals.count - burst)
                    + (burst > 0 ? ", after \(burst + 1) frames the decoder held on opening" : ""))
        } else if burst > 0 {
            parts.append("\(frames) frames, all held by the decoder on opening: read longer to measure the rate")
        }
        if let declaredFrames {
            parts.append(
                "\(declaredFrames) frames"
                    + (statedFPS.map { String(format: " (%.1f s)", Double(declaredFrames) / $0) } ?? ""))
        }
        if let codec { parts.append("codec \(codec)") }
        if let opened { parts.append(String(format: "opened in %.2f s", opened)) }
        if let firstFrame { parts.append(String(format: "first frame after %.2f s", firstFrame)) }
        return "\(source): " + parts.joined(separator: ", ")
    }
}
