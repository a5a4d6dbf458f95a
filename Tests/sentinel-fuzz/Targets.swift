import Foundation
import HummingbirdCore
import SentinelConfig
import SentinelCore
import SentinelEval
import SentinelHTTP
import SentinelRuntime
import SentinelTuning
import SentinelVision
import SentinelWire

/// Every parser of outside input, as a fuzz target: bytes in, any outcome but a crash, a hang or unbounded memory.
/// Each target names the corpus folders its seeds come from (`Tests/Corpus/...` and the shipped files); a case a
/// fuzzer finds goes into those folders, with its expected outcome, and stays there.
enum FuzzTarget: String, CaseIterable {
    /// ISO-8601 dates: REST query parameters, MQTT envelopes, label and event files.
    case dates
    /// MOT Challenge text, CVAT XML, Label Studio JSON, Sentinel's truth JSON (`eval`, `tune`).
    case mot, cvat, labelstudio, truth
    /// A site's visitor event or gauge reading, as the fleet decodes and checks it (`EventCheck`).
    case event
    /// A CSV or Label Studio export of labelled photos (`eval emotion --labels`).
    case emotionlabels
    /// An emotion head's file (`emotion.head`, Models/models.yml): refused with its problem shown, or read back as
    /// written.
    case emotionhead
    /// A pipeline file, with a `--set` taken from its first line; a fleet file; a tuning space.
    case pipeline, fleet, space
    /// A request's target (`/api/reports?from=...`) as the API reads its query: every endpoint's parameters and dates,
    /// and the event stream's filter (`/events?site=...&zone=...`), which keeps only what a fleet's catalogue has; and
    /// its Host, as the servers read it (`HostName`).
    case query
    /// A `Last-Event-ID` (header or `lastEventId`) echoed in the stream's reset notice, and any text the stream quotes:
    /// the message must stay one event (no line break gets through) and read back as the text sent.
    case sse
    /// A camera's first answer to `sentinel check --probe` (RTSP DESCRIBE, HTTP GET): said in words, and no control
    /// character of it reaches the terminal; the same bytes through the credential relay (`RelayRules`) both ways.
    case camera
    /// An image file's header, read for its size before anything is decoded (`ImageHeader`): stills, photo folders.
    case imageheader

    /// Where its seeds are: folders (every file in them) or files, relative to the repository, and the extensions
    /// taken from folders (none: all).
    var seeds: (paths: [String], extensions: Set<String>) {
        switch self {
        case .dates: (["Tests/Corpus/dates"], [])
        case .mot: (["Tests/Corpus/labels"], ["txt"])
        case .cvat: (["Tests/Corpus/labels"], ["xml"])
        case .labelstudio, .truth: (["Tests/Corpus/labels"], ["json"])
        case .event: (["Tests/Corpus/mqtt"], ["json"])
        case .emotionlabels: (["Tests/Corpus/emotion"], ["csv", "json"])
        case .emotionhead: (["Tests/Corpus/heads", "Models/emotion-head.json"], ["json"])
        case .pipeline: (["Tests/Corpus/pipelines", "Pipelines/showroom.yml"], ["yml"])
        case .fleet: (["Tests/Corpus/fleets", "Pipelines/fleet.yml"], ["yml"])
        case .space: (["Tests/Corpus/spaces"], ["yml"])
        case .query, .sse: (["Tests/Corpus/http"], ["http"])
        case .camera: (["Tests/Corpus/cameras"], ["txt"])
        case .imageheader: (["Tests/Corpus/images"], [])
        }
    }

