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

    /// A URL with its whole user and password replaced by `***`, whatever characters they hold, and the value of every
    /// parameter that names a secret (`password=`, `pw=`, `token=`, `user=`, ...) too, wherever it stands: in the query,
    /// the path (`/user=admin&password=X&channel=1`, `;password=X`) or the fragment, its name read decoded
    /// (`p%61ssword`). A secret's value runs to the next `&name=` or `;name=`, whatever it holds before (`#`, `@`, `?`,
    /// `&`). The user and password then run to the URL's last `@`: a password holding `/`, `@`, `:`, `%`, `?` or `#` is
    /// hidden whole, and a path or query holding `@` is hidden with it (shown too little, never too much).
    public static func forPeople(_ url: String) -> String {
        guard let scheme = url.firstMatch(of: /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//) else { return url }
        let rest = url[scheme.range.upperBound...]
        var shown = String(scheme.output)
        var cursor = rest.startIndex
        if let at = rest.lastIndex(of: "@") {
            shown += "***@"
            cursor = rest.index(after: at)
        }
        // A secret that began before the last `@` is hidden to its end after it too.
        for secret in secretValues(in: rest) where secret.upperBound > cursor {
            shown += rest[cursor..<max(cursor, secret.lowerBound)] + "***"
            cursor = secret.upperBound
        }
        return shown + rest[cursor...]
    }

    /// Where the value of each parameter named like a secret lies in `text`.
    private static func secretValues(in text: Substring) -> [Range<String.Index>] {
        var values: [Range<String.Index>] = []
        var next = text.startIndex
        while let parameter = text[next...].firstMatch(of: /[\/?&;#:]([^\/?&;#=:]*)=/) {
            next = parameter.range.upperBound
            let name = (String(parameter.output.1).removingPercentEncoding ?? String(parameter.output.1)).lowercased()
            guard name.contains(/pass|pw|secret|token|key|auth|sig|user|usr|login|cred|session/) else { continue }
            let end = text[next...].firstMatch(of: /[&;][^\/?&;#=@]+=/)?.range.lowerBound ?? text.endIndex
            values.append(next..<end)
            next = end
        }
        return values
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
