import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelVision
import SentinelVisitors
import Yams

/// A pipeline file: sources with their zones, the detector, tracker, emotion and event settings.
public struct PipelineDefinition: Sendable {
    public var file: String
    public var sources: [SourceDefinition]
    /// Which detector runs, and on how many frames.
    public var detection = DetectorChoice()
    /// A model name from Models/models.yml; nil for the detector's default.
    public var detectorModel: String?
    public var detectorSettings: DetectorSettings
    public var visitors: VisitorSettings
    public var emotionEnabled: Bool
    public var emotionModel: String
    /// What may leave the box, and how.
    public var privacy: PrivacyPolicy
    /// The sentiment gauge's window and publishing rhythm.
    public var gauge = GaugeSettings()
    /// Every zone of every source, in file order.
    public var zoneIDs: [ZoneID] {
        sources.flatMap { source in source.zones.map { ZoneID(sourceId: source.id, name: $0.name) } }
    }
    /// Where fields that are checked against the machine were written, for messages.
    var locations: [String: ConfigProblem] = [:]

    /// One source of frames and its zones.
    public struct SourceDefinition: Sendable {
        public var id: String
        /// As written: a file or folder (relative to the pipeline file), a device or a URL.
        public var input: String
        /// `input` with a relative path resolved against the pipeline file's folder.
        public var resolvedInput: String
        public var pace: Pacing
        public var folderFPS: Double
        public var zones: [ZoneSpec]
    }

    /// A zone as written, its polygon in `units`.
    public struct ZoneSpec: Sendable {
        public var name: String
        public var polygon: Polygon
        public var units: PolygonUnits
        public var inertia: Hysteresis
        public var grace: Hysteresis
        public var emotion: Bool

        /// The zone in pixels of a frame of this size.
        public func definition(width: Int, height: Int) -> ZoneDefinition {
            ZoneDefinition(
                name: name,
                polygon: units == .normalized ? polygon.scaled(width: Double(width), height: Double(height)) : polygon,
                inertia: inertia, grace: grace, emotion: emotion)
        }
    }

    /// Sections of a pipeline file that the pipeline does not read: `sentinel run`'s store, server and outputs. They
    /// are allowed in every pipeline file and read by whoever serves it (see `parse(_:file:sections:)`).
    public static let serviceSections: Set<String> = ["store", "server", "outputs"]

    /// Reads one section of a pipeline file that belongs to another part of Sentinel, reporting into the reader.
    public typealias SectionReader = (Field, ConfigReader) -> Void

    /// Reads a pipeline file, `overrides` (`--set`) written over it; every problem is reported with its line (or its
    /// `--set`) and field.
    public static func load(
        _ path: String, sections: [String: SectionReader] = [:], overrides: [ConfigOverride] = []
    ) throws(ConfigError) -> PipelineDefinition {
        try ConfigFile.load(path, overrides: overrides) { root, reader in
            PipelineParser(reader: reader, sections: sections).parse(root)
        }
    }

    /// Parses a pipeline file's text; `sections` read the service's sections present (`serviceSections`), after the
    /// pipeline's own, and their problems come out with the rest.
    public static func parse(
        _ text: String, file: String, sections: [String: SectionReader] = [:], overrides: [ConfigOverride] = []
    ) throws(ConfigError) -> PipelineDefinition {
        try ConfigFile.parse(text, file: file, overrides: overrides) { root, reader in
            PipelineParser(reader: reader, sections: sections).parse(root)
        }
    }

    /// Reads a `privacy:` section as a pipeline file writes it into `policy` (a fleet file has one too), with lists
    /// under `outputs` for those of `outputs` only (a fleet has no MQTT output).
    public static func readPrivacy(
        _ field: Field, _ reader: ConfigReader, into policy: inout PrivacyPolicy,
        outputs: [PrivacyPolicy.Output] = PrivacyPolicy.Output.allCases
    ) {
        PipelineParser(reader: reader, sections: [:]).privacy(field, &policy, outputs: outputs)
    }
}

