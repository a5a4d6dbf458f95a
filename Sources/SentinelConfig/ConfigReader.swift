import Foundation
public import SentinelCore
public import Yams

/// One problem in a pipeline file: where it is and what is wrong.
public struct ConfigProblem: Sendable, Equatable, Codable, CustomStringConvertible {
    public var file: String
    public var line: Int?
    public var column: Int?
    /// The field, as `sources[0].zones[1].polygon`.
    public var path: String
    public var message: String

    public init(file: String, line: Int? = nil, column: Int? = nil, path: String, message: String) {
        self.file = file
        self.line = line
        self.column = column
        self.path = path
        self.message = message
    }

    public var description: String {
        let place = line.map { "\(file):\($0):\(column ?? 1)" } ?? file
        return path.isEmpty ? "\(place): \(message)" : "\(place): \(path): \(message)"
    }
}

/// Every problem found in a pipeline file, in file order.
public struct ConfigError: SentinelError {
    public enum Code: String, Sendable, CustomStringConvertible {
        /// The file could not be read, or is not the YAML of a pipeline.
        case unreadable
        /// Fields with wrong values, missing or unknown.
        case invalid
        public var description: String { rawValue }
    }
    public let code: Code
    public var problems: [ConfigProblem]
    public let underlying: (any Error)?

    public init(_ code: Code = .invalid, problems: [ConfigProblem], underlying: (any Error)? = nil) {
        self.code = code
        self.problems = problems
        self.underlying = underlying
    }

    public var message: String { problems.map(\.description).joined(separator: "\n") }
}

/// A YAML node with its field path.
public struct Field {
    public let node: Node
    public let path: String

    public func child(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }
}

/// Reads a YAML tree field by field, collecting every problem with its line instead of stopping at the first.
public final class ConfigReader {
    public let file: String
    public private(set) var problems: [ConfigProblem] = []
    /// Where each declared setting read so far was written, by field path (`store.group`): for the checks that need
    /// the machine (a model, a group), which run after the file is read and still point at the line.
    public private(set) var locations: [String: ConfigProblem] = [:]
    /// The fields that held a relative path, by field path, with the path resolved: a copy of the file written
    /// elsewhere (tune's best.yml) writes these instead, so that it means the same files where it lies.
    public private(set) var relativePaths: [String: String] = [:]

    init(file: String) { self.file = file }

    /// A path as written in `field`, resolved against the file's folder unless absolute.
    public func resolve(_ path: String, in field: Field) -> String {
        guard !path.hasPrefix("/") else { return path }
        let resolved = URL(fileURLWithPath: file).deletingLastPathComponent().appendingPathComponent(path)
            .standardizedFileURL.path
        relativePaths[field.path] = resolved
        return resolved
    }

    public func report(_ field: Field?, _ message: String, path: String? = nil) {
        problems.append(location(of: field, path: path, message: message))
    }

    /// Where a field is, as a problem to be filled in later (checks that need the machine, not the file).
    public func location(of field: Field?, path: String? = nil, message: String = "") -> ConfigProblem {
        let mark = field?.node.mark
        return ConfigProblem(
            file: file, line: mark?.line, column: mark?.column, path: path ?? field?.path ?? "", message: message)
    }

    /// `; did you mean "x"?` for the candidate nearest a mistyped `word` (case aside, at most a third of its letters
    /// off, and no other as near), or nothing.
    public static func didYouMean(_ word: String, _ candidates: some Collection<String>) -> String {
        let typed = Array(word.lowercased())
        let ranked = candidates.map { ($0, editDistance(typed, Array($0.lowercased()))) }.sorted { $0.1 < $1.1 }
        guard let best = ranked.first, best.1 <= max(1, typed.count / 3),
            ranked.dropFirst().first?.1 != best.1
        else { return "" }
        return "; did you mean \"\(best.0)\"?"
    }

