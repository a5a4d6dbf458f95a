import Foundation
import Glibc
import SentinelTestSupport
import Synchronization
import Testing

/// `sentinel replay -o PATH`, the real binary, on the kinds of path a user gives: a device, a FIFO, a symlink.
@Suite("sentinel replay -o: outputs that are not plain files", .ownThread)
struct ReplayOutputTests {
    /// A 4 s clip of the showroom scene (visitors enter within it) and a folder to write into.
    static let clip: Result<(folder: URL, video: String), any Error> = Result {
        let video = try Fixtures.showroomClip(seconds: 4)
        return (video.deletingLastPathComponent(), video.path)
    }

    func replay(to output: String) async throws -> (status: Int32, errors: String) {
        let (status, _, errors) = try await Fixtures.run(
            Fixtures.sentinel, ["replay", try Self.clip.get().video, "-o", output])
        return (status, errors)
    }

    func fileType(_ path: String) -> mode_t {
        var status = stat()
        return lstat(path, &status) == 0 ? status.st_mode & S_IFMT : 0
    }

    @Test(
        "a character device given as output is written in place, never replaced by a regular file",
        .enabled(if: getuid() == 0, "making a device node needs root"))
    func deviceStaysDevice() async throws {
        // A node of our own for the null device: a regression must not destroy the machine's /dev/null.
        let null = try Self.clip.get().folder.appendingPathComponent("null").path
        try #require(mknod(null, S_IFCHR | 0o666, dev_t(1 << 8 | 3)) == 0)  // makedev(1, 3) in glibc's encoding
        let result = try await replay(to: null)
        #expect(result.status == 0, "\(result.errors)")
        #expect(fileType(null) == S_IFCHR)
    }

    @Test("a FIFO given as output stays a FIFO and its reader gets every event")
    func fifoStaysFifo() async throws {
        let fifo = try Self.clip.get().folder.appendingPathComponent("events.fifo").path
        try #require(mkfifo(fifo, 0o600) == 0)
        // The reader on a thread of its own: the writer blocks opening the FIFO until it does, and the
        // cooperative pool may be busy with other tests' blocking runs.
        let received = Mutex(Data())
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            let fd = open(fifo, O_RDONLY)
            let data = fd < 0 ? Data() : FileHandle(fileDescriptor: fd, closeOnDealloc: true).readDataToEndOfFile()
            received.withLock { $0 = data }
            done.signal()
        }
        let result = try await replay(to: fifo)
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(result.status == 0, "\(result.errors)")
        #expect(fileType(fifo) == S_IFIFO)
        let lines = received.withLock { String(decoding: $0, as: UTF8.self).split(separator: "\n") }
        #expect(lines.count >= 3)
    }

    @Test("a symlink given as output is followed: the link stays, its target gets the events and keeps its mode")
    func symlinkIsFollowed() async throws {
        let folder = try Self.clip.get().folder
        let target = folder.appendingPathComponent("real.jsonl").path
        let link = folder.appendingPathComponent("link.jsonl").path
        try Data("old\n".utf8).write(to: URL(fileURLWithPath: target))
        chmod(target, 0o640)
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let result = try await replay(to: link)
        #expect(result.status == 0, "\(result.errors)")
        #expect(fileType(link) == S_IFLNK)
        let lines = try String(contentsOfFile: target, encoding: .utf8).split(separator: "\n")
        #expect(lines.count >= 3 && !lines.contains("old"))
        var status = stat()
        stat(target, &status)
        #expect(status.st_mode & 0o777 == 0o640)
        // No temporary file is left beside it.
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") }.isEmpty)
    }

    @Test("a review video goes through a symlink to its target, whole or not at all; a FIFO is refused, not written")
    func reviewVideo() async throws {
        let folder = try Fixtures.temporaryFolder()
        let clip = try Self.clip.get().video
        let target = folder.appendingPathComponent("review.mp4").path
        let link = folder.appendingPathComponent("latest.mp4").path
        try Data("old".utf8).write(to: URL(fileURLWithPath: target))
        try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: target)
        let written = try await Fixtures.run(
            Fixtures.sentinel, ["replay", clip, "-o", "/dev/null", "--annotate", link])
        #expect(written.status == 0, "\(written.errors)")
        #expect(fileType(link) == S_IFLNK && fileType(target) == S_IFREG)
        let video = try Data(contentsOf: URL(fileURLWithPath: target))
        #expect(video.count > 10_000)
        // A run that fails (its recording cannot be opened) leaves the video that was there.
        let before = try Data(contentsOf: URL(fileURLWithPath: target))
        let broken = Fixtures.root.appendingPathComponent("Tests/Corpus/media/zero-bytes.mp4").path
        let failed = try await Fixtures.run(
            Fixtures.sentinel, ["replay", broken, "-o", "/dev/null", "--annotate", link])
        let after = try Data(contentsOf: URL(fileURLWithPath: target))
        #expect(failed.status == 1 && after == before)
        let fifo = folder.appendingPathComponent("review.avi").path
        try #require(mkfifo(fifo, 0o600) == 0)
        let refused = try await Fixtures.run(
            Fixtures.sentinel, ["replay", clip, "-o", "/dev/null", "--annotate", fifo])
        #expect(refused.status == 1 && refused.errors.contains("not a regular file"), "\(refused.errors)")
        #expect(fileType(fifo) == S_IFIFO)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasPrefix(".") }.isEmpty)
    }

    @Test(
        "interrupted by SIGINT or SIGTERM, replay leaves no temporary file (events or review video) and dies of the signal",
        arguments: [SIGINT, SIGTERM])
    func interrupted(signal: Int32) async throws {
        let folder = try Fixtures.temporaryFolder()
        let process = Process()
        process.executableURL = Fixtures.sentinel
        process.currentDirectoryURL = Fixtures.root
        // The long sample at its own pace: still running when the signal comes.
        process.arguments = [
            "replay", Fixtures.recording("showroom-1280x720.mp4"), "--pace", "realtime", "-o",
            folder.appendingPathComponent("events.jsonl").path, "--annotate",
            folder.appendingPathComponent("review.mp4").path,
        ]
        process.standardError = FileHandle.nullDevice
        try process.run()
        defer { if process.isRunning { process.terminate() } }
        // Both temporary files exist once the first frame is written: up to 1,200 naps of 50 ms (a fresh clone's full
        // suite on 2 cores took more than 200 to start the replay).
        var seen: [String] = []
        for _ in 0..<1_200 where seen.count < 2 {
            try await Task.sleep(for: .milliseconds(50))
            seen = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
        }
        #expect(seen.count == 2 && seen.allSatisfy { $0.hasPrefix(".") }, "\(seen)")
        kill(process.processIdentifier, signal)
        _ = await process.ended()
        #expect(process.terminationReason == .uncaughtSignal && process.terminationStatus == signal)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
    }
}
