import Foundation
import SentinelCore
import Yams

/// Writes settings (`--set` keys and values) into a pipeline file's text, every other byte kept (comments, order,
/// quoting, line endings), as the zone editor writes zones: a value the file has is replaced where it stands; a key it
/// lacks is added as the first key of the deepest mapping it has (in that mapping's style, the mappings it lacks under
/// it too), or at the end of the file for a section it lacks. A list element the file lacks cannot be added.
public enum SettingsEditor {
    public static func apply(_ settings: [(key: String, value: String)], to text: String, file: String)
        throws(ConfigError) -> String
    {
        var text = text
        var root = try compose(text, file)
        for (key, value) in settings {
            guard let steps = ConfigOverride.steps(of: key) else {
                throw problem(file, key, "not a key path")
            }
            for path in try expand(steps, in: root) {
                text = try write(value, at: path, key: key, in: text, root: root, file: file)
                root = try compose(text, file, written: key)
            }
        }
        // What was written reads back as written.
        for (key, value) in settings {
            for path in try expand(ConfigOverride.steps(of: key)!, in: root) {
                let wanted = (try? Yams.compose(yaml: value)) ?? nil
                guard let node = node(at: path, in: root), node.scalar != nil,
                    node.string == wanted?.string || (node.float != nil && node.float == wanted?.float)
                else { throw problem(file, key, "could not be written in place") }
            }
        }
        return text
    }

    /// `text` (a pipeline file's) with each field of `paths` (a field path and the file it means, as
    /// `PipelineDefinition.relativePaths`) written as that absolute path: the same pipeline, for a copy that lies in
    /// another folder.
    public static func absolute(_ paths: [String: String], in text: String, file: String) throws(ConfigError) -> String
    {
        var quoted: [(key: String, value: String)] = []
        for key in paths.keys.sorted() {
            guard let value = paths[key]!.yamlQuoted else { throw problem(file, key, "the path cannot be written") }
            quoted.append((key, value))
        }
        return try apply(quoted, to: text, file: file)
    }

    static func problem(_ file: String, _ key: String, _ message: String) -> ConfigError {
        ConfigError(problems: [ConfigProblem(file: file, path: key, message: message)])
    }

    /// The file's text parsed; `written`: the key just written into it, which the text no longer parses after (an
    /// edit this editor cannot make there), not a file that was not YAML.
    static func compose(_ text: String, _ file: String, written: String? = nil) throws(ConfigError) -> Node {
        do {
            guard let root = try Yams.compose(yaml: text) else { throw problem(file, "", "the file is empty") }
            return root
        } catch let error as ConfigError {
            throw error
        } catch {
            guard let written else { throw problem(file, "", "not YAML: \(error)") }
            throw problem(
                file, written,
                "cannot be written into this file as it is laid out: add it by hand (the edit gave \(error))")
        }
    }

    /// `[*]` replaced by each position the file has.
    static func expand(_ steps: [ConfigOverride.Step], in root: Node) throws(ConfigError) -> [[ConfigOverride.Step]] {
        var paths: [[ConfigOverride.Step]] = [[]]
        for step in steps {
            guard case .every = step else {
                paths = paths.map { $0 + [step] }
                continue
            }
            paths = paths.flatMap { path -> [[ConfigOverride.Step]] in
                let count = node(at: path, in: root)?.sequence?.count ?? 0
                return (0..<count).map { path + [.index($0)] }
            }
        }
        return paths
    }

    static func node(at path: [ConfigOverride.Step], in root: Node) -> Node? {
        var node: Node? = root
        for step in path {
            switch step {
            case .key(let name): node = node?.mapping?[name]
            case .index(let index): node = node?.sequence.flatMap { index < $0.count ? $0[index] : nil }
            case .every: return nil
            }
        }
        return node
    }