    /// Edits from one word to the other: a letter added, dropped, changed, or two neighbours swapped.
    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        var d = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
        for i in 0...a.count { d[i][0] = i }
        for j in 0...b.count { d[0][j] = j }
        for i in a.indices {
            for j in b.indices {
                d[i + 1][j + 1] = min(d[i][j + 1] + 1, d[i + 1][j] + 1, d[i][j] + (a[i] == b[j] ? 0 : 1))
                if i > 0, j > 0, a[i] == b[j - 1], a[i - 1] == b[j] {
                    d[i + 1][j + 1] = min(d[i + 1][j + 1], d[i - 1][j - 1] + 1)
                }
            }
        }
        return d[a.count][b.count]
    }

    /// The mapping's fields by key; unknown keys are reported.
    public func mapping(_ field: Field, keys: Set<String>) -> [String: Field]? {
        guard let mapping = field.node.mapping else {
            report(field, "expected a mapping with keys \(keys.sorted().joined(separator: ", "))")
            return nil
        }
        var fields: [String: Field] = [:]
        for (key, value) in mapping {
            guard let name = key.string else {
                report(Field(node: key, path: field.path), "keys must be strings")
                continue
            }
            let child = Field(node: value, path: field.child(name))
            if keys.contains(name) {
                fields[name] = child
            } else {
                report(
                    Field(node: key, path: child.path),
                    "unknown key \"\(name)\"; expected one of \(keys.sorted().joined(separator: ", "))"
                        + Self.didYouMean(name, keys))
            }
        }
        return fields
    }

    /// A mapping's entries in file order, whatever their keys (a list of settings by key path, as a sweep's space).
    public func entries(_ field: Field) -> [(key: String, field: Field)]? {
        guard let mapping = field.node.mapping else {
            report(field, "expected a mapping of keys to values")
            return nil
        }
        return mapping.compactMap { key, value in
            key.string.map { ($0, Field(node: value, path: field.child($0))) }
        }
    }

    public func required(_ fields: [String: Field], _ key: String, in parent: Field) -> Field? {
        if let field = fields[key] { return field }
        report(parent, "missing required key \"\(key)\"", path: parent.child(key))
        return nil
    }

    public func sequence(_ field: Field) -> [Field]? {
        guard let sequence = field.node.sequence else {
            report(field, "expected a list")
            return nil
        }
        return sequence.enumerated().map { Field(node: $1, path: "\(field.path)[\($0)]") }
    }

    public func string(_ field: Field) -> String? {
        guard case .scalar(let scalar) = field.node, !scalar.string.isEmpty else {
            report(field, "expected a non-empty string")
            return nil
        }
        return scalar.string
    }

    /// A name that other names are built from (`Name`'s rule).
    public func name(_ field: Field, of what: String) -> String? {
        guard let text = string(field) else { return nil }
        guard Name.isValid(text) else {
            report(field, "\(what) \"\(text)\" " + Name.rule)
            return nil
        }
        return text
    }

    public func number(
        _ field: Field, in range: ClosedRange<Double> = -Double.greatestFiniteMagnitude...Double.greatestFiniteMagnitude
    ) -> Double? {
        guard case .scalar = field.node, let value = field.node.float ?? field.node.int.map(Double.init) else {
            report(field, "expected a number")
            return nil
        }
        guard value.isFinite else {
            report(field, "expected a finite number, not \(value)")
            return nil
        }
        guard range.contains(value) else {
            report(field, "\(value) is out of range \(range.lowerBound.written)...\(range.upperBound.written)")
            return nil
        }
        return value
    }

    public func integer(_ field: Field, in range: ClosedRange<Int>) -> Int? {
        guard case .scalar = field.node, let value = field.node.int else {
            report(field, "expected a whole number")
            return nil
        }
        guard range.contains(value) else {
            report(field, "\(value) is out of range \(range.lowerBound)...\(range.upperBound)")
            return nil
        }
        return value
    }

    public func bool(_ field: Field) -> Bool? {
        guard case .scalar = field.node, let value = field.node.bool else {
            report(field, "expected true or false")
            return nil
        }
        return value
    }

    /// A section of declared settings (see `Setting`): each one present is checked and written into `owner`. Keys in
    /// `extra` are allowed too and left to the caller, who gets the section's fields; nil if it is not a mapping.
    public func section<Owner>(
        _ field: Field, _ settings: [Setting<Owner>], extra: Set<String> = [], into owner: inout Owner
    ) -> [String: Field]? {
        guard let fields = mapping(field, keys: Set(settings.map(\.key)).union(extra)) else { return nil }
        apply(settings, from: fields, to: &owner)
        return fields
    }

    /// Checks each declared setting present in `fields` and writes it into `owner`, remembering where it was written.
    public func apply<Owner>(_ settings: [Setting<Owner>], from fields: [String: Field], to owner: inout Owner) {
        for setting in settings {
            guard let field = fields[setting.key] else { continue }
            locations[field.path] = location(of: field)
            switch setting.kind {
            case .number(let path, let range, let names):
                if let name = field.node.string, let value = names.first(where: { $0.key == name })?.value {
                    owner[keyPath: path] = value
                } else if names.isEmpty || field.node.float != nil || field.node.int != nil {
                    if let v = number(field, in: range) { owner[keyPath: path] = v }
                } else {
                    report(field, "expected \(setting.domain)")
                }
            case .integer(let path, let range): if let v = integer(field, in: range) { owner[keyPath: path] = v }
            case .flag(let path): if let v = bool(field) { owner[keyPath: path] = v }
            case .text(let path, let check):
                guard let v = string(field) else { continue }
                if let problem = check?(v) { report(field, problem) } else { owner[keyPath: path] = v }
            case .optionalText(let path):
                if field.node.null != nil {
                    owner[keyPath: path] = nil
                } else if let v = string(field) {
                    owner[keyPath: path] = v
                }
            case .path(_, let write):
                if field.node.null != nil {
                    write(&owner, nil)
                } else if let v = string(field) {
                    write(&owner, resolve(v, in: field))
                }
            case .list(let path, let check):
                guard let items = sequence(field) else { continue }
                owner[keyPath: path] = items.compactMap { item in
                    guard let text = string(item) else { return nil }
                    if let problem = check(text) {
                        report(item, problem)
                        return nil
                    }
                    return text
                }
            case .choice(let choices, _, let write): if let v = choice(field, choices) { write(&owner, v) }
            }
        }
    }

    /// A string that must be one of `choices`.
    public func choice(_ field: Field, _ choices: [String]) -> String? {
        guard let value = string(field) else { return nil }
        guard choices.contains(value) else {
            report(
                field, "\"\(value)\" is not one of \(choices.joined(separator: ", "))" + Self.didYouMean(value, choices)
            )
            return nil
        }
        return value
    }

    /// One of an enumeration's cases, by its raw value.
    public func choice<Choice: CaseIterable & RawRepresentable<String>>(_ field: Field, _: Choice.Type) -> Choice? {
        choice(field, Choice.allCases.map(\.rawValue)).flatMap(Choice.init(rawValue:))
    }
}