/// A YAML settings file (a pipeline, a fleet) read with every problem reported at once, by line and field.
public enum ConfigFile {
    /// Reads the file at `path` with `read`, which reports into the reader and returns nil or a value.
    public static func load<Value>(
        _ path: String, overrides: [ConfigOverride] = [], _ read: (Field, ConfigReader) -> Value?
    ) throws(ConfigError) -> Value {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ConfigError(
                .unreadable,
                problems: [ConfigProblem(file: path, path: "", message: "cannot read: \(error.localizedDescription)")],
                underlying: error)
        }
        guard let text = String(validating: data, as: UTF8.self) else {
            let (line, column) = firstInvalidUTF8(in: data)
            throw ConfigError(
                .unreadable,
                problems: [
                    ConfigProblem(
                        file: path, line: line, column: column, path: "",
                        message: "not UTF-8 text: the file must be UTF-8 (is it saved in another encoding?)")
                ])
        }
        // A byte order mark (some Windows editors write one) is no part of the YAML.
        return try parse(
            text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text, file: path, overrides: overrides, read)
    }

    /// Line and column (1-based, in characters) of the first byte sequence that is not UTF-8.
    private static func firstInvalidUTF8(in data: Data) -> (line: Int, column: Int) {
        var iterator = data.makeIterator()
        var decoder = UTF8()
        var (line, column) = (1, 1)
        while case .scalarValue(let scalar) = decoder.decode(&iterator) {
            (line, column) = scalar == "\n" ? (line + 1, 1) : (line, column + 1)
        }
        return (line, column)
    }

    /// Parses a file's text with `read`, `overrides` written over it first.
    public static func parse<Value>(
        _ text: String, file: String, overrides: [ConfigOverride] = [], _ read: (Field, ConfigReader) -> Value?
    ) throws(ConfigError) -> Value {
        var root: Node
        do {
            guard let node = try Yams.compose(yaml: text) else {
                throw ConfigError(
                    .unreadable, problems: [ConfigProblem(file: file, path: "", message: "the file is empty")])
            }
            root = node
        } catch let error as ConfigError {
            throw error
        } catch let error as YamlError {
            throw ConfigError(.unreadable, problems: [yamlProblem(error, text: text, file: file)], underlying: error)
        } catch {
            throw ConfigError(
                .unreadable, problems: [ConfigProblem(file: file, path: "", message: "not YAML: \(error)")],
                underlying: error)
        }
        for override in overrides { root = try override.apply(to: root) }
        let reader = ConfigReader(file: file)
        let value = read(Field(node: root, path: ""), reader)
        guard reader.problems.isEmpty, let value else {
            // A problem in a value given with --set is that --set's, not a line's of the file.
            let problems = reader.problems.map { problem in
                guard let override = overrides.last(where: { $0.covers(problem.path) }) else { return problem }
                return ConfigProblem(file: override.description, path: problem.path, message: problem.message)
            }
            throw ConfigError(
                problems: problems.sorted { ($0.line ?? .max, $0.column ?? 0) < ($1.line ?? .max, $1.column ?? 0) })
        }
        return value
    }

    private static func yamlProblem(_ error: YamlError, text: String, file: String) -> ConfigProblem {
        switch error {
        case .duplicatedKeysInMapping(let duplicates, let context):
            // Yams gives the mapping's first line and the whole mapping as context; point at the repeated key.
            let key = duplicates.sorted().first ?? ""
            var first: (line: Int, column: Int)?
            for (index, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where index + 1 >= context.mark.line {
                let indent = line.prefix { $0 == " " || $0 == "-" }.count
                let rest = line.dropFirst(indent)
                guard rest.hasPrefix("\(key):") || rest.hasPrefix("\"\(key)\":") || rest.hasPrefix("'\(key)':") else {
                    continue
                }
                guard let seen = first else {
                    first = (index + 1, indent + 1)
                    continue
                }
                if seen.column == indent + 1 {
                    return ConfigProblem(
                        file: file, line: index + 1, column: indent + 1, path: "",
                        message: "duplicate key \(key) (first at line \(seen.line))")
                }
            }
            return ConfigProblem(
                file: file, line: context.mark.line, column: context.mark.column, path: "",
                message: "duplicate key \(duplicates.sorted().joined(separator: ", ")) in this mapping")
        case .scanner(let context, let problem, let mark, _), .parser(let context, let problem, let mark, _),
            .composer(let context, let problem, let mark, _):
            // The context says what was being read when the problem came ("expected a single document ...").
            let reading = context.map { "\($0.text.split(separator: " in line").first ?? ""), " } ?? ""
            return ConfigProblem(
                file: file, line: mark.line, column: mark.column, path: "",
                message: "invalid YAML: \(reading)\(problem)")
        case .reader(let problem, let offset, let value, _):
            // The offset counts characters from the start of the text.
            let before = offset.map { text.prefix($0) } ?? ""
            let line = before.filter { $0 == "\n" }.count + 1
            let column =
                before.count
                - (before.lastIndex(of: "\n").map { before.distance(from: before.startIndex, to: $0) + 1 } ?? 0) + 1
            return ConfigProblem(
                file: file, line: line, column: column, path: "",
                message: "invalid YAML: \(problem) (character U+\(String(format: "%04X", value)))")
        default:
            return ConfigProblem(file: file, path: "", message: "invalid YAML: \(error)")
        }
    }
}

