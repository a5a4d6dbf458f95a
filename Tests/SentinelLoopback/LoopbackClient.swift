public import Foundation
public import NIOCore
import NIOHTTP1
import NIOPosix
import Synchronization

/// A minimal HTTP/1.1 client over SwiftNIO, for the SSE fan-out bench and the tests: one GET per connection, the body
/// handed over chunk by chunk as it arrives, so a stream can be read, and dropped, mid-way.
public enum LoopbackClient {
    public struct Head: Sendable {
        public var status: Int
        public var headers: [(String, String)]
        public func header(_ name: String) -> String? { headers.first { $0.0.lowercased() == name.lowercased() }?.1 }

        public init(status: Int, headers: [(String, String)]) {
            self.status = status
            self.headers = headers
        }
    }

    /// The connection was closed because `timeout` passed.
    public struct TimedOut: Error, CustomStringConvertible {
        public let timeout: TimeAmount
        public var description: String { "no end of the response within \(timeout.nanoseconds / 1_000_000) ms" }
    }

    /// GETs `path` (POSTs `body` to it, if given), calling `onChunk` with each piece of the response's body until it
    /// returns false, the body ends, or `timeout` passes (the connection is then closed and `TimedOut` thrown: a
    /// stream that never ends cannot hang its reader).
    public static func get(
        host: String = "127.0.0.1", port: Int, path: String, headers: [(String, String)] = [], body: Data? = nil,
        timeout: TimeAmount = .seconds(60),
        onHead: (Head) async throws -> Void = { _ in }, onChunk: (ByteBuffer) async throws -> Bool
    ) async throws {
        let channel = try await ClientBootstrap(group: MultiThreadedEventLoopGroup.singleton)
            .connect(host: host, port: port) { channel in
                channel.eventLoop.makeCompletedFuture {
                    try channel.pipeline.syncOperations.addHTTPClientHandlers()
                    return try NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>(
                        wrappingChannelSynchronously: channel)
                }
            }
        let underlying = channel.channel
        let expired = Expiry()
        let deadline = underlying.eventLoop.scheduleTask(in: timeout) {
            expired.fired.withLock { $0 = true }
            underlying.close(promise: nil)
        }
        defer { deadline.cancel() }
        do {
            try await exchange(
                channel, host: host, port: port, path: path, headers: headers, body: body, onHead: onHead,
                onChunk: onChunk)
        } catch  where expired.fired.withLock({ $0 }) {
            throw TimedOut(timeout: timeout)
        }
    }

    private final class Expiry: Sendable {
        let fired = Mutex(false)
    }

    private static func exchange(
        _ channel: NIOAsyncChannel<HTTPClientResponsePart, HTTPClientRequestPart>, host: String, port: Int,
        path: String, headers: [(String, String)], body: Data?, onHead: (Head) async throws -> Void,
        onChunk: (ByteBuffer) async throws -> Bool
    ) async throws {
        try await channel.executeThenClose { inbound, outbound in
            var fields = HTTPHeaders([("Host", "\(host):\(port)")])
            for (name, value) in headers { fields.add(name: name, value: value) }
            if let body { fields.add(name: "Content-Length", value: "\(body.count)") }
            try await outbound.write(
                .head(
                    HTTPRequestHead(version: .http1_1, method: body == nil ? .GET : .POST, uri: path, headers: fields)))
            if let body { try await outbound.write(.body(.byteBuffer(ByteBuffer(bytes: body)))) }
            try await outbound.write(.end(nil))
            for try await part in inbound {
                switch part {
                case .head(let head):
                    try await onHead(
                        Head(status: Int(head.status.code), headers: head.headers.map { ($0.name, $0.value) }))
                case .body(let buffer):
                    if try await !onChunk(buffer) { return }
                case .end:
                    return
                }
            }
        }
    }

    /// GETs `path` (POSTs `body` to it, if given) and returns the status, headers and whole body of the response.
    public static func fetch(
        host: String = "127.0.0.1", port: Int, path: String, headers: [(String, String)] = [], body: Data? = nil,
        timeoutSeconds: Int64 = 30
    ) async throws -> (Head, Data) {
        var head = Head(status: 0, headers: [])
        var received = Data()
        try await get(
            host: host, port: port, path: path, headers: headers, body: body, timeout: .seconds(timeoutSeconds),
            onHead: { head = $0 },
            onChunk: { chunk in
                received.append(contentsOf: chunk.readableBytesView)
                return true
            })
        return (head, received)
    }
}
