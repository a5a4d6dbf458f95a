import Foundation
import Synchronization
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A loopback port that plays a camera: it answers each request it reads with what `answer` makes of it (`rounds`
/// requests a connection at most, then it hangs up), and records every byte it receives.
final class AnsweringPort: @unchecked Sendable {
    let listener: Int32
    let port: Int
    private let log = Received()

    /// What every connection sent, shared with the threads that serve them.
    private final class Received: Sendable { let bytes = Mutex(Data()) }

    var received: String { log.bytes.withLock { String(decoding: $0, as: UTF8.self) } }
    func reset() { log.bytes.withLock { $0 = Data() } }

    /// Bound to a free loopback port; answering every connection's first request with `answer` if it is given (else
    /// not listening: a port nothing answers on).
    convenience init(_ answer: Data?) throws {
        guard let answer else {
            try self.init(rounds: 1, answer: nil)
            return
        }
        try self.init(rounds: 1) { _ in answer }
    }

    /// Bound to a free loopback port, listening and answering if `answer` is given.
    init(rounds: Int, answer: (@Sendable (String) -> Data)?) throws {
        listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let listener = listener
        port = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                _ = bind(listener, $0, length)
                _ = getsockname(listener, $0, &length)
                return Int(UInt16(bigEndian: pointer.pointee.sin_port))
            }
        }
        guard let answer else { return }
        try #require(listen(listener, 16) == 0)
        Thread.detachNewThread { [log] in
            while true {
                let client = accept(listener, nil, nil)
                guard client >= 0 else { return }
                Thread.detachNewThread {
                    defer { close(client) }
                    var wait = timeval(tv_sec: 2, tv_usec: 0)
                    setsockopt(client, SOL_SOCKET, SO_RCVTIMEO, &wait, socklen_t(MemoryLayout<timeval>.size))
                    for _ in 0..<rounds {
                        var request = [UInt8](repeating: 0, count: 4096)
                        let count = recv(client, &request, request.count, 0)
                        guard count > 0 else { return }
                        log.bytes.withLock { $0.append(contentsOf: request[0..<count]) }
                        let reply = answer(String(decoding: request[0..<count], as: UTF8.self))
                        _ = reply.withUnsafeBytes { send(client, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
                    }
                }
            }
        }
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
