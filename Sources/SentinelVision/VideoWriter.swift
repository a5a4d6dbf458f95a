import CSentinelCV

/// Writes frames to a video file: MPEG-4 part 2 for `.mp4`, Motion JPEG for `.avi`.
public final class VideoWriter {
    public let path: String
    private var handle: OpaquePointer?

    /// The containers it writes, by file extension, with the codec each gets.
    public static let codecs = ["mp4": "mp4v", "avi": "MJPG"]

    /// Whether `path` names a container this writer can make (by its extension).
    public static func canWrite(_ path: String) -> Bool { codec(for: path) != nil }

    static func codec(for path: String) -> String? {
        guard let dot = path.lastIndex(of: ".") else { return nil }
        return codecs[path[path.index(after: dot)...].lowercased()]
    }

    public init(path: String, fps: Double, width: Int, height: Int) throws(VisionError) {
        guard let fourcc = Self.codec(for: path) else {
            throw VisionError(.write, "\(path): a video must end in .mp4 or .avi")
        }
        var out: OpaquePointer?
        try bridge { snl_writer_open(path, fourcc, fps, Int32(width), Int32(height), &out, $0) }
        self.path = path
        self.handle = out
    }

    deinit { finish() }

    public func write(_ image: Image) throws(VisionError) {
        guard let handle else { throw VisionError(.write, "\(path): video already finished") }
        try bridge { snl_writer_write(handle, image.handle, $0) }
    }

    /// Completes the file; further writes fail.
    public func finish() {
        if let handle { snl_writer_destroy(handle) }
        handle = nil
    }
}
