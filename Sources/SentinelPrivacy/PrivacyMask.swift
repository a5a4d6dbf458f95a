public import Foundation
import SentinelCore
public import SentinelWire

/// An event that has passed the privacy mask for one output, and its JSON. Only the mask makes these, so an
/// output that takes a `MaskedEvent` cannot be handed an unmasked one.
public struct MaskedEvent: Sendable {
    public let output: PrivacyPolicy.Output
    public let event: VisitorEvent
    /// The event as Sentinel's JSON (sorted keys, ISO-8601 dates).
    public let json: Data

    /// What a log line may say about the event: the pseudonym, the type and the zone, nothing else.
    public var logMetadata: [String: String] {
        var metadata = [
            "face.id": event.visitor.faceId, "event.type": event.type.rawValue, "source.id": event.visitor.sourceId,
        ]
        if let zone = event.stay?.zone ?? event.visitor.zone { metadata["zone.id"] = zone }
        return metadata
    }
}

/// A visitor event as it leaves the mask: the store's copy, and the published copy made from it (what the event log,
/// SSE and MQTT carry), which never holds more than either allowlist lets through, so a stream read back from the
/// store is the stream that was sent. The mask makes both; the policy makes them for an event no mask saw (a visit a
/// crash left open, an event another box forwarded). Nothing else makes a published copy.
public struct Masked: Sendable {
    public let stored: MaskedEvent
    public let published: MaskedEvent
    /// The store's copy before its times were coarsened: what a run's own figures are measured on in the process
    /// (replay's summary), so that they depend on the recording, not on where its media time falls on the clock.
    /// No output reads it.
    public let exact: VisitorEvent

    init(stored event: VisitorEvent, exact: VisitorEvent? = nil, policy: PrivacyPolicy) {
        self.exact = exact ?? event
        stored = MaskedEvent(output: .store, event: event, json: Self.json(event))
        var copy = event
        policy.filter(&copy, for: .events)
        published = MaskedEvent(output: .events, event: copy, json: Self.json(copy))
    }

    /// Encoding fails only on a number that is not finite, and none is made: the visitor stage takes no detection
    /// or emotion reading with one, and events from elsewhere pass `EventCheck`. Were one made all the same, this
    /// stops loudly rather than store and publish an event with no content.
    static func json(_ event: VisitorEvent) -> Data {
        do { return try JSONEncoder.sentinel().encode(event) } catch {
            preconditionFailure("a \(event.type.rawValue) event with a number JSON cannot carry: \(error)")
        }
    }
}

/// The stage between the visitor records and every output: replaces internal ids with rotating pseudonyms,
/// keeps only the fields each output allows, and coarsens published times.
///
/// A visit keeps the pseudonym of the key period it was first masked in, so its events stay together across a
/// rotation; the next visit of the same person is a new visit with a new id anyway (no biometric template is
/// kept to link them).
public struct PrivacyMask: Sendable {
    public let policy: PrivacyPolicy
    private let keys: PseudonymKeyRing
    /// The key period of each open visit, by internal id.
    private var periods: [String: Int64] = [:]

    public init(policy: PrivacyPolicy, keys: PseudonymKeyRing) {
        self.policy = policy
        self.keys = keys
    }

    /// The event as the store and the published outputs may see it. A `visitor.exited` event closes the visit's
    /// pseudonym.
    public mutating func mask(_ event: VisitorEvent) throws(PrivacyError) -> Masked {
        var copy = event
        copy.visitor.faceId = try pseudonym(of: event.visitor.faceId)
        policy.filter(&copy, for: .store)
        let exact = copy
        policy.coarsen(&copy)
        if event.type == .exited {
            periods[event.visitor.faceId] = nil
            keys.forget(keeping: Set(periods.values))
        }
        return Masked(stored: copy, exact: exact, policy: policy)
    }

    /// The published id of an internal visit id: base32 of the first 80 bits of its HMAC-SHA256 under the key of
    /// the period the visit began in.
    public mutating func pseudonym(of internalID: String) throws(PrivacyError) -> String {
        let period: Int64
        if let known = periods[internalID] {
            period = known
        } else {
            period = try keys.currentEpoch()
            periods[internalID] = period
        }
        guard let code = keys.authenticate(internalID, epoch: period) else {
            // Only reachable if a key were forgotten while its visit is open, which `forget` prevents.
            preconditionFailure("pseudonym key of an open visit was forgotten")
        }
        return Base32.encode(code.prefix(10))
    }

}

extension PrivacyPolicy {
    /// A published time: rounded down to the policy's resolution.
    public func coarsen(_ date: Date) -> Date { date.roundedDown(toMultipleOf: timestampResolution) }

