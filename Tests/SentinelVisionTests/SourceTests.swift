import Foundation
import Logging
import SentinelCore
import SentinelTestSupport
import SentinelVision
import SentinelWire
import Testing

@Suite("Frame sources", .computing)
struct SourceTests {
    /// Writes a short video of moving squares: `frames` frames at `fps`.
    func makeVideo(_ name: String, frames: Int, fps: Double = 25) throws -> String {
        let path = try Fixtures.temporaryFolder().appendingPathComponent(name).path
        let writer = try VideoWriter(path: path, fps: fps, width: 320, height: 240)
        for i in 0..<frames {
            let image = try Image(width: 320, height: 240, fill: Color(red: 30, green: 60, blue: 90))
            try image.drawRectangle(
                Box(x: Double(i * 4 % 280), y: 80, width: 40, height: 40), color: .white, thickness: -1)
            try writer.write(image)
        }
        writer.finish()
        return path
    }

    @Test("a still image renamed .mp4 is read with sane media time instead of crashing on FFmpeg's timestamp")
    func stillImageRenamedAsVideo() throws {
        // FFmpeg reports about -9e15 ms for this frame; turned into media time unchecked it trapped (SIGILL).
        let path = try Fixtures.temporaryFolder().appendingPathComponent("photo.mp4").path
        try FileManager.default.copyItem(atPath: Fixtures.photo("grace_hopper_512x512.jpg"), toPath: path)
        let source = try VideoFileSource(path: path)
        var times: [MediaTime] = []
        while let frame = try source.next() { times.append(frame.time) }
        #expect(times == [.zero])
        #expect(source.repairedTimestamps == 1)
    }

    @Test("the repaired timestamp of a sane file is none: real timestamps are kept")
    func saneFileNeedsNoRepair() throws {
        let source = try VideoFileSource(path: Fixtures.recording())
        while try source.next() != nil {}
        #expect(source.repairedTimestamps == 0)
    }

    @Test("file timestamps increase and agree with the container's frame rate")
    func timestampsFollowContainer() throws {
        let path = Fixtures.recording()
        let source = try VideoFileSource(path: path)
        #expect(source.nominalFPS == 15)
        var times: [MediaTime] = []
        while let frame = try source.next() {
            #expect(frame.index == times.count)
            times.append(frame.time)
        }
        #expect(times.count == 600)
        #expect(zip(times, times.dropFirst()).allSatisfy { $0 < $1 })
        for (i, time) in times.enumerated() {
            #expect(abs(time.seconds - Double(i) / 15) < 0.001, "frame \(i) at \(time)")
        }
        #expect(source.endReason == nil)
    }

    @Test("a truncated file ends the source with the frames read so far and says why")
    func truncatedFile() throws {
        let path = try makeVideo("cut.avi", frames: 50)
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        try data.prefix(data.count / 2).write(to: URL(fileURLWithPath: path))
        let source = try VideoFileSource(path: path)
        var count = 0
        while try source.next() != nil { count += 1 }
        #expect(count > 5 && count < 50)
        #expect(source.endReason?.contains(path) == true)
        #expect(try source.next() == nil)
    }

    @Test("a file with garbage in the middle still yields the frames before it")
    func corruptMiddle() throws {
        let path = try makeVideo("noise.avi", frames: 40)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        let start = data.count / 2
        for i in start..<(start + 4096) { data[i] = UInt8(truncatingIfNeeded: i * 7919) }
        try data.write(to: URL(fileURLWithPath: path))
        let source = try VideoFileSource(path: path)
        var count = 0
        while try source.next() != nil { count += 1 }
        #expect(count >= 15)
    }

