/// Why an event from outside this process was refused: the field and what was wrong with it, never its value (a
/// hostile value must not reach a log line).
public struct InvalidEvent: Error, Sendable, Equatable, CustomStringConvertible {
    /// The kinds of refusal, counted apart in `/healthz` and `/metrics`.
    public enum Reason: String, Sendable, Codable, CodingKeyRepresentable, CaseIterable {
        /// Not JSON of the envelope's shape, a type Sentinel does not know, or too large to be a site's.
        case format
        /// Topic, site, source, type or id of the envelope disagree.
        case topic
        /// A log id outside the window the site's last one makes plausible.
        case id
        /// A number that is not finite or out of its field's range.
        case number
        /// A dwell longer than the span it is measured over, or times out of order.
        case time
        /// A faceId that is not a pseudonym.
        case faceId
        /// A source, zone or site name that breaks the name rule.
        case name
        /// A site the fleet does not take messages from (not allowed, and no more to learn).
        case site
        /// A camera or zone beyond what a fleet takes of one site (`sites.cameras`, `sites.zones`).
        case limit
    }

    public var reason: Reason
    public var field: String
    public var problem: String

    public init(_ reason: Reason, _ field: String, _ problem: String) {
        self.reason = reason
        self.field = field
        self.problem = problem
    }

    public var description: String { field.isEmpty ? problem : "\(field): \(problem)" }
}