    /// Every time of an event, coarsened; every duration to the millisecond.
    func coarsen(_ event: inout VisitorEvent) {
        event.time = coarsen(event.time)
        event.visitor.firstSeen = event.visitor.firstSeen.map(coarsen)
        event.visitor.lastSeen = event.visitor.lastSeen.map(coarsen)
        event.visitor.dwellSeconds = event.visitor.dwellSeconds.map(\.wholeMilliseconds)
        event.visitor.zones = event.visitor.zones?.map { zone in
            var zone = zone
            zone.dwellSeconds = zone.dwellSeconds.wholeMilliseconds
            return zone
        }
        if var stay = event.stay {
            stay.enteredAt = coarsen(stay.enteredAt)
            stay.exitedAt = stay.exitedAt.map(coarsen)
            stay.dwellSeconds = stay.dwellSeconds.map(\.wholeMilliseconds)
            event.stay = stay
        }
    }

    /// The `visitor.exited` event, reason `interrupted`, of a visit a crash left open. `record` is the store's copy
    /// of the visitor, masked when it was written; it is filtered by the store's allowlist again, so nothing passes
    /// that the mask would not let through. The visit ends when it was last seen.
    public func interruptedExit(of record: VisitorRecord) -> Masked {
        var event = VisitorEvent(type: .exited, time: coarsen(record.lastSeen ?? Date()), visitor: record)
        event.visitor.state = .exited
        event.reason = .interrupted
        filter(&event, for: .store)
        return Masked(stored: event, policy: self)
    }

    /// A published event read back from the event log (a replica of a fleet follows what the others logged), made
    /// published again by this policy: a row holding more than the events allowlist lets through is cut as the mask
    /// would cut it.
    package func logged(_ json: Data) throws -> MaskedEvent {
        var event = try JSONDecoder.sentinel().decode(VisitorEvent.self, from: json)
        filter(&event, for: .events)
        return MaskedEvent(output: .events, event: event, json: Masked.json(event))
    }

    /// The store's copy of an event another box masked and forwarded (`sentinel fleet`): reduced to what this
    /// policy's store allowlist keeps and coarsened to its resolution, so a fleet never holds more than its own
    /// policy allows, whatever a site sends.
    public func forwarded(_ event: VisitorEvent) -> Masked {
        var copy = event
        filter(&copy, for: .store)
        coarsen(&copy)
        return Masked(stored: copy, policy: self)
    }

    /// The fields `output` may carry: its allowlist, within what the output it is cut from carries.
    func allowed(for output: Output) -> Set<PublishedField> {
        let own = outputs[output] ?? PublishedField.defaults
        return output.cutFrom.map { own.intersection(allowed(for: $0)) } ?? own
    }

    /// A visitor event of the event log (its JSON, as the `events` output published it) as `output` may send it;
    /// the same bytes when that output allows everything the log holds. A payload that is not a visitor event is an
    /// error, never forwarded unread.
    public func narrowed(_ payload: Data, for output: Output) throws -> Data {
        guard !allowed(for: output).isSuperset(of: allowed(for: .events)) else { return payload }
        var event = try JSONDecoder.sentinel().decode(VisitorEvent.self, from: payload)
        filter(&event, for: output)
        return try JSONEncoder.sentinel().encode(event)
    }

    /// Removes the fields `output` may not carry.
    func filter(_ event: inout VisitorEvent, for output: Output) {
        let allowed = allowed(for: output)
        func keep(_ field: PublishedField) -> Bool { allowed.contains(field) }
        if !keep(.stay) { event.stay = nil }
        if !keep(.reason) { event.reason = nil }
        if !keep(.mediaTime) { event.mediaTime = nil }
        if !keep(.zones) { event.visitor.zones = nil }
        if !keep(.dwellSeconds) { event.visitor.dwellSeconds = nil }
        if !keep(.firstSeen) { event.visitor.firstSeen = nil }
        if !keep(.lastSeen) { event.visitor.lastSeen = nil }
        if !keep(.emotion) { event.visitor.emotion = nil }
        if !keep(.emotionConfidence) { event.visitor.emotionConfidence = nil }
        if !keep(.valence) { event.visitor.valence = nil }
        if !keep(.emotionDistribution) { event.visitor.emotionDistribution = nil }
        if !keep(.box) { event.visitor.box = nil }
        if !keep(.detectionScore) { event.visitor.detectionScore = nil }
    }
}

/// RFC 4648 base32 in lower case without padding: compact, URL-safe and unambiguous to read aloud.
enum Base32 {
    private static let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")

    static func encode(_ bytes: some Collection<UInt8>) -> String {
        var text = ""
        var buffer = 0
        var bits = 0
        for byte in bytes {
            buffer = (buffer << 8) | Int(byte)
            bits += 8
            while bits >= 5 {
                text.append(alphabet[(buffer >> (bits - 5)) & 31])
                bits -= 5
            }
        }
        if bits > 0 { text.append(alphabet[(buffer << (5 - bits)) & 31]) }
        return text
    }
}
