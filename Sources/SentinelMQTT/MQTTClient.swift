import CSentinelMQTT
public import Foundation
public import SentinelConfig
public import SentinelCore

/// An MQTT problem, said plainly: a setting that cannot work, a CA file that cannot be used, a message refused.
public struct MQTTError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        case argument, tls, publish, subscribe, other
        public var description: String { rawValue }
    }

    public let code: Code
    public let message: String
    public var underlying: (any Error)? { nil }

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }
}

/// An MQTT 5 client over Debian's libmosquitto (through the `CSentinelMQTT` bridge). Once started it keeps itself
/// connected on a thread of its own, reconnecting with backoff; its owner polls `state`, `takeAcks()` and
/// `takeMessages()`. One owner at a time: it is not `Sendable`.
public final class MQTTClient {
    private let handle: OpaquePointer

    public struct State: Sendable, Equatable {
        public var connected: Bool
        /// Successful connections so far: a change means a new session with the broker.
        public var connects: Int
        /// Failed attempts since the last success.
        public var failures: Int
        /// Why the last attempt failed or the connection dropped (empty while connected).
        public var reason: String
    }

    /// A PUBACK: the id `publish` returned, and whether the broker accepted the message.
    public struct Ack: Sendable, Equatable {
        public var mid: Int32
        public var reason: Int32
        public var accepted: Bool { reason < 0x80 }
    }

    public struct Message: Sendable, Equatable {
        public var topic: String
        public var payload: Data
        /// Its place among the messages this client received, from 1 (see `release(through:)`).
        public var sequence: Int = 0
    }

    /// `cleanStart: false` with a `sessionExpiry` keeps the broker's session (subscriptions, queued messages) across
    /// reconnects and restarts of this client.
    public init(clientID: String, cleanStart: Bool = true, sessionExpiry: UInt32 = 0) throws(MQTTError) {
        var out: OpaquePointer?
        try Self.call { snl_mqtt_create(clientID, cleanStart ? 1 : 0, sessionExpiry, &out, $0) }
        handle = out!
    }

    deinit { snl_mqtt_destroy(handle) }

    /// Disconnects for good; the messages and acknowledgements received before stay to be taken.
    public func stop() { snl_mqtt_stop(handle) }

    public func credentials(username: String, password: String?) throws(MQTTError) {
        try Self.call { snl_mqtt_credentials(handle, username, password, $0) }
    }

    public func tls(caFile: String) throws(MQTTError) {
        try Self.call { snl_mqtt_tls(handle, caFile, $0) }
    }

    /// The message the broker publishes for this client when its connection is lost without a goodbye.
    public func will(topic: String, payload: String, retain: Bool) throws(MQTTError) {
        try Self.call { snl_mqtt_will(handle, topic, payload, 1, retain ? 1 : 0, $0) }
    }

    /// Acknowledges each QoS 1 message received only once `release(through:)` has released it, the broker sending at
    /// most `receiveMaximum` unacknowledged (before `start`): what this client's owner has not made safe comes again
    /// after a crash, from the broker's session.
    public func holdAcknowledgements(receiveMaximum: Int) throws(MQTTError) {
        try Self.call { snl_mqtt_hold_acknowledgements(handle, Int32(receiveMaximum), $0) }
    }

    /// Releases every message received up to `sequence`: they are acknowledged to the broker.
    public func release(through sequence: Int) { snl_mqtt_release(handle, sequence) }

    /// Subscribes at every connection (before `start`).
    public func subscribe(_ topic: String, qos: Int = 1) throws(MQTTError) {
        try Self.call { snl_mqtt_subscribe(handle, topic, Int32(qos), $0) }
    }

    public func start(_ endpoint: MQTTEndpoint, keepalive: Int = 30) throws(MQTTError) {
        try Self.call { snl_mqtt_start(handle, endpoint.host, Int32(endpoint.port), Int32(keepalive), $0) }
    }

    /// Queues a message (sent at once when connected, else at the next connection); returns the id its PUBACK will
    /// carry. `properties` go out as MQTT 5 user properties.
    @discardableResult
    public func publish(
        topic: String, payload: Data, qos: Int = 1, retain: Bool = false, properties: [(String, String)] = []
    ) throws(MQTTError) -> Int32 {
        var mid: Int32 = 0
        let strings = properties.flatMap { [$0.0, $0.1] }
        let pointers = strings.map { strdup($0) }
        defer { for pointer in pointers { free(pointer) } }
        let table = pointers.map { UnsafePointer($0) }
        try Self.call { error in
            table.withUnsafeBufferPointer { table in
                payload.withUnsafeBytes { bytes in
                    snl_mqtt_publish(
                        handle, topic, bytes.baseAddress, Int32(bytes.count), Int32(qos), retain ? 1 : 0,
                        table.baseAddress, Int32(properties.count), &mid, error)
                }
            }
        }
        return mid
    }

    public var state: State {
        var raw = snl_mqtt_state()
        snl_mqtt_get_state(handle, &raw)
        let reason = withUnsafeBytes(of: &raw.reason) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        return State(
            connected: raw.connected != 0, connects: Int(raw.connects), failures: Int(raw.failures), reason: reason)
    }

    /// The acknowledgements received since the last call, in arrival order.
    public func takeAcks() -> [Ack] {
        var acks: [Ack] = []
        var buffer = [snl_mqtt_ack](repeating: snl_mqtt_ack(), count: 256)
        while case let n = snl_mqtt_take_acks(handle, &buffer, Int32(buffer.count)), n > 0 {
            acks += buffer.prefix(Int(n)).map { Ack(mid: $0.mid, reason: $0.reason) }
        }
        return acks
    }

    /// The messages received since the last call, in arrival order.
    public func takeMessages() -> [Message] {
        var messages: [Message] = []
        var buffer = [snl_mqtt_message](repeating: snl_mqtt_message(), count: 256)
        while case let n = snl_mqtt_take_messages(handle, &buffer, Int32(buffer.count)), n > 0 {
            for i in 0..<Int(n) {
                messages.append(
                    Message(
                        topic: String(cString: buffer[i].topic),
                        payload: Data(bytes: buffer[i].payload, count: Int(buffer[i].length)),
                        sequence: buffer[i].sequence))
                snl_mqtt_message_free(&buffer[i])
            }
        }
        return messages
    }

    private static func call(_ body: (UnsafeMutablePointer<snl_mqtt_error>) -> snl_mqtt_status) throws(MQTTError) {
        var error = snl_mqtt_error()
        let status = body(&error)
        guard status != SNL_MQTT_OK else { return }
        let message = withUnsafeBytes(of: &error.message) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        let code: MQTTError.Code =
            switch status {
            case SNL_MQTT_ERR_ARGUMENT: .argument
            case SNL_MQTT_ERR_TLS: .tls
            case SNL_MQTT_ERR_PUBLISH: .publish
            case SNL_MQTT_ERR_SUBSCRIBE: .subscribe
            default: .other
            }
        throw MQTTError(code, message.isEmpty ? "MQTT call failed (\(status.rawValue))" : message)
    }
}
