import Crypto
import Foundation
import SentinelCore
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// A stream URL split where FFmpeg splits it (av_url_split): the authority ends at the first `/`, `?` or `#`, its user
/// and password at the last `@` in it, whatever characters they hold.
struct StreamURL: Sendable, Equatable {
    /// Lowercased.
    let scheme: String
    /// The host and port as written, without the user and password (`cam.local:8554`, `[::1]`).
    let authority: Substring
    /// What follows the authority (path, query, fragment), as written.
    let rest: Substring
    /// Decoded from the URL's percent-encoding, as FFmpeg decodes them before it sends them; nil without a user.
    let user: String?
    let password: String

    init?(_ text: String) {
        guard let prefix = text.firstMatch(of: /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\//) else { return nil }
        let after = text[prefix.range.upperBound...]
        let end = after.firstIndex { "/?#".contains($0) } ?? after.endIndex
        let at = after[..<end].lastIndex(of: "@")
        let info = at.map { after[..<$0] }
        let colon = info?.firstIndex(of: ":")
        func decoded(_ part: Substring) -> String { String(part).removingPercentEncoding ?? String(part) }
        scheme = String(prefix.output.dropLast(3)).lowercased()
        authority = after[(at.map { after.index(after: $0) } ?? after.startIndex)..<end]
        rest = after[end...]
        user = info.map { decoded($0[..<(colon ?? $0.endIndex)]) }
        password = info.flatMap { info in colon.map { decoded(info[info.index(after: $0)...]) } } ?? ""
    }

    /// The URL without its user and password.
    var plain: String { "\(scheme)://\(authority)\(rest)" }

    /// Whether a relay can stand between FFmpeg and this stream: a user is named, over RTSP or HTTP (not TLS).
    var relayable: Bool { user != nil && (scheme == "rtsp" || scheme == "http") }
}

/// Stands between FFmpeg and a camera whose URL holds a user and password, so that FFmpeg never has them: FFmpeg opens
/// this relay's loopback port with a URL that names no user, and the relay answers the camera's challenges itself
/// (Basic, Digest), only on connections to the host the operator named. A redirect to that host is sent back through
/// the relay; a redirect anywhere else is not passed on, and the open fails saying where it was sent. FFmpeg follows
/// redirects with the credentials it was given (RTSP keeps them, and its Basic answer, for the next host): a check
/// made beside FFmpeg can be told apart from FFmpeg (a 401 first, another User-Agent, a header line split otherwise),
/// this one is in FFmpeg's path.
///
/// Only this user's processes are served (the port is on loopback, where anyone on the box could connect); each
/// connection runs on a thread of its own until either side closes or `close()`. HTTPS and RTSPS cannot be relayed
/// (the relay would have to end TLS): their URLs go to FFmpeg as they are.
final class CredentialRelay: Sendable {
    /// The URL FFmpeg opens: the relay's port, no user or password.
    let local: String
    private let listener: Int32
    private let port: Int
    private let camera: StreamURL
    private let state = Mutex(State())

    private struct State {
        var closed = false
        var sockets: Set<Int32> = []
        /// Why the camera's stream was not passed on (a redirect elsewhere), as people read it.
        var refusal: String?
        /// The challenge last answered, kept for the next connection (a reconnection, a redirect on the same host).
        var authorizer: Authorizer?
    }

    /// Why the stream was not passed on, when it was refused (`redirects to ..., another host: ...`).
    var refusal: String? { state.withLock { $0.refusal } }

