import Foundation
import SentinelCore
import SentinelWire
import Yams

/// One zone as the zone editor saves it.
public struct ZoneEdit: Sendable, Codable, Equatable {
    /// The zone's name in the file; nil for a new zone.
    public var original: String?
    public var name: String
    /// `[x, y]` points in the zone's own units as the file writes them (`normalized` for a new zone).
    public var polygon: [[Double]]

    public init(original: String?, name: String, polygon: [[Double]]) {
        self.original = original
        self.name = name
        self.polygon = polygon
    }
}

/// Writes zones back into a pipeline file's text, touching nothing else: comments, key order and every other
/// section stay as they were, byte for byte. A kept zone gets its new name and polygon in place (its other keys, its
/// comments and its units stay); a zone left out is removed with its lines; a new zone is added after the last one,
/// in normalized coordinates with the default inertia and grace.
///
/// It edits text, not the YAML tree, at the lines and columns the parser reports: the tree tells where a zone, its
/// name and its polygon start, and where the next field starts; the comment and blank lines just before the next
/// field belong to it. Zones written in YAML's flow style (`zones: [{name: a, ...}]`) are refused with a message:
/// they are edited by hand.
public enum ZoneFileEditor {
    /// `text` with the zones of each source named in `edits` replaced. Sources not named keep theirs.
    public static func apply(_ edits: [String: [ZoneEdit]], to text: String, file: String) throws(ConfigError)
        -> String
    {
        var document = try Document(text, file: file)
        for (sourceID, zones) in edits.sorted(by: { $0.key < $1.key }) {
            try document.replaceZones(of: sourceID, with: zones)
        }
        return document.text
    }

    /// Where a problem found in `text` (a file this editor wrote) lies in the editor's terms: for a field path within
    /// a zone (`sources[0].zones[3].polygon`), the source's id, the zone's name and the rest of the path (`polygon`).
    /// A line number of the rewritten file means nothing to someone looking at the page. Nil for other paths.
    public static func zone(at path: String, in text: String) -> (source: String, zone: String, field: String)? {
        guard let match = path.wholeMatch(of: /sources\[(\d+)\]\.zones\[(\d+)\](?:\.(.+))?/),
            let s = Int(match.1), let z = Int(match.2),
            let root = try? Yams.compose(yaml: text.hasPrefix("\u{FEFF}") ? String(text.dropFirst()) : text),
            let source = root["sources"]?.sequence.flatMap({ s < $0.count ? $0[s] : nil }),
            let id = source["id"]?.string,
            let zone = source["zones"]?.sequence.flatMap({ z < $0.count ? $0[z] : nil }),
            let name = zone["name"]?.string
        else { return nil }
        return (id, name, match.3.map(String.init) ?? "")
    }

    /// A number as the editor writes it: up to 4 decimals (normalized) or 1 (pixels), at least one.
    static func format(_ value: Double, pixels: Bool) -> String {
        var text = String(format: pixels ? "%.1f" : "%.4f", value)
        while text.hasSuffix("0"), !text.hasSuffix(".0") { text.removeLast() }
        return text == "-0.0" ? "0.0" : text
    }

    static func flow(_ polygon: [[Double]], pixels: Bool) -> String {
        "["
            + polygon.map { "[" + $0.map { format($0, pixels: pixels) }.joined(separator: ", ") + "]" }
            .joined(separator: ", ") + "]"
    }
}

/// A pipeline file's lines and YAML tree, edited from the bottom up so that earlier positions stay valid.
private struct Document {
    let file: String
    let bom: Bool
    let newline: String
    var lines: [String]
    let root: Node
    /// Every node's start, in document order (a mapping's key before its value).
    let starts: [(node: Node, line: Int, column: Int)]
    /// Line edits, applied from the last line up: `lines[range]` (0-based, half open) becomes `replacement`.
    var edits: [(range: Range<Int>, replacement: [String])] = []

    init(_ text: String, file: String) throws(ConfigError) {
        self.file = file
        bom = text.hasPrefix("\u{FEFF}")
        let body = bom ? String(text.dropFirst()) : text
        newline = try PipelineFile.lineEnding(of: body, file: file)
        lines = body.components(separatedBy: newline)
        do {
            guard let node = try Yams.compose(yaml: body) else { throw Document.problem(file, "the file is empty") }
            root = node
        } catch let error as ConfigError {
            throw error
        } catch {
            throw Document.problem(file, "invalid YAML: \(error)")
        }
        var starts: [(Node, Int, Int)] = []
        func walk(_ node: Node) {
            if let mark = node.mark { starts.append((node, mark.line, mark.column)) }
            switch node {
            case .mapping(let mapping):
                for (key, value) in mapping {
                    walk(key)
                    walk(value)
                }
            case .sequence(let sequence): sequence.forEach(walk)
            default: break
            }
        }
        walk(root)
        self.starts = starts
    }

