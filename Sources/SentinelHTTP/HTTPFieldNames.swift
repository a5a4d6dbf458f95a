package import HTTPTypes

/// The header names Sentinel sends or reads beyond those HTTPTypes names itself. Each literal is a valid field name
/// (a token), so the initialiser cannot fail; they are made here once instead of at every use.
extension HTTPField.Name {
    /// SSE resume point a browser's EventSource sends on reconnection.
    package static let lastEventID = Self("Last-Event-ID")!
    /// Tells a reverse proxy (nginx) not to buffer the event stream.
    package static let accelBuffering = Self("X-Accel-Buffering")!
    /// Where a browser says a request comes from (same-origin, same-site, cross-site, none).
    package static let secFetchSite = Self("Sec-Fetch-Site")!
    /// What a browser's request is for (navigate, cors, no-cors, ...).
    package static let secFetchMode = Self("Sec-Fetch-Mode")!
    /// Regions masked in a still or a zone editor frame.
    package static let facesMasked = Self("X-Faces-Masked")!
    /// Media time, in seconds, of the zone editor's frame.
    package static let frameTime = Self("X-Frame-Time")!
}