    /// A relay for `url` listening on loopback, or nil when the URL has no user and password (or is HTTPS, RTSPS).
    init?(_ url: String) throws(VisionError) {
        guard let camera = StreamURL(url), camera.relayable else { return nil }
        self.camera = camera
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listener = listener
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                bind(listener, $0, length) == 0 && getsockname(listener, $0, &length) == 0 && listen(listener, 8) == 0
            }
        }
        guard listener >= 0, bound else {
            if listener >= 0 { Glibc.close(listener) }
            throw VisionError(
                .open, "cannot listen on loopback for the camera's relay: \(String(cString: strerror(errno)))")
        }
        port = Int(UInt16(bigEndian: address.sin_port))
        local = "\(camera.scheme)://127.0.0.1:\(port)\(camera.rest)"
        Thread.detachNewThread { [self] in accepting() }
    }

    /// Stops listening and ends every connection. Any thread; more than once is harmless.
    func close() {
        let sockets = state.withLock { state in
            state.closed = true
            return state.sockets
        }
        shutdown(listener, Int32(SHUT_RDWR))
        for socket in sockets { shutdown(socket, Int32(SHUT_RDWR)) }
    }

    private func accepting() {
        defer { Glibc.close(listener) }
        while true {
            let client = accept(listener, nil, nil)
            guard client >= 0, register(client) else {
                if client >= 0 { Glibc.close(client) }
                if errno == EINTR || errno == ECONNABORTED { continue }
                return
            }
            Thread.detachNewThread { [self] in
                defer { release(client) }
                guard Self.sameUser(client) else { return }
                serve(client)
            }
        }
    }

    /// Keeps `socket` to be shut down by `close()`; false once closed.
    private func register(_ socket: Int32) -> Bool {
        state.withLock { state in
            guard !state.closed else { return false }
            state.sockets.insert(socket)
            return true
        }
    }

    private func release(_ socket: Int32) {
        state.withLock { _ = $0.sockets.remove(socket) }
        Glibc.close(socket)
    }

    /// One of FFmpeg's connections, relayed to the camera until either side closes.
    private func serve(_ client: Int32) {
        guard let diagnosis = StreamDiagnosis(camera.plain), case .success(let upstream) = diagnosis.connected(),
            register(upstream)
        else { return }
        defer { release(upstream) }
        var rules = RelayRules(
            camera: camera, local: "\(camera.scheme)://127.0.0.1:\(port)",
            authorizer: state.withLock { $0.authorizer }
                ?? Authorizer(user: camera.user ?? "", password: camera.password))
        var fromClient: [UInt8] = []
        var fromCamera: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 65536)
        var fds = [
            pollfd(fd: client, events: Int16(POLLIN), revents: 0),
            pollfd(fd: upstream, events: Int16(POLLIN), revents: 0),
        ]
        while poll(&fds, 2, -1) >= 0 || errno == EINTR {
            for (index, fd) in fds.enumerated() where fd.revents != 0 {
                let count = recv(fd.fd, &buffer, buffer.count, 0)
                guard count > 0 else { return }
                let output: RelayRules.Output
                if index == 0 {
                    fromClient += buffer[0..<count]
                    output = rules.fromClient(&fromClient)
                } else {
                    fromCamera += buffer[0..<count]
                    output = rules.fromCamera(&fromCamera)
                }
                if let refusal = output.refusal {
                    state.withLock { $0.refusal = $0.refusal ?? refusal }
                    return
                }
                guard Self.send(output.toCamera, upstream), Self.send(output.toClient, client) else { return }
                if output.learned { state.withLock { $0.authorizer = rules.authorizer } }
            }
        }
    }

    private static func send(_ bytes: [UInt8], _ socket: Int32) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes {
                Glibc.send(socket, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL))
            }
            guard count > 0 else { return errno == EINTR ? true : false }
            sent += count
        }
        return true
    }

    /// Whether the process at the other end of a loopback connection runs as this process's user (the owner of its
    /// socket in /proc/net/tcp): another user on the box is not let in to the camera with this one's password.
    static func sameUser(_ socket: Int32) -> Bool {
        var peer = sockaddr_in()
        var own = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        func port(
            _ address: inout sockaddr_in,
            _ get: (Int32, UnsafeMutablePointer<sockaddr>, UnsafeMutablePointer<socklen_t>) -> Int32
        ) -> String? {
            length = socklen_t(MemoryLayout<sockaddr_in>.size)
            let found = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { get(socket, $0, &length) == 0 }
            }
            return found ? String(format: "0100007F:%04X", Int(UInt16(bigEndian: address.sin_port))) : nil
        }
        // The peer's socket: its local address is our peer, its remote address us.
        guard let theirs = port(&peer, getpeername), let ours = port(&own, getsockname) else { return false }
        // /proc files state no size: read to the end (a single read gets one page, about 30 connections).
        let file = open("/proc/net/tcp", O_RDONLY | O_CLOEXEC)
        guard file >= 0 else { return false }
        defer { Glibc.close(file) }
        var table: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 65536)
        while case let count = read(file, &chunk, chunk.count), count > 0 { table += chunk[0..<count] }
        // Lines: "sl local_address rem_address st tx:rx tr:when retrnsmt uid ...".
        for line in String(decoding: table, as: UTF8.self).split(separator: "\n").dropFirst() {
            let fields = line.split(separator: " ")
            guard fields.count > 7, fields[1] == theirs, fields[2] == ours else { continue }
            return UInt32(fields[7]) == getuid()
        }
        return false
    }
}

