import Foundation
package import HTTPTypes
import Hummingbird
package import HummingbirdCore
import Logging
import SentinelCore
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import SentinelWire
import ServiceLifecycle

/// JSON responses and errors.
package enum APIResponse {
    static func json(_ data: Data, status: HTTPResponse.Status = .ok) -> Response {
        json(ByteBuffer(bytes: data), status: status)
    }

    static func json(_ body: ByteBuffer, status: HTTPResponse.Status = .ok) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: body))
    }

    package static func encode(_ value: some Encodable, status: HTTPResponse.Status = .ok) throws -> Response {
        json(try JSONEncoder.sentinel().encode(value), status: status)
    }

    static func error(_ status: HTTPResponse.Status, _ message: String) -> Response {
        // JSONEncoder throws only for a number JSON cannot hold: an object of one string always encodes.
        do { return json(try JSONEncoder.sentinel().encode(APIErrorBody(error: message)), status: status) } catch {
            preconditionFailure("an error body did not encode: \(error)")
        }
    }

    /// A JSON object from values that are JSON already (stored records and readings are kept as the API publishes
    /// them, so they are sent as they are rather than decoded and encoded again). Keys are given in sorted order,
    /// as the encoder writes every other response.
    static func object(_ fields: [(String, Data)]) -> Response {
        var body = ByteBuffer()
        body.reserveCapacity(fields.reduce(2) { $0 + $1.0.utf8.count + 4 + $1.1.count })
        body.writeStaticString("{")
        for (i, (key, value)) in fields.enumerated() {
            body.writeString("\(i == 0 ? "" : ",")\"\(key)\":")
            body.writeBytes(value)
        }
        body.writeStaticString("}")
        return json(body)
    }

    /// A JSON array of values that are JSON already. Appended a value at a time: joining them as a sequence of
    /// bytes cost 40 ms for an hour of a busy showroom's gauge readings (1,000 of 1.1 KB).
    static func array(_ values: [Data]) -> Data {
        var array = Data(capacity: values.reduce(2) { $0 + $1.count + 1 })
        array.append(UInt8(ascii: "["))
        for (i, value) in values.enumerated() {
            if i > 0 { array.append(UInt8(ascii: ",")) }
            array.append(value)
        }
        array.append(UInt8(ascii: "]"))
        return array
    }
}
