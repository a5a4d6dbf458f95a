import Foundation
public import SentinelConfig
import SentinelCore

/// Where `sentinel run` and `sentinel fleet` serve and store, as their command lines say it (over the file's
/// settings).
public struct HostingOptions: Sendable {
    /// The SQLite file instead of the file's store (a fleet's too, instead of its PostgreSQL server).
    public var databasePath: String?
    public var host: String?
    public var port: Int?
    public init() {}
}

/// What serving needs of this machine, whoever serves: access tokens, the store's folder and group, open files,
/// the port.
public enum Hosting {
    /// What serving needs of this machine, for `sentinel run` and `sentinel fleet` alike: the access tokens (required
    /// beyond loopback, one per scope), the store's folder and group, and the open-file limit. Returns the tokens;
    /// adds every problem found.
    public static func checks(
        file: String, server: ServerSettings, database: String, group: String?, groupLocation: ConfigProblem?,
        problems: inout [ConfigProblem]
    ) -> AccessTokens {
        func problem(_ path: String, _ message: String) {
            problems.append(ConfigProblem(file: file, path: path, message: message))
        }
        var tokens = AccessTokens()
        do {
            tokens.visitors = try AccessToken.load(file: server.tokenFile, environment: server.tokenEnvironment)
        } catch { problem("server.tokenFile", error.description) }
        do {
            tokens.aggregates = try AccessToken.load(
                file: server.aggregateTokenFile, environment: server.aggregateTokenEnvironment,
                key: "server.aggregateTokenFile")
        } catch { problem("server.aggregateTokenFile", error.description) }
        if !server.isLoopback, tokens.isEmpty {
            problem(
                "server.host",
                "\(server.host) accepts connections from other machines, so a bearer token is required: set "
                    + "server.tokenFile or the environment variable \(server.tokenEnvironment)")
        }
        if tokens.visitors != nil, tokens.visitors == tokens.aggregates {
            problem(
                "server.aggregateTokenFile", "the visitor and aggregate tokens are the same: each scope needs its own")
        }
        if let group, getgrnam(group) == nil {
            var located = groupLocation ?? ConfigProblem(file: file, path: "store.group", message: "")
            located.message = "no such group \(group) on this machine (see getent group)"
            problems.append(located)
        }
        if let folder = nearestFolder(of: database), !FileManager.default.isWritableFile(atPath: folder) {
            problem("store.path", "cannot write the database \(database): \(folder) is not writable by this user")
        }
        do { try reserveDescriptors(for: server) } catch { problem("server.maxConnections", error.description) }
        return tokens
    }

    /// The database file if it exists, else the nearest folder above it that does (where it would be made).
    private static func nearestFolder(of path: String) -> String? {
        var url = URL(fileURLWithPath: path)
        while !FileManager.default.fileExists(atPath: url.path) {
            let parent = url.deletingLastPathComponent()
            guard parent.path != url.path else { return nil }
            url = parent
        }
        return url.path
    }

    /// Raises the open-file limit (the soft limit is often 1,024) so that `server.maxConnections` connections fit
    /// beside the store, the cameras and the models; fails, naming the setting, when the hard limit cannot.
    static func reserveDescriptors(for server: ServerSettings) throws(CommandError) {
        let needed = rlim_t(server.maxConnections + 256)
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur < needed else { return }
        guard limit.rlim_max >= needed else {
            throw CommandError(
                "\(server.maxConnections) connections need \(needed) open files, but this process may open at most "
                    + "\(limit.rlim_max) (ulimit -Hn; LimitNOFILE= under systemd): lower it or raise the limit")
        }
        limit.rlim_cur = needed
        setrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit)
    }
}