/// What the relay does with each message, as a value: rewrites FFmpeg's requests for the camera (its own address for
/// the camera's, the user's authorization added), answers the camera's 401 by sending the request again authorized,
/// and refuses a redirect to anywhere but the camera. No I/O: tested and fuzzed with bytes.
public struct RelayRules: Sendable {
    let camera: StreamURL
    /// The relay's own address as FFmpeg names it in requests (`rtsp://127.0.0.1:PORT`).
    let local: String
    var authorizer: Authorizer
    /// Requests sent and not yet answered, by their sequence number (HTTP: one, under ""), as FFmpeg wrote them
    /// (rewritten, without authorization), and whether they were already sent again authorized.
    private var pending: [String: (request: Message, retried: Bool)] = [:]
    /// An HTTP answer's body runs to the end of the connection: once its head has passed, everything passes.
    private var passing = false

    init(camera: StreamURL, local: String, authorizer: Authorizer) {
        self.camera = camera
        self.local = local
        self.authorizer = authorizer
    }

    /// The rules for a relay on loopback `port` to the camera `url` names (nil: no user and password, or not RTSP or
    /// HTTP).
    public init?(url: String, port: Int) {
        guard let camera = StreamURL(url), camera.relayable else { return nil }
        self.init(
            camera: camera, local: "\(camera.scheme)://127.0.0.1:\(port)",
            authorizer: Authorizer(user: camera.user ?? "", password: camera.password))
    }

    /// What goes on to each side, after a piece of input.
    public struct Output: Equatable, Sendable {
        public var toCamera: [UInt8] = []
        public var toClient: [UInt8] = []
        /// Set when the stream must end here, with why.
        public var refusal: String?
        /// Set when a challenge was answered (kept for the next connection).
        var learned = false
    }

    /// A message's head and body, split as FFmpeg reads one: lines end at `\n` (a `\r` before it dropped), so that
    /// what the relay decides on is what FFmpeg reads.
    struct Message: Sendable, Equatable {
        var start: String
        var headers: [(name: String, value: String)]
        var body: ArraySlice<UInt8>

        static func == (a: Message, b: Message) -> Bool {
            a.start == b.start && a.body == b.body && a.headers.elementsEqual(b.headers) { $0 == $1 }
        }

        func values(_ name: String) -> [String] {
            headers.filter { $0.name.lowercased() == name }.map(\.value)
        }

        var bytes: [UInt8] {
            Array(([start] + headers.map { "\($0.name): \($0.value)" }).joined(separator: "\r\n").utf8)
                + Array("\r\n\r\n".utf8) + body
        }
    }

    /// The longest head read (a camera's or FFmpeg's); beyond it the connection is ended.
    static let headLimit = 16384

