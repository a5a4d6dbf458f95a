import Foundation
import SentinelCore

/// The still images of a folder, in file-name order, as frames `1 / fps` seconds apart.
///
/// An image that cannot be decoded is skipped and counted, so one bad file does not end the folder.
public final class ImageFolderSource: FrameSource {
    public static let extensions: Set<String> = ["jpg", "jpeg", "png", "bmp", "webp", "tif", "tiff"]

    public let name: String
    public let fps: Double
    public let files: [String]
    /// Files that could not be decoded, with OpenCV's message.
    public private(set) var skipped: [(file: String, reason: String)] = []

    public var notes: [SourceNote] {
        skipped.map { SourceNote(message: "image skipped", details: ["file": $0.file, "reason": $0.reason]) }
    }
    private var position = 0
    private var index = 0

    public init(path: String, fps: Double = 1) throws(VisionError) {
        guard fps > 0 else { throw VisionError(.argument, "\(path): frame rate for an image folder must be positive") }
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: path)
        } catch {
            throw VisionError(.open, "cannot list image folder \(path): \(error.localizedDescription)")
        }
        let url = URL(fileURLWithPath: path)
        files = names.filter { Self.extensions.contains(($0 as NSString).pathExtension.lowercased()) }.sorted()
            .map { url.appendingPathComponent($0).path }
        guard !files.isEmpty else {
            throw VisionError(
                .open, "image folder \(path) holds no images (\(Self.extensions.sorted().joined(separator: ", ")))")
        }
        name = path
        self.fps = fps
    }

    public func next() throws(VisionError) -> Frame? {
        while position < files.count {
            let file = files[position]
            position += 1
            do {
                let image = try Image(contentsOf: file)
                defer { index += 1 }
                return Frame(index: index, time: MediaTime(seconds: Double(index) / fps), image: image)
            } catch {
                skipped.append((file, error.message))
            }
        }
        return nil
    }
}