/// Builds a definition from the YAML tree, reporting into the reader.
private struct PipelineParser {
    let reader: ConfigReader
    let sections: [String: PipelineDefinition.SectionReader]

    func parse(_ root: Field) -> PipelineDefinition? {
        let own: Set<String> = ["version", "sources", "detector", "tracker", "emotion", "events", "privacy", "gauge"]
        guard let top = reader.mapping(root, keys: own.union(PipelineDefinition.serviceSections)) else { return nil }
        if let version = reader.required(top, "version", in: root), let value = reader.integer(version, in: 1...1000),
            value != 1
        {
            reader.report(version, "version \(value) is not supported; this Sentinel reads version 1")
        }
        var definition = PipelineDefinition(
            file: reader.file, sources: [], detectorModel: nil,
            detectorSettings: .defaults(for: DetectorChoice().kind),
            visitors: VisitorSettings(), emotionEnabled: true, emotionModel: "emotion", privacy: PrivacyPolicy())
        if let field = reader.required(top, "sources", in: root), let list = reader.sequence(field) {
            if list.isEmpty { reader.report(field, "at least one source is needed") }
            definition.sources = list.compactMap { source($0, &definition) }
            var seen = Set<String>()
            for (i, source) in definition.sources.enumerated() where !seen.insert(source.id).inserted {
                reader.report(list[i], "source id \"\(source.id)\" is used twice", path: "\(list[i].path).id")
            }
        }
        if let field = top["detector"] { detector(field, &definition) }
        if let field = top["tracker"] { tracker(field, &definition.visitors.tracker) }
        if let field = top["emotion"] { emotion(field, &definition) }
        if let field = top["privacy"] { privacy(field, &definition.privacy) }
        if let field = top["gauge"] { _ = reader.section(field, GaugeSettings.settings, into: &definition.gauge) }
        if let field = top["events"] { _ = reader.section(field, VisitorSettings.settings, into: &definition.visitors) }
        if definition.visitors.tracker.lowScore > definition.visitors.tracker.highScore, let field = top["tracker"] {
            reader.report(field, "lowScore must not exceed highScore")
        }
        for (name, read) in sections.sorted(by: { $0.key < $1.key }) {
            if let field = top[name] { read(field, reader) }
        }
        return definition
    }

