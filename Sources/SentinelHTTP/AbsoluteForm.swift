package import NIOCore
import NIOHTTP1

/// A request line in absolute form (`GET http://host/path HTTP/1.1`) names its host in the target, and HTTP says a
/// server takes that over `Host` (RFC 9112, 3.2.2). The conversion to HTTP types keeps `Host` and drops the target's
/// authority, so a request could show one host to `KnownHost` and mean another: this handler writes the target's
/// authority into `Host` first, where the request line is still whole.
final class AbsoluteFormAuthority: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPServerRequestPart
    typealias InboundOut = HTTPServerRequestPart

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        guard case .head(var head) = unwrapInboundIn(data), let authority = Self.authority(of: head.uri) else {
            context.fireChannelRead(data)
            return
        }
        head.headers.replaceOrAdd(name: "Host", value: authority)
        context.fireChannelRead(wrapInboundOut(.head(head)))
    }

    /// The authority of an absolute-form target (`http://host:port/path` gives `host:port`), or nil for another form.
    static func authority(of target: String) -> String? {
        // scheme "://": letters first, then letters, digits, + - . (RFC 3986, 3.1).
        guard let colon = target.firstIndex(of: ":"), colon != target.startIndex, target[colon...].hasPrefix("://"),
            target.first!.isLetter,
            target[..<colon].allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+-.".contains($0)) })
        else { return nil }
        let rest = target[target.index(colon, offsetBy: 3)...]
        let authority = rest.prefix { $0 != "/" && $0 != "?" && $0 != "#" }
        // user:password@ is no part of the host.
        return String(authority.split(separator: "@", omittingEmptySubsequences: false).last ?? authority)
    }

}

/// What every Sentinel server puts into its channels.
package enum HTTPServing {
    /// The handlers that make an absolute-form request's target name its host (`AbsoluteFormAuthority`) and, given a
    /// roster, keep the connection's place in it (`IdleConnections`).
    package static func handlers(_ roster: IdleConnections? = nil) -> [any RemovableChannelHandler] {
        [Installer(roster: roster)]
    }

    /// Put into a server's channels through Hummingbird's additional handlers (which come after the conversion to HTTP
    /// types): places the handlers right after the HTTP/1 request decoder, where requests and answers are still
    /// HTTP/1's own, then leaves.
    final class Installer: ChannelInboundHandler, RemovableChannelHandler {
        typealias InboundIn = Any
        let roster: IdleConnections?
        init(roster: IdleConnections?) { self.roster = roster }

        func handlerAdded(context: ChannelHandlerContext) {
            let pipeline = context.pipeline.syncOperations
            do {
                let decoder = try pipeline.handler(type: ByteToMessageHandler<HTTPRequestDecoder>.self)
                try pipeline.addHandler(AbsoluteFormAuthority(), position: .after(decoder))
                if let roster { try pipeline.addHandler(IdleConnections.Tenant(roster), position: .after(decoder)) }
            } catch {
                // No HTTP/1 decoder in this channel: nothing to guard.
            }
            pipeline.removeHandler(context: context, promise: nil)
        }
    }
}