    @Test("a folder of images yields them in name order, 1/fps apart, skipping an undecodable one")
    func imageFolder() throws {
        let folder = try Fixtures.temporaryFolder()
        for (i, name) in ["a.jpg", "b.png", "c.jpg"].enumerated() {
            try Image(width: 64, height: 48, fill: Color(red: UInt8(i * 80), green: 0, blue: 0)).write(
                to: folder.appendingPathComponent(name).path)
        }
        try Data("garbage".utf8).write(to: folder.appendingPathComponent("b2.jpg"))
        try Data("notes".utf8).write(to: folder.appendingPathComponent("readme.txt"))
        let source = try ImageFolderSource(path: folder.path, fps: 2)
        var frames: [Frame] = []
        while let frame = try source.next() { frames.append(frame) }
        #expect(frames.map(\.time) == [MediaTime(seconds: 0), MediaTime(seconds: 0.5), MediaTime(seconds: 1)])
        #expect(source.skipped.map { URL(fileURLWithPath: $0.file).lastPathComponent } == ["b2.jpg"])
    }

    @Test("an empty folder is an .open error naming it")
    func emptyFolder() throws {
        let folder = try Fixtures.temporaryFolder()
        let error = try #require(throws: VisionError.self) { try ImageFolderSource(path: folder.path) }
        #expect(error.code == .open && error.message.contains(folder.path))
    }

    @Test("sources are told apart by what the user wrote")
    func specParsing() throws {
        #expect(SourceSpec("0") == .live(.device(index: 0)))
        #expect(SourceSpec("/dev/video2") == .live(.device(index: 2)))
        #expect(SourceSpec("rtsp://cam.local/stream") == .live(.url("rtsp://cam.local/stream")))
        #expect(SourceSpec(NSTemporaryDirectory()) == .folder(NSTemporaryDirectory()))
        #expect(SourceSpec("clip.mkv") == .file("clip.mkv"))
    }

    @Test("a stream's user and password never reach a log line or an error message")
    func credentialsAreRedacted() throws {
        let endpoint = LiveEndpoint.url("rtsp://admin:s3cret@127.0.0.1:9/stream")
        #expect(endpoint.description == "rtsp://***@127.0.0.1:9/stream")
        let error = #expect(throws: VisionError.self) { try LiveSource(endpoint, logger: Logger(label: "test")) }
        #expect(
            error?.message.contains("s3cret") == false && error?.message.contains("***@127.0.0.1") == true,
            "\(String(describing: error))")
    }

    @Test("pacing parses fastest, realtime and factors")
    func pacingParsing() {
        #expect(Pacing("fastest") == .fastest)
        #expect(Pacing("realtime") == .speed(1))
        #expect(Pacing("4x") == .speed(4))
        #expect(Pacing("0.5") == .speed(0.5))
        #expect(Pacing("-2x") == nil)
        #expect(Pacing("fast") == nil)
    }

    @Test("paced replay never runs ahead of media time divided by the speed, and keeps timestamps")
    func pacingHoldsFramesBack() throws {
        let path = try makeVideo("paced.avi", frames: 26, fps: 25)
        let clock = VirtualClock()
        let paced = PacedSource(try VideoFileSource(path: path), pacing: .speed(4), clock: clock)
        var times: [MediaTime] = []
        var held: [Duration] = []
        while let frame = try paced.next() {
            times.append(frame.time)
            held.append(clock.elapsed)
        }
        // Each frame comes out when its media time, divided by the speed, has passed: 1 s of media at 4x is 0.25 s.
        for (time, wait) in zip(times, held) {
            #expect(abs(wait.seconds - (time - times[0]).seconds / 4) < 1e-9, "\(time): \(wait)")
        }
        #expect(abs(held.last!.seconds - 0.25) < 1e-9)
        let fast = try VideoFileSource(path: path)
        var fastTimes: [MediaTime] = []
        while let frame = try fast.next() { fastTimes.append(frame.time) }
        #expect(times == fastTimes)
    }

    @Test("reconnect backoff doubles from its start up to its ceiling")
    func backoffSchedule() {
        let backoff = Backoff(initial: .milliseconds(500), maximum: .seconds(8))
        #expect(
            (0..<7).map { backoff.delay(attempt: $0) } == [
                .milliseconds(500), .seconds(1), .seconds(2), .seconds(4), .seconds(8), .seconds(8), .seconds(8),
            ])
    }
}