    /// Reads `bytes` as this target's input; every error is an expected outcome.
    func run(_ bytes: [UInt8]) {
        let data = Data(bytes)
        switch self {
        case .dates:
            _ = ISO8601.date(from: String(decoding: bytes, as: UTF8.self))
        case .mot, .cvat, .labelstudio, .truth:
            let format: TrackFile.Format = [.mot: .mot, .cvat: .cvat, .labelstudio: .labelStudio][self] ?? .sentinel
            _ = try? TrackFile.parse(data, format: format, path: "fuzz")
            // And bounded by a video, which takes other paths (the size check, a project's task by name).
            _ = try? TrackFile.parse(
                data, format: format, path: "fuzz",
                video: VideoBounds(frames: 100, width: 64, height: 48, name: "a.mp4"))
        case .event:
            let check = EventCheck(timeResolution: 1)
            let decoder = JSONDecoder.sentinel()
            if let event = try? decoder.decode(Envelope<VisitorEvent>.self, from: data) {
                try? check.validate(event.payload)
            }
            if let reading = try? decoder.decode(Envelope<GaugeReading>.self, from: data) {
                try? check.validate(reading.payload)
            }
        case .emotionlabels:
            _ = try? EmotionLabels.rows(data, file: "fuzz") { $0.hasPrefix("a") }
        case .emotionhead:
            do {
                let head = try EmotionHead.read(data, file: "fuzz.json")
                guard let again = try? EmotionHead.read(head.json(), file: "fuzz.json"),
                    again.json() == head.json()
                else { fatalError("a head read does not read back as written: \(head.json().count) bytes") }
            } catch {
                guard !error.description.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
                else { fatalError("a head's refusal reached the terminal raw: \(error.description.debugDescription)") }
            }
        case .imageheader:
            if let size = try? ImageHeader.size(read: { offset, count in
                Array(bytes.dropFirst(offset).prefix(count))
            }) {
                guard size.width > 0, size.height > 0, size.width * size.height <= ImageHeader.maxPixels else {
                    fatalError("a header's size passed out of bounds: \(size)")
                }
            }
        case .pipeline:
            let text = String(decoding: bytes, as: UTF8.self)
            let lines = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
            let overrides = lines.first.flatMap { try? ConfigOverride(String($0)) }.map { [$0] } ?? []
            _ = try? PipelineDefinition.parse(text, file: "fuzz.yml", overrides: overrides)
        case .fleet:
            _ = try? FleetDefinition.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.yml")
        case .space:
            _ = try? SearchSpace.parse(String(decoding: bytes, as: UTF8.self), file: "fuzz.yml")
        case .query:
            // The request line's target, when the input is a whole request (the HTTP corpus); else the input.
            let text = String(decoding: bytes, as: UTF8.self)
            let line = text.split(separator: "\n", maxSplits: 1).first.map(String.init) ?? text
            let target = line.split(separator: " ").dropFirst().first.map(String.init) ?? line
            let query = URI(target).queryParameters
            for path in APIQuery.parameters.keys { try? APIQuery.accept(query, of: path) }
            for name in ["from", "to"] { _ = try? APIQuery.date(name, in: query) }
            if let filter = try? HTTPAPI.eventFilter(query, catalogue: Self.catalogue) {
                Self.check(filter)
            }
            // The Host line's value, as the servers read it before answering: a host taken is a plain name or address.
            let host = text.split(separator: "\n").first { $0.lowercased().hasPrefix("host:") }.map {
                String($0.dropFirst(5)).trimmingCharacters(in: .whitespacesAndNewlines)
            }
            for authority in [host ?? "", text] {
                if let parsed = HostName.parse(authority),
                    parsed.isEmpty || parsed.contains(where: { "@/ \\\r\n\t".contains($0) })
                {
                    fatalError("a Host was read as the host \(parsed.debugDescription)")
                }
            }
        case .sse:
            let text = String(decoding: bytes, as: UTF8.self)
            let message = ServerSentEvents.control(
                StreamNotice.resetType,
                StreamNotice(
                    reason: "unknown", message: "no event \(text) in this log", requestedId: text, resumeAfter: 0))
            let lines = message.split(separator: "\n", omittingEmptySubsequences: false)
            guard lines.count == 4, lines[0].hasPrefix("event: "), lines[1].hasPrefix("data: "), !message.contains("\r")
            else {
                fatalError("a Last-Event-ID broke the reset notice into another event: \(message.debugDescription)")
            }
            let quoted = ServerSentEvents.quoted(text)
            guard !quoted.contains("\n"), !quoted.contains("\r"),
                (try? JSONDecoder().decode(String.self, from: Data(quoted.utf8))) == text
            else { fatalError("quoted text does not read back: \(text.debugDescription) -> \(quoted)") }
        case .camera:
            let diagnosis = StreamDiagnosis("rtsp://127.0.0.1:8554/cam")!
            // What it says of the answer (an error's words).
            let said = diagnosis.explain(bytes, describing: "rtsp://127.0.0.1:8554/cam")
            // The same bytes through the relay that stands between FFmpeg and a camera with a password, as the
            // camera's answer and as FFmpeg's request, whole and cut in two: what it refuses is said in words.
            var refusals: [String] = []
            for url in ["rtsp://user:secret@127.0.0.1:8554/cam", "http://user:secret@camera.local/video.mjpg"] {
                for cut in [bytes.count, bytes.count / 2] {
                    var rules = RelayRules(url: url, port: 5000)!
                    var request = bytes
                    _ = rules.fromClient(&request)
                    var buffer = Array(bytes[..<cut])
                    let first = rules.fromCamera(&buffer)
                    buffer += bytes[cut...]
                    refusals += [first.refusal, rules.fromCamera(&buffer).refusal].compactMap { $0 }
                }
            }
            for text in [said] + refusals {
                guard !text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }),
                    !text.contains("secret")
                else { fatalError("a camera's answer reached the terminal raw: \(text.debugDescription)") }
            }
            // The same bytes as a password in a URL: never shown, in any part (a password that reads as a secret's
            // parameter hides the host too).
            let password = String(decoding: bytes, as: UTF8.self)
            let shown = LiveEndpoint.url("rtsp://admin:\(password)@cam.local/x").description
            guard shown == "rtsp://***@cam.local/x" || shown == "rtsp://***@***" else {
                fatalError("a password was shown: \(password.debugDescription) -> \(shown.debugDescription)")
            }
            _ = StreamDiagnosis("rtsp://admin:\(password)@cam.local/x")
        }
    }

    /// A fleet's sources and zones (sites `lyon-2` and `paris-1`, a zone name at two cameras), as the event stream's
    /// filter checks a query against them.
    static let catalogue = LiveState.Catalogue(
        sources: ["lyon-2/showroom", "lyon-2/door", "paris-1/showroom"],
        zones: [
            ZoneID(sourceId: "lyon-2/showroom", name: "counter"), ZoneID(sourceId: "paris-1/showroom", name: "counter"),
            ZoneID(sourceId: "lyon-2/door", name: "entrance"),
        ].map { LiveState.Zone(id: $0, emotion: true) })

    /// A filter the stream accepted names only what the catalogue has.
    static func check(_ filter: EventFilter) {
        let names = Set(catalogue.zones.map(\.id.name))
        let ids = Set(catalogue.zones.map(\.id))
        let known = filter.zones.map { zones in
            zones.allSatisfy { zone in
                switch zone {
                case .named(let name): names.contains(name)
                case .at(let id): ids.contains(id)
                }
            }
        }
        guard filter.sources.map({ $0.isSubset(of: catalogue.sources) }) ?? true, known ?? true else {
            fatalError("the stream accepted a filter beyond its catalogue: \(filter)")
        }
    }

    private struct Envelope<Payload: Decodable>: Decodable {
        var payload: Payload
    }
}