    func source(_ field: Field, _ definition: inout PipelineDefinition) -> PipelineDefinition.SourceDefinition? {
        guard let fields = reader.mapping(field, keys: ["id", "input", "pace", "folderFps", "zones"]) else {
            return nil
        }
        let id = reader.required(fields, "id", in: field).flatMap { reader.name($0, of: "a source id") }
        let inputField = reader.required(fields, "input", in: field)
        let input = inputField.flatMap(reader.string)
        var pace = Pacing.fastest
        if let f = fields["pace"] {
            if let text = reader.string(f) {
                if let parsed = Pacing(text) {
                    pace = parsed
                } else {
                    reader.report(
                        f,
                        "\"\(text)\" is not a pace: fastest, realtime, or a factor such as 4x"
                            + ConfigReader.didYouMean(text, ["fastest", "realtime"]))
                }
            }
        }
        let fps = fields["folderFps"].flatMap { reader.number($0, in: 0.001...1000) } ?? 1
        var zones: [PipelineDefinition.ZoneSpec] = []
        if let f = fields["zones"], let list = reader.sequence(f) {
            zones = list.compactMap(zone)
            var seen = Set<String>()
            for (i, zone) in zones.enumerated() where !seen.insert(zone.name).inserted {
                reader.report(
                    list[i], "zone name \"\(zone.name)\" is used twice in this source", path: "\(list[i].path).name")
            }
        }
        guard let id, let input, let inputField else { return nil }
        if let scheme = input.range(of: "://").map({ input[..<$0.lowerBound].lowercased() }),
            !Self.streamSchemes.contains(scheme)
        {
            reader.report(
                inputField,
                "\(scheme):// is not a stream Sentinel reads; use \(Self.streamSchemes.sorted().joined(separator: ", "))"
            )
        }
        let isPath = !(input.contains("://") || input.hasPrefix("/dev/video") || Int(input) != nil)
        let resolved = isPath ? reader.resolve(input) : input
        definition.locations["source.\(id).input"] = reader.location(of: inputField)
        for (i, zone) in zones.enumerated() where zone.units == .pixels {
            let item = Field(node: fields["zones"]!.node.sequence![i], path: "\(fields["zones"]!.path)[\(i)]")
            definition.locations["source.\(id).zone.\(zone.name)"] = reader.location(
                of: item, path: item.child("polygon"))
        }
        return .init(id: id, input: input, resolvedInput: resolved, pace: pace, folderFPS: fps, zones: zones)
    }

    /// The URL schemes of live streams (through FFmpeg).
    static let streamSchemes: Set<String> = ["rtsp", "rtsps", "rtmp", "http", "https", "udp", "rtp", "srt", "tcp"]

    func zone(_ field: Field) -> PipelineDefinition.ZoneSpec? {
        guard let fields = reader.mapping(field, keys: ["name", "units", "polygon", "inertia", "grace", "emotion"])
        else { return nil }
        let name = reader.required(fields, "name", in: field).flatMap { reader.name($0, of: "a zone name") }
        let units = fields["units"].flatMap { reader.choice($0, PolygonUnits.self) } ?? .normalized
        var polygon: Polygon?
        if let f = reader.required(fields, "polygon", in: field), let points = reader.sequence(f) {
            let vertices: [Point] = points.compactMap { p in
                guard let pair = reader.sequence(p) else { return nil }
                guard pair.count == 2 else {
                    reader.report(p, "a point is [x, y]")
                    return nil
                }
                guard let x = reader.number(pair[0]), let y = reader.number(pair[1]) else { return nil }
                if units == .normalized, !(0...1).contains(x) || !(0...1).contains(y) {
                    reader.report(p, "point [\(x), \(y)] is outside the frame (normalized coordinates run from 0 to 1)")
                }
                if units == .pixels, x < 0 || y < 0 {
                    reader.report(p, "point [\(x), \(y)] is outside the frame (negative pixels)")
                }
                return Point(x: x, y: y)
            }
            if vertices.count == points.count {
                polygon = Polygon(vertices)
                if let problem = PolygonCheck.problem(with: polygon!) { reader.report(f, problem) }
            }
        }
        let inertia = fields["inertia"].flatMap(hysteresis) ?? .seconds(0.3)
        let grace = fields["grace"].flatMap(hysteresis) ?? .seconds(0.5)
        let emotion = fields["emotion"].flatMap(reader.bool) ?? true
        guard let name, let polygon else { return nil }
        return .init(
            name: name, polygon: polygon, units: units, inertia: inertia, grace: grace, emotion: emotion)
    }

