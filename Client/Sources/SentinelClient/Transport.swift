import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// How a `SentinelClient` reaches the box: a request in, its response out as it arrives. REST calls and the event
/// stream both go through it, so an app can hand the client its own (a session with its configuration, a recording
/// for its tests) and see every request the client makes.
public protocol SentinelTransport: Sendable {
    /// The response to `request`: its head first, then its body piece by piece, ending when the body does (or throwing
    /// what failed). Ending the sequence early cancels the request.
    func send(_ request: URLRequest) -> AsyncThrowingStream<TransportPart, any Error>
}

/// A piece of a response, in the order it arrives.
public enum TransportPart: Sendable {
    case head(HTTPURLResponse)
    case body(Data)
}

/// The default transport: one `URLSession` for all the client's requests, REST and stream alike (its connections are
/// reused), read through the session's data delegate: the one streaming API FoundationNetworking on Linux has as well
/// as Apple's Foundation. Copies of a client share it; the session ends with the last of them.
public final class SessionTransport: SentinelTransport {
    private let session: URLSession
    private let receiver: Receiver

    public init(configuration: URLSessionConfiguration = .default) {
        receiver = Receiver()
        session = URLSession(configuration: configuration, delegate: receiver, delegateQueue: nil)
    }

    deinit { session.invalidateAndCancel() }

    public func send(_ request: URLRequest) -> AsyncThrowingStream<TransportPart, any Error> {
        AsyncThrowingStream { continuation in
            let task = session.dataTask(with: request)
            receiver.open(task.taskIdentifier, continuation)
            continuation.onTermination = { _ in task.cancel() }
            task.resume()
        }
    }

    /// The session's delegate: hands each task's callbacks to that task's stream. `@unchecked Sendable` because
    /// URLSession calls it on its own queue while `send` registers tasks from any thread: the lock guards the table
    /// (Synchronization's Mutex needs iOS 18 and macOS 15; the package supports 17 and 14).
    private final class Receiver: NSObject, URLSessionDataDelegate, @unchecked Sendable {
        private let lock = NSLock()
        private var streams: [Int: AsyncThrowingStream<TransportPart, any Error>.Continuation] = [:]

        func open(_ task: Int, _ continuation: AsyncThrowingStream<TransportPart, any Error>.Continuation) {
            lock.withLock { streams[task] = continuation }
        }

        private func stream(_ task: URLSessionTask) -> AsyncThrowingStream<TransportPart, any Error>.Continuation? {
            lock.withLock { streams[task.taskIdentifier] }
        }

        func urlSession(
            _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
            completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
        ) {
            if let response = response as? HTTPURLResponse { stream(dataTask)?.yield(.head(response)) }
            completionHandler(.allow)
        }

        func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
            stream(dataTask)?.yield(.body(data))
        }

        func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
            let continuation = lock.withLock { streams.removeValue(forKey: task.taskIdentifier) }
            continuation?.finish(throwing: error)
        }
    }
}
