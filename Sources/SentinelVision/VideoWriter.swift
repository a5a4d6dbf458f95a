import CSentinelCV

/// Writes frames to a video file: MPEG-4 part 2 for `.mp4`, Motion JPEG for `.avi`.
public final class VideoWriter {
    public let path: String
    private var handle: OpaquePointer?

    public init(path: String, fps: Double, width: Int, height: Int) throws(VisionError) {
        let fourcc = path.lowercased().hasSuffix(".avi") ? "MJPG" : "mp4v"
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
