import Foundation
public import SentinelCore

/// Writing a pipeline file the way an editor should, for everything that writes one back (the zone editor, `tune
/// --apply`): into the real file behind a symlink (the link stays a link; the file keeps its owner and mode), through
/// a new file with a random name made with O_EXCL beside it, flushed to disk and renamed over the old one (a reader
/// never sees half a file, and a crash leaves the old one); a read-only file is refused, not overwritten.
public enum PipelineFile {
    /// Why a pipeline file was not written: what and where, in words (no library's error text).
    public struct WriteError: SentinelError, Equatable {
        public enum Code: String, Sendable, CustomStringConvertible {
            case readOnly, notRegular, io
            public var description: String { rawValue }
        }
        public let code: Code
        public let message: String
    }

    /// The line ending the text uses: CRLF or LF. A file that mixes them is refused (an edit would land a line off).
    public static func lineEnding(of text: String, file: String) throws(ConfigError) -> String {
        var crlf: Int?
        var lf: Int?
        var line = 1
        var previous: UInt8 = 0
        for byte in text.utf8 {
            if byte == UInt8(ascii: "\n") {
                if previous == UInt8(ascii: "\r") { crlf = crlf ?? line } else { lf = lf ?? line }
                line += 1
            }
            previous = byte
        }
        if let crlf, let lf {
            throw ConfigError(problems: [
                ConfigProblem(
                    file: file, line: max(crlf, lf), path: "",
                    message:
                        "mixed line endings (CRLF on line \(crlf), LF on line \(lf)): save the file with one kind, then edit it again"
                )
            ])
        }
        return crlf != nil ? "\r\n" : "\n"
    }

    public static func replace(_ path: String, with text: String) throws(WriteError) {
        func failure(_ code: WriteError.Code, _ what: String) -> WriteError {
            WriteError(code: code, message: "\(path): \(what)")
        }
        guard let resolved = realpath(path, nil) else {
            throw failure(.io, "cannot resolve the path: \(String(cString: strerror(errno)))")
        }
        let target = String(cString: resolved)
        free(resolved)
        var status = stat()
        guard stat(target, &status) == 0 else { throw failure(.io, String(cString: strerror(errno))) }
        guard status.st_mode & S_IFMT == S_IFREG else { throw failure(.notRegular, "not a regular file") }
        guard status.st_mode & 0o222 != 0 else {
            throw failure(
                .readOnly,
                "is read-only (mode \(String(status.st_mode & 0o777, radix: 8))): make it writable to save into it")
        }
        let folder = (target as NSString).deletingLastPathComponent
        let name = (target as NSString).lastPathComponent
        var template = Array("\(folder)/.\(name).XXXXXX".utf8CString)
        // mkstemp: a random name, created with O_EXCL (never an existing file or a planted link), mode 0600.
        let fd = mkstemp(&template)
        guard fd >= 0 else { throw failure(.io, "cannot create a file beside it: \(String(cString: strerror(errno)))") }
        let temporary = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        var done = false
        defer {
            close(fd)
            if !done { unlink(temporary) }
        }
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let n = bytes[written...].withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
            guard n > 0 else { throw failure(.io, "cannot write: \(String(cString: strerror(errno)))") }
            written += n
        }
        // The old file's mode and owner (the owner needs root; as anyone else the file was theirs already).
        guard fchmod(fd, status.st_mode & 0o7777) == 0 else {
            throw failure(.io, "cannot set the mode: \(String(cString: strerror(errno)))")
        }
        if fchown(fd, status.st_uid, status.st_gid) != 0, errno != EPERM {
            throw failure(.io, "cannot set the owner: \(String(cString: strerror(errno)))")
        }
        guard fsync(fd) == 0 else { throw failure(.io, "cannot flush: \(String(cString: strerror(errno)))") }
        guard rename(temporary, target) == 0 else {
            throw failure(.io, "cannot replace it: \(String(cString: strerror(errno)))")
        }
        done = true
        let directory = open(folder, O_RDONLY | O_DIRECTORY)
        if directory >= 0 {
            fsync(directory)
            close(directory)
        }
    }
}