    static func problem(_ file: String, _ message: String, line: Int? = nil, path: String = "") -> ConfigError {
        ConfigError(problems: [ConfigProblem(file: file, line: line, path: path, message: message)])
    }

    var text: String {
        var lines = lines
        for edit in edits.sorted(by: { $0.range.lowerBound > $1.range.lowerBound }) {
            lines.replaceSubrange(edit.range, with: edit.replacement)
        }
        return (bom ? "\u{FEFF}" : "") + lines.joined(separator: newline)
    }

    // MARK: Where things are

    /// The 1-based line where whatever follows `node` (its last descendant included) starts; past the end if nothing.
    func lineAfter(_ node: Node) -> Int {
        guard
            let index = starts.firstIndex(where: {
                $0.line == node.mark?.line && $0.column == node.mark?.column && $0.node == node
            })
        else { return lines.count + 1 }
        func size(_ node: Node) -> Int {
            switch node {
            case .mapping(let mapping): 1 + mapping.reduce(0) { $0 + size($1.key) + size($1.value) }
            case .sequence(let sequence): 1 + sequence.reduce(0) { $0 + size($1) }
            default: 1
            }
        }
        let end = index + size(node)
        return end < starts.count ? starts[end].line : lines.count + 1
    }

    /// The last line (1-based) from `first` before `bound` that holds YAML content, not only a comment or blanks:
    /// the comments just before the next field are that field's.
    func lastContentLine(from first: Int, before bound: Int) -> Int {
        var line = max(first, bound - 1)
        while line > first {
            let trimmed = lines[line - 1].trimmingCharacters(in: .whitespaces)
            if !trimmed.isEmpty, !trimmed.hasPrefix("#") { break }
            line -= 1
        }
        return line
    }

    /// The characters of a line (columns are counted in Unicode scalars, as the parser counts them).
    func scalars(_ line: Int) -> [Unicode.Scalar] { Array(lines[line - 1].unicodeScalars) }

    /// Whether a collection is written in flow style (`[...]`, `{...}`): it starts with its bracket, where a block
    /// one starts with its first entry. (The composed tree does not keep the style.)
    func isFlow(_ node: Node) -> Bool {
        guard let mark = node.mark, mark.line <= lines.count else { return false }
        let line = scalars(mark.line)
        return mark.column - 1 < line.count && "[{".unicodeScalars.contains(line[mark.column - 1])
    }

    func string(_ scalars: some Sequence<Unicode.Scalar>) -> String {
        var text = ""
        text.unicodeScalars.append(contentsOf: scalars)
        return text
    }

    // MARK: Editing

