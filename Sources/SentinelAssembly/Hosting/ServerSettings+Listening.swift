import NIOCore
import NIOPosix
package import SentinelConfig
package import SentinelCore

extension ServerSettings {
    /// Throws unless this process can listen on `host:port` now: a port another program holds (a second `sentinel
    /// run`), one below 1024 without the right, a host that is not this machine's. `sentinel run` and `sentinel fleet`
    /// ask before they open the store or start a source, so an instance that cannot serve changes nothing. Port 0
    /// (any free port) always can.
    package func checkListening() throws(CommandError) {
        guard port != 0 else { return }
        do {
            let channel = try ServerBootstrap(group: MultiThreadedEventLoopGroup.singleton)
                .serverChannelOption(ChannelOptions.socketOption(.so_reuseaddr), value: 1)
                .bind(host: host, port: port).wait()
            try channel.close().wait()
        } catch let error as IOError where error.errnoCode == EADDRINUSE {
            throw CommandError(
                "cannot listen on \(host):\(port): another program holds that port (another sentinel? see "
                    + "`ss -ltnp 'sport = :\(port)'`); choose another with --port or server.port")
        } catch {
            throw CommandError("cannot listen on \(host):\(port): \(error)")
        }
    }
}