    /// `{seconds: 0.3}` or `{frames: 5}`.
    func hysteresis(_ field: Field) -> Hysteresis? {
        guard let fields = reader.mapping(field, keys: ["seconds", "frames"]) else { return nil }
        switch (fields["seconds"], fields["frames"]) {
        case (let s?, nil): return reader.number(s, in: 0...60).map { .seconds($0) }
        case (nil, let f?): return reader.integer(f, in: 1...1000).map { .frames($0) }
        default:
            reader.report(field, "give either seconds or frames")
            return nil
        }
    }

    func detector(_ field: Field, _ definition: inout PipelineDefinition) {
        let keys = Set((DetectorChoice.settings.map(\.key) + DetectorSettings.settings.map(\.key))).union(["model"])
        guard let fields = reader.mapping(field, keys: keys) else { return }
        // The kind first: the other settings start from its defaults.
        reader.apply(DetectorChoice.settings, from: fields, to: &definition.detection)
        definition.detectorSettings = .defaults(for: definition.detection.kind)
        reader.apply(DetectorSettings.settings, from: fields, to: &definition.detectorSettings)
        if let f = fields["model"], let value = reader.string(f) {
            definition.detectorModel = value
            definition.locations["detector.model"] = reader.location(of: f)
        }
    }

    func tracker(_ field: Field, _ t: inout TrackerSettings) {
        guard reader.section(field, TrackerSettings.settings, into: &t) != nil else { return }
        if t.visitTimeoutSeconds < t.coastSeconds {
            reader.report(
                field,
                "visitTimeoutSeconds (\(t.visitTimeoutSeconds)) must be at least coastSeconds (\(t.coastSeconds))")
        }
    }

    func emotion(_ field: Field, _ definition: inout PipelineDefinition) {
        guard
            let fields = reader.section(
                field, EmotionSettings.settings, extra: ["enabled", "model"], into: &definition.visitors.emotion)
        else { return }
        if let f = fields["enabled"], let v = reader.bool(f) { definition.emotionEnabled = v }
        if let f = fields["model"], let v = reader.string(f) {
            definition.emotionModel = v
            definition.locations["emotion.model"] = reader.location(of: f)
        }
    }
}

extension PipelineParser {
    func privacy(
        _ field: Field, _ policy: inout PrivacyPolicy, outputs: [PrivacyPolicy.Output] = PrivacyPolicy.Output.allCases
    ) {
        guard
            let fields = reader.section(
                field, PrivacyPolicy.settings, extra: ["pseudonyms", "retention", "outputs", "review"], into: &policy)
        else { return }
        if let f = fields["pseudonyms"], let p = reader.mapping(f, keys: ["rotate", "keyFile"]) {
            if let r = p["rotate"] {
                let named = ["hourly": 3_600.0, "daily": 86_400.0, "weekly": 604_800.0]
                if let text = r.node.string, let seconds = named[text] {
                    policy.pseudonyms.rotationSeconds = seconds
                } else if r.node.float != nil || r.node.int != nil {
                    if let seconds = reader.number(r, in: 60...31_622_400) {
                        policy.pseudonyms.rotationSeconds = seconds
                    }
                } else {
                    reader.report(r, "expected hourly, daily, weekly or a number of seconds (60 or more)")
                }
            }
            if let k = p["keyFile"], let path = reader.string(k) {
                policy.pseudonyms.keyFile = reader.resolve(path)
            }
        }
        if let f = fields["retention"] { _ = reader.section(f, RetentionPolicy.settings, into: &policy.retention) }
        if let f = fields["outputs"], let lists = reader.mapping(f, keys: Set(outputs.map(\.rawValue))) {
            // In declaration order: the event log's list (events) is known when MQTT's is checked against it.
            for output in outputs {
                guard let field = lists[output.rawValue] else { continue }
                policy.outputs[output] = allowlist(
                    field, within: PrivacyPolicy.Output.masked.contains(output) ? nil : policy.outputs[.events])
            }
        }
        if let f = fields["review"] { _ = reader.section(f, ReviewSettings.settings, into: &policy.review) }
    }