    private static func write(
        _ value: String, at path: [ConfigOverride.Step], key: String, in text: String, root: Node, file: String
    )
        throws(ConfigError) -> String
    {
        let newline = try PipelineFile.lineEnding(of: text, file: file)
        var lines = text.components(separatedBy: newline)
        // The deepest node the file has on the path.
        var depth = 0
        var node = root
        while depth < path.count, let next = self.node(at: Array(path[...depth]), in: root) {
            node = next
            depth += 1
        }
        if depth == path.count {
            guard node.scalar != nil, let mark = node.mark else {
                throw problem(file, key, "the file has a mapping or list there, not a value")
            }
            // The same value as written (3.0 for 3): the file keeps its own spelling.
            let wanted = (try? Yams.compose(yaml: value)) ?? nil
            if node.string == value || (node.float != nil && node.float == wanted?.float) { return text }
            let line = lines[mark.line - 1].unicodeScalars
            let start = try column(mark, in: line, file, key)
            let end = scalarEnd(in: line, from: start)
            lines[mark.line - 1] = String(line[..<start]) + value + String(line[end...])
            return lines.joined(separator: newline)
        }
        var remainder: [String] = []
        for step in path[depth...] {
            guard case .key(let name) = step else {
                throw problem(file, key, "the file has no such list element; add it to the file first")
            }
            remainder.append(name)
        }
        guard node.mapping != nil else { throw problem(file, key, "the file has a value there, not a mapping") }
        let flow = remainder.dropFirst().reversed().reduce(value) { "{ \($1): \($0) }" }
        let entry = "\(remainder[0]): \(flow)"
        if let mark = node.mark, depth > 0 || !(node.mapping?.isEmpty ?? true) {
            let line = lines[mark.line - 1].unicodeScalars
            let start = try column(mark, in: line, file, key)
            if start < line.endIndex && line[start] == "{" {
                // A flow mapping: before its closing brace.
                guard let (row, column) = closingBrace(lines, line: mark.line - 1, from: start) else {
                    throw problem(file, key, "a flow mapping without its closing brace")
                }
                let target = lines[row].unicodeScalars
                let before = String(target[..<column])
                let empty = before.trimmingCharacters(in: .whitespaces).hasSuffix("{")
                lines[row] =
                    String(before).replacingOccurrences(of: "\\s+$", with: "", options: .regularExpression)
                    + (empty ? " " : ", ") + entry + " " + String(target[column...])
                return lines.joined(separator: newline)
            }
            if depth > 0 {
                // A block mapping: a new key lined up with the others, the mappings it lacks under it in block style
                // too, one key a line. It goes first, unless the mapping is a list element whose first key follows
                // the `- ` on its line (a zone's `- name: door`): then second, after the first key's line.
                let indent = String(repeating: " ", count: mark.column - 1)
                let block = remainder.enumerated().map { level, name in
                    indent + String(repeating: "  ", count: level) + name + ":"
                        + (level == remainder.count - 1 ? " " + value : "")
                }
                let before = String(line[..<start]).trimmingCharacters(in: .whitespaces)
                guard before.hasSuffix("-") else {
                    lines.insert(contentsOf: block, at: mark.line - 1)
                    return lines.joined(separator: newline)
                }
                let keys = node.mapping.map { Array($0) } ?? []
                let firstValueLine = keys.first?.value.mark?.line ?? mark.line
                if keys.count > 1, let second = keys[1].key.mark, second.line > mark.line {
                    lines.insert(contentsOf: block, at: second.line - 1)
                } else if keys.count == 1, firstValueLine == mark.line,
                    keys[0].value.scalar != nil
                        || ((keys[0].value.mapping != nil || keys[0].value.sequence != nil)
                            && lines[mark.line - 1].contains(where: { $0 == "[" || $0 == "{" }))
                {
                    lines.insert(contentsOf: block, at: mark.line)
                } else {
                    throw problem(
                        file, key,
                        "cannot be added to this list element as written; add \(remainder.joined(separator: ".")) to the file first"
                    )
                }
                return lines.joined(separator: newline)
            }
        }
        // A section the file lacks: at its end, in block style.
        var block = "\(remainder[0]):"
        for (level, name) in remainder.dropFirst().enumerated() {
            block += newline + String(repeating: "  ", count: level + 1) + "\(name):"
        }
        block += " \(value)"
        while lines.last == "" { lines.removeLast() }
        return (lines + [block, ""]).joined(separator: newline)
    }

    /// Where the parser's column `mark` is on `line`: columns count Unicode scalars, as the parser and the zone editor
    /// count them (not characters: a name with combining marks has more scalars than characters).
    static func column(_ mark: Mark, in line: String.UnicodeScalarView, _ file: String, _ key: String)
        throws(ConfigError)
        -> String.Index
    {
        guard mark.column >= 1,
            let index = line.index(line.startIndex, offsetBy: mark.column - 1, limitedBy: line.endIndex)
        else { throw problem(file, key, "line \(mark.line) is shorter than the parser says") }
        return index
    }

    /// Where a scalar written from `start` ends: its closing quote, or for a plain one before a comment, a comma or
    /// bracket of a flow collection, or the end of the line (trailing spaces left out).
    static func scalarEnd(in line: String.UnicodeScalarView, from start: String.Index) -> String.Index {
        guard start < line.endIndex else { return start }
        let first = line[start]
        if first == "\"" || first == "'" {
            var i = line.index(after: start)
            while i < line.endIndex {
                if line[i] == first {
                    if first == "'" && line.index(after: i) < line.endIndex && line[line.index(after: i)] == "'" {
                        i = line.index(i, offsetBy: 2)
                        continue
                    }
                    if first == "\"" && line[line.index(before: i)] == "\\" {
                        i = line.index(after: i)
                        continue
                    }
                    return line.index(after: i)
                }
                i = line.index(after: i)
            }
            return line.endIndex
        }
        var i = start
        var end = start
        while i < line.endIndex {
            let c = line[i]
            if c == "," || c == "}" || c == "]" { break }
            if c == "#" && i > start && line[line.index(before: i)] == " " { break }
            if c != " " { end = line.index(after: i) }
            i = line.index(after: i)
        }
        return end
    }

    /// The brace closing the flow mapping that opens at `start` on `line`, across lines, quotes skipped.
    static func closingBrace(_ lines: [String], line: Int, from start: String.Index) -> (Int, String.Index)? {
        var depth = 0
        var quote: Unicode.Scalar?
        var row = line
        var i = start
        while row < lines.count {
            let text = lines[row].unicodeScalars
            if row != line { i = text.startIndex }
            while i < text.endIndex {
                let c = text[i]
                if let q = quote {
                    if c == q { quote = nil }
                } else if c == "\"" || c == "'" {
                    quote = c
                } else if c == "{" || c == "[" {
                    depth += 1
                } else if c == "}" || c == "]" {
                    depth -= 1
                    if depth == 0 { return (row, i) }
                } else if c == "#" {
                    break
                }
                i = text.index(after: i)
            }
            row += 1
        }
        return nil
    }
}
