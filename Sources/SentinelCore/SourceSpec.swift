import Foundation

/// What a user wrote to name a frame source, told apart by its form.
public enum SourceSpec: Sendable, Equatable, CustomStringConvertible {
    case file(String)
    case folder(String)
    case live(LiveEndpoint)

    /// `/dev/videoN` or a bare index is a camera; `scheme://...` a stream; a directory a folder of images;
    /// anything else a video file.
    public init(_ text: String) {
        if let index = Int(text), index >= 0 {
            self = .live(.device(index: index))
        } else if text.hasPrefix("/dev/video"), let index = Int(text.dropFirst("/dev/video".count)) {
            self = .live(.device(index: index))
        } else if text.contains("://") {
            self = .live(.url(text))
        } else {
            var isDirectory: ObjCBool = false
            let exists = FileManager.default.fileExists(atPath: text, isDirectory: &isDirectory)
            self = exists && isDirectory.boolValue ? .folder(text) : .file(text)
        }
    }

    public var description: String {
        switch self {
        case .file(let path), .folder(let path): path
        case .live(let endpoint): endpoint.description
        }
    }
}

/// Where live frames come from: a V4L2 camera or a network stream.
public enum LiveEndpoint: Sendable, Equatable, CustomStringConvertible {
    /// `/dev/videoN`, by its index.
    case device(index: Int, width: Int? = nil, height: Int? = nil)
    /// `rtsp://`, `http://`, `https://` or another URL FFmpeg reads.
    case url(String)

    /// How logs and errors name the source: a URL's user and password are replaced by `***`.
    public var description: String {
        switch self {
        case .device(let index, _, _): "/dev/video\(index)"
        case .url(let url): url.replacing(/^([a-zA-Z][a-zA-Z0-9+.-]*:\/\/)[^\/@]*@/) { "\($0.1)***@" }
        }
    }
}

/// How fast a recorded source is replayed. Media timestamps are the same whatever the pace.
public enum Pacing: Sendable, Equatable, CustomStringConvertible {
    /// Every frame as soon as it is decoded (for tuning and evaluation).
    case fastest
    /// Media time advances `factor` times as fast as the wall clock (1 is real time).
    case speed(Double)

    public static let realTime = Pacing.speed(1)

    /// Parses `fastest`, `realtime`, or a factor such as `4x` or `0.5`.
    public init?(_ text: String) {
        switch text.lowercased() {
        case "fastest", "max": self = .fastest
        case "realtime", "real-time", "1x": self = .realTime
        default:
            let number = text.lowercased().hasSuffix("x") ? String(text.dropLast()) : text
            guard let factor = Double(number), factor > 0, factor.isFinite else { return nil }
            self = .speed(factor)
        }
    }

    public var description: String {
        switch self {
        case .fastest: "fastest"
        case .speed(let factor): factor == 1 ? "realtime" : "\(factor)x"
        }
    }
}
