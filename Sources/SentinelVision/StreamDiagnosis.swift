import Foundation
import SentinelCore

#if canImport(Glibc)
    import Glibc
#endif

extension SourceSpec {
    /// Why a source would not open, as exactly as can be found out: OpenCV says only "cannot open". A device is looked
    /// for; a URL's host is resolved, connected to, and (RTSP, HTTP) asked for the stream, whose answer (401, 404) is
    /// the cause.
    func diagnosis(of message: String) -> String {
        switch self {
        case .file, .folder: return message
        case .live(.device(let index, _, _)):
            let path = "/dev/video\(index)"
            if access(path, F_OK) != 0 {
                let present = ((try? FileManager.default.contentsOfDirectory(atPath: "/dev")) ?? [])
                    .filter { $0.hasPrefix("video") }.sorted().map { "/dev/\($0)" }
                return "no such device \(path) ("
                    + (present.isEmpty
                        ? "this machine has no V4L2 camera"
                        : "this machine has \(present.joined(separator: ", "))") + ")"
            }
            if access(path, R_OK | W_OK) != 0 {
                return "\(path): permission denied (add the user that runs sentinel to the group video)"
            }
            return "\(message) (\(path) exists and may be read: busy in another program, or not a capture device)"
        case .live(.url(let text)):
            return StreamDiagnosis(text)?.run(describing: description) ?? message
        }
    }
}

/// Asks a stream's server what OpenCV would not say: whether the host exists, answers on its port, and what it
/// answers for the stream (RTSP DESCRIBE, HTTP GET; HTTPS only as far as the connection). It asks without the URL's
/// user and password: a 401 then means the camera wants them, and when the URL has them, that it refused them (FFmpeg
/// tried them, Basic or Digest as the camera asked, and failed).
public struct StreamDiagnosis: Sendable {
    let scheme: String
    let host: String
    let port: Int
    let target: String
    /// Whether the URL carries a user (never sent by the diagnosis: FFmpeg, which failed, tried it already).
    let credentials: Bool
    static let timeout = 5.0
    var place: String { "\(host):\(port)" }

    public init?(_ text: String) {
        // Where FFmpeg connects: the URL as FFmpeg splits it, without its user and password.
        guard let parts = StreamURL(text) else { return nil }
        let plainText = parts.plain
        guard let url = URLComponents(string: String(plainText)), let scheme = url.scheme?.lowercased(),
            let host = url.host, !host.isEmpty
        else { return nil }
        let ports = ["rtsp": 554, "rtsps": 322, "http": 80, "https": 443]
        guard let port = url.port ?? ports[scheme] else { return nil }
        self.scheme = scheme
        self.host = host.hasPrefix("[") ? String(host.dropFirst().dropLast()) : host
        self.port = port
        target =
            scheme == "rtsp"
            ? String(plainText)
            : (url.percentEncodedPath.isEmpty ? "/" : url.percentEncodedPath)
                + (url.percentEncodedQuery.map { "?\($0)" } ?? "")
        credentials = parts.user != nil
    }

    /// The cause, in words naming the place (`described`, the URL without its password).
    func run(describing described: String) -> String {
        switch ask(.stream) {
        case .failure(let problem): problem.text
        case .success(nil):
            "\(place) accepts connections, but the stream cannot be read (FFmpeg: cannot open \(described))"
        case .success(let answer?): explain(answer, describing: described)
        }
    }

    /// Asks the server before FFmpeg opens the stream, and refuses one that is not there or does not answer within
    /// `timeout`: OpenCV holds one lock over every FFmpeg open in the process, so a camera that accepts and never
    /// answers held every other source's open (a recording's reopening, a hundred cameras probed at once) for FFmpeg's
    /// whole timeout; asked here, it holds only its own thread. Any answer will do, and an RTSP server is asked what
    /// FFmpeg asks first (OPTIONS: no stream is prepared for it). Where a redirect leads is decided in FFmpeg's path,
    /// by the `CredentialRelay`, not here.
    public func preflight(describing described: String) throws(VisionError) {
        if case .failure(let problem) = ask(.presence) {
            throw VisionError(.open, "cannot open \(described): \(problem.text)")
        }
    }

    /// Whether `other` names the same server: scheme, host (any case) and port.
    func sameServer(as other: StreamDiagnosis) -> Bool {
        host.lowercased() == other.host.lowercased() && port == other.port && scheme == other.scheme
    }

    struct Problem: Error { let text: String }

    /// What the server is asked: whether it answers at all, or for the stream.
    enum Question { case presence, stream }

