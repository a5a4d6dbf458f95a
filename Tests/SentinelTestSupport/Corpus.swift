public import Foundation

/// The fuzz corpus in `Tests/Corpus/<kind>/`: malformed inputs, each with the outcome it must have, listed in the
/// folder's `expected.tsv` (file, exit status or HTTP status, text the output must contain). Every file in the folder
/// has a line and every line a file, so a case cannot be added without its expectation, or silently lost.
public enum Corpus {
    public struct Case: Sendable, CustomStringConvertible {
        public var file: URL
        public var status: Int
        public var expected: String
        public var description: String { file.lastPathComponent }
    }

    public static func cases(_ kind: String) throws -> [Case] {
        let folder = Fixtures.root.appendingPathComponent("Tests/Corpus/\(kind)")
        let table = try String(contentsOf: folder.appendingPathComponent("expected.tsv"), encoding: .utf8)
        let cases = try table.split(separator: "\n").filter { !$0.hasPrefix("#") }.map { line in
            let fields = line.split(separator: "\t", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
            guard fields.count == 3, let status = Int(fields[1]) else {
                throw CorpusError("Corpus/\(kind)/expected.tsv: \"\(line)\" is not file<TAB>status<TAB>text")
            }
            return Case(file: folder.appendingPathComponent(fields[0]), status: status, expected: fields[2])
        }
        let listed = Set(cases.map(\.file.lastPathComponent))
        let present = Set(try FileManager.default.contentsOfDirectory(atPath: folder.path)).subtracting(["expected.tsv"]
        )
        guard listed == present else {
            throw CorpusError(
                "Corpus/\(kind): files without a line in expected.tsv: \(present.subtracting(listed).sorted()); "
                    + "lines without a file: \(listed.subtracting(present).sorted())")
        }
        return cases
    }
}

public struct CorpusError: Error, CustomStringConvertible {
    public let description: String
    init(_ description: String) { self.description = description }
}
