import Foundation
import SentinelCore
import Yams

/// A setting given on the command line (`--set key=value`): written over a file's YAML tree before the tree is read,
/// so it is checked exactly as the same value in the file, and its problems name the `--set` instead of a line.
///
/// Keys are the paths `sentinel check --reference` lists (`tracker.minIoU`, `privacy.retention.days`), with `[n]` for
/// a list's element and `[*]` for every element (`sources[0].zones[*].grace`). Values are YAML (`0.5`, `true`,
/// `bottom`, `[0.2, 0.4]`).
public struct ConfigOverride: Sendable, Equatable, CustomStringConvertible {
    public let key: String
    public let value: String
    let steps: [Step]

    public enum Step: Sendable, Equatable {
        case key(String)
        case index(Int)
        case every
    }

    /// Reads `key=value`; a refusal says what is wrong with the argument.
    public init(_ argument: String) throws(ConfigError) {
        guard let equals = argument.firstIndex(of: "=") else {
            throw Self.problem(argument, "expected key=value, as tracker.minIoU=0.3")
        }
        key = String(argument[..<equals])
        value = String(argument[argument.index(after: equals)...])
        guard let steps = Self.steps(of: key) else {
            throw Self.problem(
                argument, "\"\(key)\" is not a key path, as tracker.minIoU or sources[0].zones[*].grace")
        }
        self.steps = steps
    }

    public var description: String { "--set \(key)=\(value)" }

    static func problem(_ argument: String, _ message: String) -> ConfigError {
        ConfigError(problems: [ConfigProblem(file: "--set \(argument)", path: "", message: message)])
    }

    /// `root` with this value written at the key.
    func apply(to root: Node) throws(ConfigError) -> Node {
        let composed: Node?
        do { composed = try Yams.compose(yaml: value) } catch {
            throw Self.problem("\(key)=\(value)", "the value is not YAML")
        }
        return try write(composed ?? Node("", .init(.null)), at: steps[...], in: root, path: "")
    }

    private func write(_ value: Node, at steps: ArraySlice<Step>, in node: Node?, path: String) throws(ConfigError)
        -> Node
    {
        guard let step = steps.first else { return value }
        let rest = steps.dropFirst()
        switch step {
        case .key(let name):
            var mapping = node?.mapping ?? [:]
            if let node, node.mapping == nil, node != Node("", .init(.null)) {
                throw Self.problem("\(key)=\(self.value)", "\(path.isEmpty ? "the file" : path) is not a mapping")
            }
            let child = path.isEmpty ? name : "\(path).\(name)"
            mapping[name] = try write(value, at: rest, in: mapping[name], path: child)
            return .mapping(mapping)
        case .index(let index):
            guard var sequence = node?.sequence, index < sequence.count else {
                let count = node?.sequence?.count ?? 0
                throw Self.problem(
                    "\(key)=\(self.value)",
                    "\(path) has \(count) element\(count == 1 ? "" : "s"): [\(index)] is beyond it")
            }
            sequence[index] = try write(value, at: rest, in: sequence[index], path: "\(path)[\(index)]")
            return .sequence(sequence)
        case .every:
            guard var sequence = node?.sequence else {
                throw Self.problem("\(key)=\(self.value)", "\(path) is not a list")
            }
            for index in 0..<sequence.count {
                sequence[index] = try write(value, at: rest, in: sequence[index], path: "\(path)[\(index)]")
            }
            return .sequence(sequence)
        }
    }

    /// A key path's steps: names, `[n]` and `[*]`; nil if it is not one.
    static func steps(of key: String) -> [Step]? {
        var steps: [Step] = []
        for part in key.split(separator: ".", omittingEmptySubsequences: false) {
            guard let name = part.split(separator: "[", maxSplits: 1, omittingEmptySubsequences: false).first,
                !name.isEmpty, !name.contains("]")
            else { return nil }
            steps.append(.key(String(name)))
            var rest = part.dropFirst(name.count)
            while rest.hasPrefix("[") {
                guard let close = rest.firstIndex(of: "]") else { return nil }
                let index = rest[rest.index(after: rest.startIndex)..<close]
                if index == "*" {
                    steps.append(.every)
                } else if let number = Int(index), number >= 0 {
                    steps.append(.index(number))
                } else {
                    return nil
                }
                rest = rest[rest.index(after: close)...]
            }
            guard rest.isEmpty else { return nil }
        }
        return steps
    }

    /// Whether `key` is a key path a `--set` may name.
    public static func isKeyPath(_ key: String) -> Bool { steps(of: key) != nil }

    /// Whether a problem at `path` (as the reader writes it: `a.b[2].c`) is about this override's value.
    func covers(_ path: String) -> Bool {
        guard let problem = Self.steps(of: path), problem.count >= steps.count else { return false }
        return zip(steps, problem).allSatisfy { mine, theirs in
            switch (mine, theirs) {
            case (.every, .index): true
            default: mine == theirs
            }
        }
    }
}