    /// The server's first bytes in answer to `question` (nil for a scheme not asked, HTTPS), or why there are none.
    private func ask(_ question: Question) -> Result<[UInt8]?, Problem> {
        let socket: Int32
        switch connected() {
        case .success(let connected): socket = connected
        case .failure(let problem): return .failure(problem)
        }
        defer { close(socket) }
        let request: String
        switch (scheme, question) {
        case ("rtsp", .presence):
            request = "OPTIONS \(target) RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: sentinel-probe\r\n\r\n"
        case ("rtsp", .stream):
            request =
                "DESCRIBE \(target) RTSP/1.0\r\nCSeq: 1\r\nAccept: application/sdp\r\nUser-Agent: sentinel-probe\r\n\r\n"
        case ("http", _):
            // The first bytes of the stream's answer, as FFmpeg asks (some cameras answer nothing else).
            request = "GET \(target) HTTP/1.0\r\nHost: \(host)\r\nUser-Agent: sentinel-probe\r\n\r\n"
        default:
            return .success(nil)
        }
        _ = request.utf8CString.withUnsafeBufferPointer { send(socket, $0.baseAddress, $0.count - 1, 0) }
        var buffer = [UInt8](repeating: 0, count: 2048)
        let count = recv(socket, &buffer, buffer.count, 0)
        // 0: the peer closed the connection without a word (a service that is not a camera, or one that refuses
        // this address); below 0 after the wait: it kept the connection open and said nothing.
        if count == 0 {
            return .failure(
                Problem(
                    text:
                        "\(place) accepted the connection and closed it without answering \(scheme.uppercased()) (not a camera's \(scheme.uppercased()) port, or it refuses this client)"
                ))
        }
        guard count > 0 else {
            let timedOut = errno == EAGAIN || errno == EWOULDBLOCK
            return .failure(
                Problem(
                    text: timedOut
                        ? "\(place) accepted the connection but did not answer \(scheme.uppercased()) within \(Int(Self.timeout)) s"
                        : "\(place) accepted the connection, then: \(String(cString: strerror(errno)))"
                ))
        }
        return .success(Array(buffer[0..<count]))
    }

    /// A socket connected to the server, waiting at most `timeout` to connect, send and receive: each of the host's
    /// addresses in turn, as FFmpeg tries them (localhost may be ::1 first and the camera listen on 127.0.0.1 only);
    /// the first address's failure is the one said.
    func connected() -> Result<Int32, Problem> {
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, "\(port)", &hints, &found)
        guard resolved == 0, let first = found else {
            return .failure(Problem(text: "no such host \(host) (\(String(cString: gai_strerror(resolved))))"))
        }
        defer { freeaddrinfo(found) }
        var failure: Problem?
        for address in sequence(first: first, next: { $0.pointee.ai_next }) {
            switch connect(address.pointee) {
            case .success(let socket): return .success(socket)
            case .failure(let problem): failure = failure ?? problem
            }
        }
        return .failure(failure!)
    }

    /// A socket connected to `address`, waiting at most `timeout` to connect, send and receive.
    private func connect(_ address: addrinfo) -> Result<Int32, Problem> {
        let socket = Glibc.socket(address.ai_family, address.ai_socktype, address.ai_protocol)
        guard socket >= 0 else {
            return .failure(Problem(text: "cannot make a socket (\(String(cString: strerror(errno))))"))
        }
        var wait = timeval(tv_sec: Int(Self.timeout), tv_usec: 0)
        setsockopt(socket, SOL_SOCKET, SO_SNDTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(socket, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
        guard Glibc.connect(socket, address.ai_addr, address.ai_addrlen) != 0 else { return .success(socket) }
        let error = errno
        close(socket)
        switch error {
        case ECONNREFUSED:
            return .failure(Problem(text: "connection refused by \(place): nothing listens on that port"))
        case EINPROGRESS, EAGAIN, ETIMEDOUT:
            return .failure(
                Problem(
                    text:
                        "no answer from \(place) within \(Int(Self.timeout)) s (timed out: a wrong address, or a firewall)"
                ))
        default: return .failure(Problem(text: "cannot connect to \(place): \(String(cString: strerror(error)))"))
        }
    }

    /// What a server's first bytes say, in words: the status of its RTSP or HTTP answer (the reason phrase with its
    /// control characters shown, never sent to the terminal), or that it speaks neither.
    public func explain(_ answer: some Collection<UInt8>, describing described: String) -> String {
        let status =
            String(decoding: answer, as: UTF8.self).split(whereSeparator: \.isNewline).first.map(String.init) ?? ""
        let parts = status.split(separator: " ", maxSplits: 2).map(String.init)
        guard parts.count >= 2, parts[0].hasPrefix("RTSP/") || parts[0].hasPrefix("HTTP/"), let code = Int(parts[1])
        else {
            return
                "\(place) does not speak \(scheme.uppercased()) (it answered \"\(String(status.prefix(80)).controlCharactersShown)\")"
        }
        let answer = "\(code)" + (parts.count > 2 ? " \(String(parts[2].prefix(80)).controlCharactersShown)" : "")
        switch code {
        case 401:
            return !credentials
                ? "\(answer): the camera wants a user and password (\(scheme)://USER:PASSWORD@\(place)/...)"
                : "\(answer): the camera refused the user and password in the URL"
        case 403: return "\(answer): the camera refuses this client"
        case 404: return "\(answer): \(place) has no stream at \(described)"
        case 200..<300:
            return "\(place) answers \(answer), but FFmpeg cannot read the stream (its codec or transport)"
        default: return "\(place) answers \(answer)"
        }
    }
}