    /// `{allow: [...], deny: [...]}`: fields added to or taken from the strict default allowlist. An output made from
    /// the event log cannot allow a field the log does not hold (`within`, the events output's list).
    private func allowlist(_ field: Field, within log: Set<PublishedField>?) -> Set<PublishedField> {
        var fields = PublishedField.defaults
        guard let lists = reader.mapping(field, keys: ["allow", "deny"]) else { return fields }
        let known = PublishedField.allCases.map(\.rawValue)
        let core = ["type", "time", "visitor.faceId", "visitor.sourceId", "visitor.zone", "visitor.state"]
        func names(_ key: String) -> [PublishedField] {
            guard let list = lists[key].flatMap(reader.sequence) else { return [] }
            return list.compactMap { item in
                guard let name = reader.string(item) else { return nil }
                if core.contains(name) {
                    reader.report(item, "\"\(name)\" is a core field: every event carries it")
                    return nil
                }
                guard let field = PublishedField(rawValue: name) else {
                    reader.report(item, "unknown field \"\(name)\"; fields are \(known.joined(separator: ", "))")
                    return nil
                }
                if key == "allow", let log, !log.contains(field) {
                    reader.report(
                        item,
                        "\"\(name)\" is not in the event log this output forwards: allow it in privacy.outputs.events too"
                    )
                    return nil
                }
                return field
            }
        }
        fields.formUnion(names("allow"))
        fields.subtract(names("deny"))
        return fields
    }
}

/// Shape checks for zone polygons.
enum PolygonCheck {
    static func problem(with polygon: Polygon) -> String? {
        let v = polygon.vertices
        guard v.count >= 3 else { return "a polygon needs at least 3 points, found \(v.count)" }
        var twiceArea = 0.0
        for i in v.indices {
            let a = v[i]
            let b = v[(i + 1) % v.count]
            twiceArea += a.x * b.y - b.x * a.y
        }
        // Crossing edges first: a bow tie's two halves cancel, so its area is nothing, but that is not what is wrong.
        let n = v.count
        for i in 0..<n {
            for j in (i + 1)..<n where j != i + 1 && !(i == 0 && j == n - 1) {
                if segmentsCross(v[i], v[(i + 1) % n], v[j], v[(j + 1) % n]) {
                    return "self-intersecting polygon: edge \(i + 1) crosses edge \(j + 1)"
                }
            }
        }
        guard abs(twiceArea) > 1e-9 else { return "degenerate polygon: its points enclose no area" }
        return nil
    }

    private static func segmentsCross(_ p1: Point, _ p2: Point, _ q1: Point, _ q2: Point) -> Bool {
        func orientation(_ a: Point, _ b: Point, _ c: Point) -> Double {
            (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
        }
        let d1 = orientation(q1, q2, p1)
        let d2 = orientation(q1, q2, p2)
        let d3 = orientation(p1, p2, q1)
        let d4 = orientation(p1, p2, q2)
        return ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0))
    }
}

/// The `detector:` keys that choose the detector and how often it runs (its tuning is `DetectorSettings`'; `model`,
/// a name the model manifest must know, is read by hand and checked against it).
public struct DetectorChoice: Sendable {
    public var kind = DetectorKind.retinaface
    /// Frames per second of media time each source detects faces on at most (0: every frame). Frames in between
    /// are not analysed: the tracker carries every visitor across them.
    public var maxFps = 0.0

    public init() {}

    public static let settings: [Setting<DetectorChoice>] = [
        .choice("kind", \.kind, "the face detector; the settings below start from its defaults"),
        .number(
            "maxFps", \.maxFps, in: 0...1000,
            "analysed frames per media second at most, evenly spread; the tracker carries visitors between them (0: every frame)"
        ),
    ]
}
