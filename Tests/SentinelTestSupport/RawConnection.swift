public import Foundation

#if canImport(Glibc)
    import Glibc
#endif

/// A plain TCP connection to a loopback port, for what an HTTP client library will not send: half a request, bytes
/// that are not HTTP, a connection that says nothing at all.
public final class RawConnection: Sendable {
    private let descriptor: Int32

    public init(port: Int) throws {
        descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw RawConnectionError("socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let code = errno
            close(descriptor)
            throw RawConnectionError("connect to port \(port): errno \(code)")
        }
    }

    deinit { close(descriptor) }

    /// Sends `bytes`; false when the server has already closed the connection.
    @discardableResult
    public func send(_ bytes: Data) -> Bool {
        bytes.withUnsafeBytes { buffer in
            Glibc.send(descriptor, buffer.baseAddress, buffer.count, Int32(MSG_NOSIGNAL)) == buffer.count
        }
    }

    @discardableResult
    public func send(_ text: String) -> Bool { send(Data(text.utf8)) }

    /// `receive(seconds:until:)` on a thread of its own, so waiting never holds one of the test run's few task
    /// threads.
    public func received(seconds: Double, until enough: @escaping @Sendable (Data) -> Bool = { _ in false }) async -> (
        data: Data, closed: Bool
    ) {
        await Fixtures.onOwnThread { self.receive(seconds: seconds, until: enough) }
    }

    /// Reads until the server closes the connection, `seconds` pass, or what was read is `enough`; `closed` says
    /// whether the server closed it.
    public func receive(seconds: Double, until enough: (Data) -> Bool = { _ in false }) -> (data: Data, closed: Bool) {
        var data = Data()
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 65_536)
        while true {
            let left = deadline.timeIntervalSinceNow
            guard left > 0, !enough(data) else { return (data, false) }
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            guard poll(&poller, 1, Int32(left * 1_000) + 1) > 0 else { continue }
            let count = recv(descriptor, &buffer, buffer.count, 0)
            if count <= 0 { return (data, true) }
            data.append(contentsOf: buffer[0..<count])
        }
    }
}

extension RawConnection {
    /// Sends one request and reads its answer's status line and head (and what of the body came with it), waiting at
    /// most `seconds` for the server to answer.
    public static func exchange(port: Int, _ request: String, seconds: Double = 20) async throws -> (
        status: Int, text: String
    ) {
        let connection = try RawConnection(port: port)
        connection.send(Data(request.utf8))
        var received = Data()
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            let (data, closed) = await connection.received(seconds: 0.2)
            received += data
            let text = String(decoding: received, as: UTF8.self)
            if closed || (text.contains("\r\n\r\n") && text.contains("}")) { break }
        }
        let text = String(decoding: received, as: UTF8.self)
        return (text.split(separator: " ", maxSplits: 2).dropFirst().first.flatMap { Int($0) } ?? 0, text)
    }
}

public struct RawConnectionError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
