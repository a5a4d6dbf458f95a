import Foundation
import SentinelCore

/// The size an image file's header claims, read before anything is decoded: a 629-byte JPEG can claim 30000x30000,
/// which OpenCV would allocate (2.7 GB) before finding the data short. Sentinel reads JPEG, PNG, BMP, WebP, TIFF and
/// the PNM family (what cameras, phones and labelling tools write); any other file is refused by name, as is one whose
/// header claims more than `maxPixels`.
public enum ImageHeader {
    /// 50 million pixels (150 MB decoded): an 8,000 x 6,000 photo; a 48-megapixel phone's full-size picture is 8,000 x
    /// 6,000 too.
    public static let maxPixels = 50_000_000

    /// Width and height, or why the header says none; `read(offset, count)` gives up to `count` bytes of the file at
    /// `offset` (fewer at its end).
    public static func size(read: (Int, Int) throws -> [UInt8]) throws(VisionError) -> (width: Int, height: Int) {
        func bytes(_ offset: Int, _ count: Int) throws(VisionError) -> [UInt8] {
            do { return try read(offset, count) } catch { throw VisionError(.open, "cannot read: \(error)") }
        }
        let start = try bytes(0, 32)
        func big(_ b: [UInt8], _ at: Int, _ n: Int) -> Int { b[at..<at + n].reduce(0) { $0 << 8 | Int($1) } }
        func little(_ b: [UInt8], _ at: Int, _ n: Int) -> Int {
            b[at..<at + n].reversed().reduce(0) { $0 << 8 | Int($1) }
        }
        let size: (width: Int, height: Int)
        if start.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) {
            guard start.count >= 24, start[12..<16].elementsEqual(Array("IHDR".utf8)) else {
                throw VisionError(.open, "a PNG without its IHDR header")
            }
            size = (big(start, 16, 4), big(start, 20, 4))
        } else if start.starts(with: [0xFF, 0xD8]) {
            size = try jpeg(bytes)
        } else if start.starts(with: Array("BM".utf8)) {
            guard start.count >= 26 else { throw VisionError(.open, "a BMP cut short in its header") }
            let height = Int32(bitPattern: UInt32(little(start, 22, 4)))
            size = (Int(Int32(bitPattern: UInt32(little(start, 18, 4)))), Int(height.magnitude))
        } else if start.count >= 30, start.starts(with: Array("RIFF".utf8)),
            start[8..<12].elementsEqual(Array("WEBP".utf8))
        {
            let chunk = String(decoding: start[12..<16], as: UTF8.self)
            switch chunk {
            case "VP8 ": size = (little(start, 26, 2) & 0x3FFF, little(start, 28, 2) & 0x3FFF)
            case "VP8L":
                let bits = little(start, 21, 4)
                size = ((bits & 0x3FFF) + 1, (bits >> 14 & 0x3FFF) + 1)
            case "VP8X": size = (little(start, 24, 3) + 1, little(start, 27, 3) + 1)
            default: throw VisionError(.open, "a WebP of no known kind (\(chunk.controlCharactersShown))")
            }
        } else if start.starts(with: Array("II*\u{0}".utf8)) || start.starts(with: Array("MM\u{0}*".utf8)) {
            size = try tiff(bytes, littleEndian: start[0] == UInt8(ascii: "I"))
        } else if start.count >= 2, start[0] == UInt8(ascii: "P"),
            (UInt8(ascii: "1")...UInt8(ascii: "6")).contains(start[1])
        {
            size = try pnm(try bytes(0, 1024))
        } else {
            throw VisionError(.open, "not a JPEG, PNG, BMP, WebP, TIFF or PNM image")
        }
        guard size.width > 0, size.height > 0 else {
            throw VisionError(.open, "its header gives a size of \(size.width)x\(size.height)")
        }
        guard size.width <= maxPixels, size.height <= maxPixels, size.width * size.height <= maxPixels else {
            throw VisionError(
                .open,
                "its header claims \(size.width)x\(size.height) pixels, more than the \(maxPixels / 1_000_000) million Sentinel reads"
            )
        }
        return size
    }

    /// The size in a file's header, opened as a regular file.
    public static func size(ofFile path: String) throws(VisionError) -> (width: Int, height: Int) {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            throw VisionError(.open, "cannot open: \(String(cString: strerror(errno)))")
        }
        defer { try? handle.close() }
        return try size { offset, count in
            try handle.seek(toOffset: UInt64(offset))
            return [UInt8](try handle.bytes(upTo: count))
        }
    }

    /// A JPEG's frame header (SOF0-SOF15 but DHT, JPG and DAC), walked to segment by segment: an Exif block of its
    /// own 64 KiB comes first in most cameras' files.
    private static func jpeg(_ bytes: (Int, Int) throws(VisionError) -> [UInt8]) throws(VisionError) -> (Int, Int) {
        var offset = 2
        // A segment is at least 4 bytes: the walk ends within the file, and within 10,000 segments.
        for _ in 0..<10_000 {
            let marker = try bytes(offset, 9)
            guard marker.count >= 4, marker[0] == 0xFF else {
                throw VisionError(.open, "a JPEG whose segments end before its frame header")
            }
            let kind = marker[1]
            if kind == 0xFF {  // fill byte
                offset += 1
                continue
            }
            let length = Int(marker[2]) << 8 | Int(marker[3])
            if (0xC0...0xCF).contains(kind), ![0xC4, 0xC8, 0xCC].contains(kind) {
                guard marker.count >= 9 else { throw VisionError(.open, "a JPEG cut short in its frame header") }
                return (Int(marker[7]) << 8 | Int(marker[8]), Int(marker[5]) << 8 | Int(marker[6]))
            }
            guard kind != 0xD9, kind != 0xDA, length >= 2 else {
                throw VisionError(.open, "a JPEG without a frame header before its data")
            }
            offset += 2 + length
        }
        throw VisionError(.open, "a JPEG of more than 10,000 segments before its frame header")
    }

    /// A TIFF's first image: its ImageWidth (256) and ImageLength (257) among the first directory's entries. A tag
    /// given twice is read at its largest: decoders differ on which they keep (OpenCV's, the first; this reader kept the
    /// last, so 30000x30000 then 16x16 passed as 16x16 and OpenCV allocated 3.95 GB).
    private static func tiff(_ bytes: (Int, Int) throws(VisionError) -> [UInt8], littleEndian: Bool) throws(VisionError)
        -> (Int, Int)
    {
        func number(_ b: [UInt8], _ at: Int, _ n: Int) -> Int {
            let slice = b[at..<at + n]
            return (littleEndian ? Array(slice.reversed()) : Array(slice)).reduce(0) { $0 << 8 | Int($1) }
        }
        let header = try bytes(0, 8)
        guard header.count == 8 else { throw VisionError(.open, "a TIFF cut short in its header") }
        let directory = number(header, 4, 4)
        let count = try bytes(directory, 2)
        guard count.count == 2 else { throw VisionError(.open, "a TIFF whose first directory is past its end") }
        let entries = try bytes(directory + 2, 12 * min(number(count, 0, 2), 4_096))
        var width: Int?
        var height: Int?
        for at in stride(from: 0, to: entries.count - 11, by: 12) {
            let tag = number(entries, at, 2)
            let type = number(entries, at + 2, 2)
            guard tag == 256 || tag == 257, type == 3 || type == 4 else { continue }
            let value = number(entries, at + 8, type == 3 ? 2 : 4)
            if tag == 256 { width = max(width ?? 0, value) } else { height = max(height ?? 0, value) }
        }
        guard let width, let height else { throw VisionError(.open, "a TIFF without its width and height") }
        return (width, height)
    }

    /// A PNM's header: magic, width, height, each separated by white space and `#` comments.
    private static func pnm(_ head: [UInt8]) throws(VisionError) -> (Int, Int) {
        var numbers: [Int] = []
        var index = 2
        while numbers.count < 2, index < head.count {
            let byte = head[index]
            if byte == UInt8(ascii: "#") {
                while index < head.count, head[index] != 0x0A { index += 1 }
            } else if (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) {
                var value = 0
                while index < head.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(head[index]) {
                    value = min(value * 10 + Int(head[index] - UInt8(ascii: "0")), Int(Int32.max))
                    index += 1
                }
                numbers.append(value)
                continue
            } else if ![0x20, 0x09, 0x0A, 0x0D].contains(byte) {
                throw VisionError(.open, "a PNM header with other than numbers and comments")
            }
            index += 1
        }
        guard numbers.count == 2 else { throw VisionError(.open, "a PNM without its size in its first 1 KiB") }
        return (numbers[0], numbers[1])
    }
}