    /// The next piece of `bytes`: an interleaved binary packet (`$`, channel, 16-bit length), a message, nil when more
    /// is needed, or a refusal when what came cannot be a message.
    static func next(in bytes: ArraySlice<UInt8>) -> Result<(message: Message?, length: Int), Refused>? {
        guard let first = bytes.first else { return nil }
        if first == UInt8(ascii: "$") {
            guard bytes.count >= 4 else { return nil }
            let length = 4 + Int(bytes[bytes.startIndex + 2]) << 8 + Int(bytes[bytes.startIndex + 3])
            return bytes.count >= length ? .success((nil, length)) : nil
        }
        // The head ends at an empty line.
        var lines: [Substring] = []
        var lineStart = bytes.startIndex
        var headEnd: Int?
        for index in bytes.indices where bytes[index] == UInt8(ascii: "\n") {
            var line = bytes[lineStart..<index]
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            lineStart = index + 1
            if line.isEmpty {
                if lines.isEmpty { continue }  // blank lines between messages, as FFmpeg skips them
                headEnd = index + 1
                break
            }
            lines.append(Substring(String(decoding: line, as: UTF8.self)))
            if index - bytes.startIndex > headLimit { break }
        }
        guard let headEnd else {
            return bytes.count > headLimit ? .failure(Refused(reason: "a head longer than \(headLimit) bytes")) : nil
        }
        let headers = lines.dropFirst().map { line -> (name: String, value: String) in
            let colon = line.firstIndex(of: ":") ?? line.endIndex
            return (
                String(line[..<colon]),
                String(line[colon...].dropFirst().drop { $0 == " " || $0 == "\t" })
            )
        }
        var message = Message(start: String(lines.first ?? ""), headers: headers, body: [])
        let declared = message.values("content-length").last.map { Int($0.trimmingCharacters(in: .whitespaces)) }
        guard let length = declared ?? 0, (0...(1 << 24)).contains(length) else {
            return .failure(Refused(reason: "a Content-Length that is not a size"))
        }
        let end = headEnd + length - bytes.startIndex
        guard bytes.count >= end else { return nil }
        message.body = bytes[headEnd..<(headEnd + length)]
        return .success((message, end))
    }

    struct Refused: Error, Equatable { let reason: String }

    /// FFmpeg's requests: its own address replaced by the camera's, the user's authorization added when the camera has
    /// asked for it. Consumes what it reads of `bytes`.
    public mutating func fromClient(_ bytes: inout [UInt8]) -> Output {
        var output = Output()
        var offset = 0
        defer { bytes.removeFirst(offset) }
        while let piece = Self.next(in: bytes[offset...]) {
            guard case .success(let (message, length)) = piece else {
                output.refusal = "FFmpeg's request could not be read"
                return output
            }
            defer { offset += length }
            guard var request = message else {
                output.toCamera += bytes[offset..<(offset + length)]
                continue
            }
            let parts = request.start.split(separator: " ", omittingEmptySubsequences: false)
            if parts.count == 3, parts[1].hasPrefix(local) {
                request.start =
                    "\(parts[0]) \(camera.scheme)://\(camera.authority)\(parts[1].dropFirst(local.count)) \(parts[2])"
            }
            request.headers.removeAll { ["authorization", "proxy-authorization"].contains($0.name.lowercased()) }
            if camera.scheme == "http" {
                request.headers = request.headers.map {
                    $0.name.lowercased() == "host" ? ("Host", String(camera.authority)) : $0
                }
            }
            pending[request.values("cseq").first ?? ""] = (request, false)
            output.toCamera += authorized(request).bytes
        }
        return output
    }

