import Foundation
package import HTTPTypes
import Hummingbird
package import HummingbirdCore
import Logging
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import ServiceLifecycle

/// JSON responses and errors.
package enum APIResponse {
    static func json(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    package static func encode(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        json(try JSONEncoder.sentinel().encode(value), status: status)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        json((try? JSONEncoder.sentinel().encode(APIErrorBody(error: message))) ?? Data(), status: status)
    }

    /// A JSON object from values that are JSON already (stored records and readings are kept as the API publishes
    /// them, so they are sent as they are rather than decoded and encoded again). Keys are given in sorted order,
    /// as the encoder writes every other response.
    static func object(_ fields: [(String, Data)]) -> Response {
        var body = Data("{".utf8)
        for (i, (key, value)) in fields.enumerated() {
            body += Data("\(i == 0 ? "" : ",")\"\(key)\":".utf8) + value
        }
        return json(body + Data("}".utf8))
    }

    /// A JSON array of values that are JSON already.
    static func array(_ values: [Data]) -> Data {
        Data("[".utf8) + Data(values.joined(separator: Data(",".utf8))) + Data("]".utf8)
    }
}
