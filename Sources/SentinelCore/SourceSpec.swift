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

    /// How the source is named wherever people read it (logs, errors, `/healthz`, the API, `check`, the probe, the
    /// dashboard): a URL as `LiveEndpoint.forPeople` renders it.
    public var description: String {
        switch self {
        case .device(let index, _, _): "/dev/video\(index)"
        case .url(let url): Self.forPeople(url)
        }
    }

    /// A URL with its whole user and password replaced by `***`, whatever characters they hold, and the values of
    /// query parameters that name a secret (`password=`, `token=`, ...) too. The user and password run to the URL's
    /// last `@`: a password holding `/`, `@`, `:`, `%`, `?` or `#` is hidden whole, and a path or query holding `@`
    /// is hidden with it (shown too little, never too much).
    public static func forPeople(_ url: String) -> String {
        guard let scheme = url.firstMatch(of: /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//) else { return url }
        let rest = url[scheme.range.upperBound...]
        var shown = String(scheme.output)
        var query = rest[...]
        if let at = rest.lastIndex(of: "@") {
            shown += "***@"
            query = rest[rest.index(after: at)...]
        }
        // A `?` after the `#` is the fragment's, not a query's.
        let fragment = query.firstIndex(of: "#") ?? query.endIndex
        guard let mark = query[..<fragment].firstIndex(of: "?") else { return shown + query }
        shown += query[...mark]
        let parameters = query[query.index(after: mark)..<fragment].split(
            separator: "&", omittingEmptySubsequences: false)
        shown += parameters.map { parameter in
            guard let equals = parameter.firstIndex(of: "="),
                parameter[..<equals].lowercased().contains(/pass|pwd|secret|token|key|auth|sig|user|login/)
            else { return String(parameter) }
            return parameter[...equals] + "***"
        }.joined(separator: "&")
        return shown + query[fragment...]
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