    /// The camera's answers and packets, passed on but for a 401 (the request is sent again, authorized, once) and a
    /// redirect (to the camera itself: through the relay; elsewhere: refused). Consumes what it reads of `bytes`.
    public mutating func fromCamera(_ bytes: inout [UInt8]) -> Output {
        var output = Output()
        var offset = 0
        defer { bytes.removeFirst(offset) }
        while offset < bytes.count {
            if passing {
                output.toClient += bytes[offset...]
                offset = bytes.count
                break
            }
            guard let piece = Self.next(in: bytes[offset...]) else { break }
            guard case .success(let (message, length)) = piece else {
                output.refusal = "the camera's answer could not be read"
                return output
            }
            let original = bytes[offset..<(offset + length)]
            defer { offset += length }
            guard var answer = message else {
                output.toClient += original
                continue
            }
            let status = answer.start.split(separator: " ", maxSplits: 2)
            let code = status.count >= 2 ? Int(status[1]) ?? 0 : 0
            let key = answer.values("cseq").first ?? ""
            let asked = pending.removeValue(forKey: key)
            if code == 401, let asked, !asked.retried, authorizer.learn(answer.values("www-authenticate")) {
                output.learned = true
                pending[key] = (asked.request, true)
                output.toCamera += authorized(asked.request).bytes
                continue
            }
            // Every Location line, as FFmpeg splits lines (it follows the last): each the camera's, or refused.
            var moved = false
            if (300..<400).contains(code) {
                for (index, header) in answer.headers.enumerated() where header.name.lowercased() == "location" {
                    switch redirect(to: header.value) {
                    case .success(let local):
                        moved = moved || local != header.value
                        answer.headers[index].value = local
                    case .failure(let refused):
                        output.refusal = refused.reason
                        return output
                    }
                }
            }
            output.toClient += moved ? answer.bytes[...] : original
            // An HTTP answer's body may have no length (a camera's MJPEG): it passes whole, to the end.
            if camera.scheme == "http", code != 100 { passing = true }
        }
        return output
    }

    private mutating func authorized(_ request: Message) -> Message {
        let parts = request.start.split(separator: " ")
        guard parts.count >= 2, let value = authorizer.header(method: String(parts[0]), uri: String(parts[1])) else {
            return request
        }
        var request = request
        request.headers.append(("Authorization", value))
        return request
    }

