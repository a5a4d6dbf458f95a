import Foundation
import SentinelCore
import SentinelPrivacy
import SentinelVisitors
import SentinelWire
import Yams

/// Builds a definition from the YAML tree, reporting into the reader.
struct PipelineParser {
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
        var definition = PipelineDefinition(file: reader.file)
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
        definition.locations.merge(reader.locations) { mine, _ in mine }
        definition.relativePaths = reader.relativePaths
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
        let resolved = isPath ? reader.resolve(input, in: inputField) : input
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
        let keys =
            DetectorChoice.settings.map(\.key) + DetectorSettings.settings.map(\.key)
            + PipelineDefinition.detectorModelSettings.map(\.key)
        guard let fields = reader.mapping(field, keys: Set(keys)) else { return }
        // The kind first: the other settings start from its defaults.
        reader.apply(DetectorChoice.settings, from: fields, to: &definition.detection)
        definition.detectorSettings = .defaults(for: definition.detection.kind)
        reader.apply(DetectorSettings.settings, from: fields, to: &definition.detectorSettings)
        reader.apply(PipelineDefinition.detectorModelSettings, from: fields, to: &definition)
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
        let keys = EmotionSettings.settings.map(\.key) + PipelineDefinition.emotionModelSettings.map(\.key)
        guard let fields = reader.mapping(field, keys: Set(keys + ["calibration", "head"])) else { return }
        reader.apply(EmotionSettings.settings, from: fields, to: &definition.visitors.emotion)
        reader.apply(PipelineDefinition.emotionModelSettings, from: fields, to: &definition)
        if let field = fields["calibration"] {
            // A pipeline's calibration replaces the model's whole: what it leaves out is the identity's.
            var calibration = EmotionCalibration.identity
            if let parts = reader.section(
                field, EmotionCalibration.settings, extra: ["scales", "offsets", "valence", "fittedWith"],
                into: &calibration)
            {
                if let f = parts["fittedWith"] {
                    var crop = CropRecord(margin: 0, align: false, mirror: false)
                    _ = reader.section(f, EmotionCalibration.cropSettings, into: &crop)
                    calibration.fittedWith = crop
                }
                if let f = parts["scales"] {
                    _ = reader.section(f, EmotionCalibration.scaleSettings, into: &calibration)
                }
                if let f = parts["offsets"] {
                    _ = reader.section(f, EmotionCalibration.offsetSettings, into: &calibration)
                }
                if let f = parts["valence"] {
                    _ = reader.section(f, EmotionCalibration.valenceSettings, into: &calibration)
                }
            }
            definition.emotionCalibration = calibration
        }
        if let field = fields["head"] {
            var head = FileReference(file: "", sha256: "")
            if reader.section(field, PipelineDefinition.headSettings, into: &head) != nil {
                if head.file.isEmpty || head.sha256.count != 64 || !head.sha256.allSatisfy(\.isHexDigit) {
                    reader.report(
                        field, "a head is its file and its sha256 (64 hex digits), as eval emotion --fit prints them")
                }
            }
            definition.emotionHead = head
        }
    }
}
