import ArgumentParser
import Foundation
import SentinelCore

/// A file a command writes its output to, given by the user: `-` is standard output; a device, FIFO or socket is
/// written in place (never replaced: `-o /dev/null` must not turn /dev/null into a regular file); a symlink is
/// followed to its target; a regular file, or a path that does not exist yet, is written to a temporary file beside
/// it and renamed over it by `commit()`, so a run that fails half-way leaves what was there before.
final class OutputFile {
    let handle: FileHandle
    /// The file `commit()` renames over `target`; nil when writing in place, or once committed.
    private var temporary: String?
    private let target: String

    init(path: String) throws {
        if path == "-" {
            (handle, temporary, target) = (.standardOutput, nil, path)
            return
        }
        target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var status = stat()
        let exists = stat(target, &status) == 0
        if exists && (status.st_mode & S_IFMT) != S_IFREG {
            let fd = open(target, O_WRONLY)
            guard fd >= 0 else { throw CommandError("cannot write \(path): \(String(cString: strerror(errno)))") }
            (handle, temporary) = (FileHandle(fileDescriptor: fd, closeOnDealloc: true), nil)
            return
        }
        let folder = URL(fileURLWithPath: target).deletingLastPathComponent().path
        var template = Array("\(folder)/.\(URL(fileURLWithPath: target).lastPathComponent).XXXXXX".utf8CString)
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw CommandError("cannot write \(path): \(String(cString: strerror(errno)))") }
        // mkstemp makes 0600; give the output the mode a new file would have (or the one it had).
        fchmod(fd, exists ? status.st_mode & 0o7777 : 0o644 & ~currentUmask())
        temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        TemporaryFiles.add(temporary!)
        handle = FileHandle(fileDescriptor: fd, closeOnDealloc: true)
    }

    deinit {
        if let temporary {
            unlink(temporary)
            TemporaryFiles.remove(temporary)
        }
    }

    /// Makes the output visible at its path: flushes it (a pipe or a terminal cannot be, and need not be), and
    /// renames a temporary file over the target.
    func commit() throws {
        try? handle.synchronize()
        guard let temporary else { return }
        guard rename(temporary, target) == 0 else {
            throw CommandError("cannot write \(target): \(String(cString: strerror(errno)))")
        }
        TemporaryFiles.remove(temporary)
        self.temporary = nil
    }
}

extension OutputFile {
    /// Writes `data` as a whole output at `path`, by the rules above.
    static func write(_ data: Data, to path: String) throws {
        let sink = try OutputFile(path: path)
        sink.handle.write(data)
        try sink.commit()
    }
}

/// A review video's path. The video is written beside its target under a temporary name with the same extension
/// (the container follows the extension) and renamed over the target by `commit()`, so a failed run leaves what was
/// there; a symlink is followed. MP4 and AVI writers seek, so a device or FIFO is refused rather than written.
final class OutputVideo {
    /// Where the writer writes until `commit()`.
    let path: String
    private let target: String
    private var committed = false

    init(path: String) throws {
        target = URL(fileURLWithPath: path).resolvingSymlinksInPath().path
        var status = stat()
        if stat(target, &status) == 0, (status.st_mode & S_IFMT) != S_IFREG {
            throw CommandError("cannot write a review video to \(path): not a regular file (MP4 and AVI need to seek)")
        }
        let url = URL(fileURLWithPath: target)
        self.path =
            url.deletingLastPathComponent()
            .appendingPathComponent(
                ".\(url.deletingPathExtension().lastPathComponent).\(getpid()).\(url.pathExtension)"
            ).path
        TemporaryFiles.add(self.path)
    }

    deinit {
        if !committed { unlink(path) }
        TemporaryFiles.remove(path)
    }

    func commit() throws {
        guard rename(path, target) == 0 else {
            throw CommandError("cannot write \(target): \(String(cString: strerror(errno)))")
        }
        committed = true
    }
}

/// The temporary files a command has not renamed into place yet, removed when SIGINT, SIGTERM or SIGHUP ends it (no
/// deinit runs then): an interrupted `replay` leaves nothing behind. The paths are kept as C strings in fixed slots, so
/// the handler only reads memory and calls unlink, both safe in a signal handler.
enum TemporaryFiles {
    private static let slots = 16
    nonisolated(unsafe) private static let paths = UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>.allocate(
        capacity: slots)
    nonisolated(unsafe) private static var installed = false

    static func add(_ path: String) {
        if !installed {
            paths.initialize(repeating: nil, count: slots)
            for sig in [SIGINT, SIGTERM, SIGHUP] { signal(sig, removeAndDie) }
            installed = true
        }
        guard let free = (0..<slots).first(where: { paths[$0] == nil }) else { return }
        paths[free] = strdup(path)
    }

    static func remove(_ path: String) {
        guard installed else { return }
        for i in 0..<slots where paths[i].map({ String(cString: $0) == path }) == true {
            let old = paths[i]
            paths[i] = nil
            free(old)
        }
    }

    private static let removeAndDie: @convention(c) (Int32) -> Void = { sig in
        for i in 0..<TemporaryFiles.slots { if let path = TemporaryFiles.paths[i] { unlink(path) } }
        // Die of the signal as before, so that the shell sees the same status.
        signal(sig, SIG_DFL)
        raise(sig)
    }
}

private func currentUmask() -> mode_t {
    let mask = umask(0o022)
    umask(mask)
    return mask
}