    /// Where a redirect's Location leads, rewritten to pass through the relay when it is the camera (same scheme, host
    /// and port) or a path on it; refused otherwise, naming where (without any user or password in it).
    func redirect(to location: String) -> Result<String, Refused> {
        let target = location.trimmingCharacters(in: .whitespaces)
        if target.hasPrefix("/") && !target.hasPrefix("//") { return .success(target) }
        let shown = String(LiveEndpoint.forPeople(target).prefix(200)).controlCharactersShown
        let named = StreamDiagnosis(camera.plain)
        if let moved = StreamDiagnosis(target), let named, moved.sameServer(as: named) {
            let rest = target[(target.firstMatch(of: /^[a-zA-Z][a-zA-Z0-9+.-]*:\/\/[^\/?#]*/)?.range.upperBound)!...]
            return .success(local + rest)
        }
        return .failure(
            Refused(
                reason: "redirects to \(shown), another host: not followed, since its user and password would be sent "
                    + "there (give that address in the pipeline file if it is the camera)"))
    }
}

/// The user's answer to a camera's challenge (RFC 7617 Basic, RFC 7616 Digest with MD5, as cameras ask), for the host
/// the operator named only.
struct Authorizer: Sendable, Equatable {
    let user: String
    let password: String
    private var challenge: Challenge?
    private var count = 0

    private enum Challenge: Equatable {
        case basic
        case digest(realm: String, nonce: String, opaque: String?, qop: Bool, session: Bool)
    }

    init(user: String, password: String) {
        self.user = user
        self.password = password
    }

    /// Takes the camera's `WWW-Authenticate` values (Digest over Basic when both are offered); false when none can be
    /// answered (an unknown scheme or algorithm), and the 401 goes to FFmpeg, which then fails.
    mutating func learn(_ values: [String]) -> Bool {
        var offered: Challenge?
        for value in values {
            let scheme = value.prefix { !$0.isWhitespace }.lowercased()
            let parameters = Self.parameters(value.drop { !$0.isWhitespace })
            if scheme == "digest", let realm = parameters["realm"], let nonce = parameters["nonce"] {
                let algorithm = parameters["algorithm"]?.lowercased() ?? "md5"
                guard algorithm == "md5" || algorithm == "md5-sess" else { continue }
                let qop = parameters["qop"]?.split(separator: ",").contains {
                    $0.trimmingCharacters(in: .whitespaces).lowercased() == "auth"
                }
                offered = .digest(
                    realm: realm, nonce: nonce, opaque: parameters["opaque"], qop: qop ?? false,
                    session: algorithm == "md5-sess")
            } else if scheme == "basic", offered == nil {
                offered = .basic
            }
        }
        guard let offered else { return false }
        challenge = offered
        count = 0
        return true
    }

    /// The `Authorization` value for a request, once the camera has asked (`cnonce`: the client's nonce, random
    /// unless a test fixes it).
    mutating func header(
        method: String, uri: String, cnonce: String = String(format: "%016llx", UInt64.random(in: 0...UInt64.max))
    ) -> String? {
        switch challenge {
        case nil: return nil
        case .basic: return "Basic " + Data("\(user):\(password)".utf8).base64EncodedString()
        case .digest(let realm, let nonce, let opaque, let qop, let session):
            count += 1
            let nc = String(format: "%08x", count)
            var secret = Self.md5("\(user):\(realm):\(password)")
            if session { secret = Self.md5("\(secret):\(nonce):\(cnonce)") }
            let operation = Self.md5("\(method):\(uri)")
            let response =
                qop
                ? Self.md5("\(secret):\(nonce):\(nc):\(cnonce):auth:\(operation)")
                : Self.md5("\(secret):\(nonce):\(operation)")
            var fields = [
                "username=\(Self.quoted(user))", "realm=\(Self.quoted(realm))", "nonce=\(Self.quoted(nonce))",
                "uri=\(Self.quoted(uri))", "response=\"\(response)\"",
            ]
            if session { fields.append("algorithm=MD5-sess") }
            if let opaque { fields.append("opaque=\(Self.quoted(opaque))") }
            if qop { fields += ["qop=auth", "nc=\(nc)", "cnonce=\"\(cnonce)\""] }
            return "Digest " + fields.joined(separator: ", ")
        }
    }

    private static func md5(_ text: String) -> String {
        Insecure.MD5.hash(data: Data(text.utf8)).map { String(format: "%02x", $0) }.joined()
    }

    private static func quoted(_ text: String) -> String {
        "\"" + text.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"") + "\""
    }

    /// `key=value, key="quoted, value"` pairs, keys lowercased.
    static func parameters(_ text: Substring) -> [String: String] {
        var result: [String: String] = [:]
        var rest = text[...]
        while true {
            rest = rest.drop { $0 == " " || $0 == "," || $0 == "\t" }
            guard let equals = rest.firstIndex(of: "=") else { return result }
            let key = rest[..<equals].trimmingCharacters(in: .whitespaces).lowercased()
            rest = rest[rest.index(after: equals)...].drop { $0 == " " }
            var value = ""
            if rest.first == "\"" {
                rest = rest.dropFirst()
                var escaped = false
                while let character = rest.first {
                    rest = rest.dropFirst()
                    if escaped {
                        value.append(character)
                        escaped = false
                    } else if character == "\\" {
                        escaped = true
                    } else if character == "\"" {
                        break
                    } else {
                        value.append(character)
                    }
                }
            } else {
                let end = rest.firstIndex(of: ",") ?? rest.endIndex
                value = rest[..<end].trimmingCharacters(in: .whitespaces)
                rest = rest[end...]
            }
            result[key] = value
        }
    }
}
