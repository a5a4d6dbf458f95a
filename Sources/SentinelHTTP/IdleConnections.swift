import NIOCore
import NIOHTTP1
import Synchronization

/// The open connections of a server that holds at most `limit`: when the last place is taken, the connection idle
/// longest (opened and silent, or between requests) is closed to make room, as nginx reuses its keep-alive
/// connections. One client holding thousands of idle connections kept every other client waiting for a place until
/// its connections timed out (`/healthz` took 7-16 s beside 3,000); now it loses its oldest ones instead. A connection
/// with a request under way or a stream open is never closed so: beyond `limit` of those, a new connection waits to be
/// accepted (`server.maxConnections`).
package final class IdleConnections: Sendable {
    struct Entry {
        let channel: any Channel
        /// Requests read and not yet answered in full (an SSE stream's answer never is).
        var underWay = 0
        var idleSince = NIODeadline.now()
    }

    private let limit: Int
    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])
    /// Told how many connections are open after each change, and of each connection closed to make room (metrics).
    private let opening: @Sendable (Int) -> Void
    private let closedToMakeRoom: @Sendable () -> Void

    package init(
        limit: Int, open: @escaping @Sendable (Int) -> Void, closedToMakeRoom: @escaping @Sendable () -> Void
    ) {
        self.limit = limit
        self.opening = open
        self.closedToMakeRoom = closedToMakeRoom
    }

    func opened(_ channel: any Channel) {
        let key = ObjectIdentifier(channel)
        let (oldest, count) = entries.withLock { entries -> ((any Channel)?, Int) in
            entries[key] = Entry(channel: channel)
            guard entries.count >= limit,
                let oldest = entries.filter({ $0.key != key && $0.value.underWay == 0 })
                    .min(by: { $0.value.idleSince < $1.value.idleSince })
            else { return (nil, entries.count) }
            entries[oldest.key] = nil
            return (oldest.value.channel, entries.count)
        }
        opening(count)
        guard let oldest else { return }
        closedToMakeRoom()
        oldest.close(promise: nil)
    }

    func closed(_ channel: any Channel) {
        opening(
            entries.withLock {
                $0.removeValue(forKey: ObjectIdentifier(channel))
                return $0.count
            })
    }

    func requestBegan(_ channel: any Channel) {
        entries.withLock { $0[ObjectIdentifier(channel)]?.underWay += 1 }
    }

    func requestAnswered(_ channel: any Channel) {
        entries.withLock { entries in
            let key = ObjectIdentifier(channel)
            entries[key]?.underWay -= 1
            entries[key]?.idleSince = .now()
        }
    }

    /// A connection's place in the roster: a request's head makes it busy, the end of its answer idle again.
    final class Tenant: ChannelDuplexHandler, RemovableChannelHandler {
        typealias InboundIn = HTTPServerRequestPart
        typealias OutboundIn = HTTPServerResponsePart

        let roster: IdleConnections
        init(_ roster: IdleConnections) { self.roster = roster }

        func handlerAdded(context: ChannelHandlerContext) { roster.opened(context.channel) }
        func handlerRemoved(context: ChannelHandlerContext) { roster.closed(context.channel) }

        func channelRead(context: ChannelHandlerContext, data: NIOAny) {
            if case .head = unwrapInboundIn(data) { roster.requestBegan(context.channel) }
            context.fireChannelRead(data)
        }

        func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
            if case .end = unwrapOutboundIn(data) { roster.requestAnswered(context.channel) }
            context.write(data, promise: promise)
        }
    }
}
