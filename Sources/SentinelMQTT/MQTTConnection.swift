import Foundation
package import SentinelConfig
import SentinelCore
import SentinelRuntime

extension MQTTConnection {
    /// The username and password, from the credentials file or the environment (nil: anonymous); `section` names
    /// the file's setting in messages.
    func credentials(section: String) throws(CommandError) -> (username: String, password: String)? {
        if let line = try AccessToken.load(
            file: credentialsFile, environment: "", key: "\(section).credentialsFile", minimumLength: 1)
        {
            guard let colon = line.firstIndex(of: ":") else {
                throw CommandError("the credentials file \(credentialsFile ?? "") must hold one line username:password")
            }
            return (String(line[..<colon]), String(line[line.index(after: colon)...]))
        }
        let environment = ProcessInfo.processInfo.environment
        guard let username = environment[usernameEnvironment], !username.isEmpty else { return nil }
        return (username, environment[passwordEnvironment] ?? "")
    }

    /// What `sentinel check` and start-up find wrong with the credentials and the CA file, as (setting, message).
    package func problems(section: String) -> [(path: String, message: String)] {
        var problems: [(String, String)] = []
        do { _ = try credentials(section: section) } catch {
            problems.append(("\(section).credentialsFile", error.description))
        }
        if let ca = caFile, !FileManager.default.isReadableFile(atPath: ca) {
            problems.append(("\(section).caFile", "cannot read the CA file \(ca)"))
        }
        return problems
    }

    /// A client with these credentials and CA, not started yet (a caller adds its will and subscriptions first).
    package func client(cleanStart: Bool = true, sessionExpiry: UInt32 = 0, section: String) throws -> MQTTClient {
        let client = try MQTTClient(clientID: clientId, cleanStart: cleanStart, sessionExpiry: sessionExpiry)
        if let credentials = try credentials(section: section) {
            try client.credentials(username: credentials.username, password: credentials.password)
        }
        if try endpoint.tls, let ca = caFile { try client.tls(caFile: ca) }
        return client
    }

    /// Where the broker listens (`read` refused a URL that names none, so this throws only for a connection made in
    /// code with a bad URL).
    package var endpoint: MQTTEndpoint {
        get throws {
            guard let endpoint = MQTTEndpoint(url: url) else {
                throw CommandError("\"\(url)\" is not a broker URL such as mqtt://broker.local:1883")
            }
            return endpoint
        }
    }
}
