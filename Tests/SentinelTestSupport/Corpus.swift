public import Foundation

/// The fuzz corpus in `Tests/Corpus/<kind>/`: malformed inputs, each with the outcome it must have, listed in the
/// folder's `expected.tsv` (file, exit status or HTTP status, text the output must contain). Every file in the folder
/// has a line and every line a file, so a case cannot be added without its expectation, or silently lost.
public enum Corpus {
    /// A file of the corpus with its line of expected.tsv: its outcome (a status, `ok`, an error's code) and the text
    /// that must appear.
    public struct Line: Sendable, CustomStringConvertible {
        public var file: URL
        public var outcome: String
        public var expected: String
        public var description: String { file.lastPathComponent }
    }

    public struct Case: Sendable, CustomStringConvertible {
        public var file: URL
        public var status: Int
        public var expected: String
        public var description: String { file.lastPathComponent }
    }

    /// Every file of Tests/Corpus/KIND with its line (`#` lines are comments); each file must have a line and each
    /// line a file.
    public static func lines(_ kind: String) throws -> [Line] {
        let folder = Fixtures.root.appendingPathComponent("Tests/Corpus/\(kind)")
        let table = try String(contentsOf: folder.appendingPathComponent("expected.tsv"), encoding: .utf8)
        let lines = try table.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3 else {
                throw CorpusError("Corpus/\(kind)/expected.tsv: \"\(line)\" is not file<TAB>outcome<TAB>text")
            }
            return Line(file: folder.appendingPathComponent(fields[0]), outcome: fields[1], expected: fields[2])
        }
        let listed = Set(lines.map(\.file.lastPathComponent))
        let present = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)).subtracting(["expected.tsv"]
        )
        guard listed == present else {
            throw CorpusError(
                "Corpus/\(kind): files without a line in expected.tsv: \(present.subtracting(listed).sorted()); "
                    + "lines without a file: \(listed.subtracting(present).sorted())")
        }
        return lines
    }

    /// The lines of a corpus whose outcome is a status (an exit status, an HTTP status).
    public static func cases(_ kind: String) throws -> [Case] {
        try lines(kind).map { line in
            guard let status = Int(line.outcome) else {
                throw CorpusError("Corpus/\(kind)/expected.tsv: \(line): \"\(line.outcome)\" is not a status")
            }
            return Case(file: line.file, status: status, expected: line.expected)
        }
    }
}

public struct CorpusError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