    mutating func replaceZones(of sourceID: String, with zones: [ZoneEdit]) throws(ConfigError) {
        guard let sources = root.mapping?["sources"]?.sequence,
            let (index, source) = sources.enumerated().first(where: { $0.element.mapping?["id"]?.string == sourceID }),
            let mapping = source.mapping
        else { throw Document.problem(file, "no source \"\(sourceID)\" in this file", path: "sources") }
        let path = "sources[\(index)].zones"
        let keyColumn = (mapping.mark ?? source.mark)?.column ?? 1
        guard let (zonesKey, zonesValue) = mapping.first(where: { $0.key.string == "zones" }) else {
            // No zones yet: the key goes after the source's last field.
            let last = lastContentLine(from: source.mark?.line ?? 1, before: lineAfter(source))
            edits.append((last..<last, zonesLines(zonesColumn: keyColumn, itemColumn: keyColumn + 4, zones)))
            return
        }
        let keyLine = zonesKey.mark?.line ?? 1
        let existing = zonesValue.sequence.map(Array.init) ?? []
        guard existing.isEmpty || !isFlow(zonesValue) else {
            throw Document.problem(
                file,
                "the zones are written in YAML's flow style ([...]); write them as a list of `- name:` entries "
                    + "to edit them here", line: keyLine, path: path)
        }
        if existing.isEmpty {
            // `zones: []` or `zones:` with nothing: the list starts on the lines below.
            if zones.isEmpty { return }
            let end = lastContentLine(from: keyLine, before: lineAfter(zonesValue))
            edits.append(
                ((keyLine - 1)..<end, zonesLines(zonesColumn: keyColumn, itemColumn: keyColumn + 4, zones)))
            return
        }
        var byName: [String: (index: Int, node: Node)] = [:]
        for (i, item) in existing.enumerated() {
            guard let itemMapping = item.mapping, !isFlow(item) else {
                throw Document.problem(
                    file,
                    "zone \(i + 1) is written in YAML's flow style ({...}); write it as `name:` and `polygon:` "
                        + "lines to edit it here", line: item.mark?.line, path: "\(path)[\(i)]")
            }
            if let name = itemMapping["name"]?.string { byName[name] = (i, item) }
        }
        var edited = Set<String>()
        for zone in zones {
            // Two edits of one zone (two pages saving over each other's list, a client's bug): the first would be
            // written and the second dropped without a word.
            if let original = zone.original, !edited.insert(original).inserted {
                throw Document.problem(
                    file, "zone \"\(original)\" is edited twice in one save: send each zone once", path: path)
            }
            if let original = zone.original, byName[original] == nil {
                throw Document.problem(
                    file, "zone \"\(original)\" is not in source \"\(sourceID)\" (was the file changed meanwhile?)",
                    path: path)
            }
            if !Name.isValid(zone.name) {
                throw Document.problem(file, "zone name \"\(zone.name)\" " + Name.rule, path: path)
            }
        }
        let keptNames = Set(zones.compactMap(\.original))
        if zones.isEmpty {
            // Nothing left: an empty list, written where the list was.
            let end = lastContentLine(from: keyLine, before: lineAfter(zonesValue))
            let indent = String(repeating: " ", count: keyColumn - 1)
            edits.append(((keyLine - 1)..<end, [indent + "zones: []"]))
            return
        }
        for (i, item) in existing.enumerated() {
            let name = item.mapping?["name"]?.string ?? ""
            let first = item.mark?.line ?? 1
            let bound = i + 1 < existing.count ? (existing[i + 1].mark?.line ?? first + 1) : lineAfter(zonesValue)
            let last = lastContentLine(from: first, before: bound)
            guard keptNames.contains(name), let edit = zones.first(where: { $0.original == name }) else {
                edits.append(((first - 1)..<last, []))
                continue
            }
            try replaceFields(of: item, with: edit, itemBound: last + 1, path: "\(path)[\(i)]")
        }
        // New zones go after the last zone, lined up with it.
        let lastItem = existing[existing.count - 1]
        let after = lastContentLine(from: lastItem.mark?.line ?? 1, before: lineAfter(zonesValue))
        let itemColumn = lastItem.mark?.column ?? keyColumn + 2
        let added = zones.filter { $0.original == nil }
        if !added.isEmpty {
            edits.append((after..<after, zonesLines(zonesColumn: nil, itemColumn: itemColumn, added)))
        }
    }

    /// A kept zone's name and polygon, rewritten where they are.
    private mutating func replaceFields(of item: Node, with zone: ZoneEdit, itemBound: Int, path: String)
        throws(ConfigError)
    {
        guard let mapping = item.mapping else { return }
        let pixels = mapping["units"]?.string == PolygonUnits.pixels.rawValue
        if let nameNode = mapping["name"], nameNode.string != zone.name, let mark = nameNode.mark {
            var line = scalars(mark.line)
            let start = mark.column - 1
            var end = start + 1
            if let quote = line[start...].first, quote == "\"" || quote == "'" {
                while end < line.count, line[end] != quote { end += 1 }
                end = min(end + 1, line.count)
            } else {
                while end < line.count, !CharacterSet.whitespaces.contains(line[end]) { end += 1 }
            }
            line.replaceSubrange(start..<end, with: zone.name.unicodeScalars)
            edits.append(((mark.line - 1)..<mark.line, [string(line)]))
        }
        guard let (key, value) = mapping.first(where: { $0.key.string == "polygon" }), let mark = key.mark else {
            throw Document.problem(file, "this zone has no polygon", line: item.mark?.line, path: path)
        }
        let last = lastContentLine(from: mark.line, before: min(lineAfter(value), itemBound))
        var text =
            string(scalars(mark.line).prefix(mark.column - 1)) + "polygon: "
            + ZoneFileEditor.flow(zone.polygon, pixels: pixels)
        // A comment after a one-line polygon stays.
        if last == mark.line, let comment = lines[last - 1].range(of: #"\]\s+#.*$"#, options: .regularExpression) {
            text += lines[last - 1][comment].dropFirst()
        }
        edits.append(((mark.line - 1)..<last, [text]))
    }

    /// New zones as block-list lines, their keys at `itemColumn`; with `zonesColumn`, a `zones:` line first.
    private func zonesLines(zonesColumn: Int?, itemColumn: Int, _ zones: [ZoneEdit]) -> [String] {
        var lines: [String] = []
        if let zonesColumn { lines.append(String(repeating: " ", count: zonesColumn - 1) + "zones:") }
        let dash = String(repeating: " ", count: max(0, itemColumn - 3))
        let key = dash + "  "
        for zone in zones {
            lines.append(dash + "- name: " + zone.name)
            lines.append(key + "polygon: " + ZoneFileEditor.flow(zone.polygon, pixels: false))
        }
        return lines
    }
}
