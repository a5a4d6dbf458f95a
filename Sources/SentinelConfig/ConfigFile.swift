import Foundation
import SentinelCore
import SentinelPrivacy
import SentinelVisitors
import Yams

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
