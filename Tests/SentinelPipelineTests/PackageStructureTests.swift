import Foundation
import SentinelTestSupport
import Testing

/// Package.swift and the imports agree. SwiftPM's own check (`--explicit-target-dependency-import-check error`, on in
/// the Makefile's builds) covers only this package's targets reached by no declared path; a product used through
/// another target's dependency, or one declared and never used, it lets pass.
@Suite("Package.swift declares what each target imports, and nothing more", .ownThread)
struct PackageStructureTests {
    /// Modules of the toolchain and the system, never declared.
    static let system: Set<String> = [
        "Foundation", "FoundationEssentials", "FoundationNetworking", "Dispatch", "Synchronization", "Glibc", "Musl",
        "Testing", "XCTest", "RegexBuilder", "_Concurrency", "Darwin",
    ]

    /// The modules a file imports: its leading lines only (imports inside string literals are text).
    static func imports(_ text: String) -> Set<String> {
        var modules: Set<String> = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.isEmpty || trimmed.hasPrefix("//") || trimmed.hasPrefix("#") { continue }
            let words = trimmed.split(separator: " ").filter {
                !$0.hasPrefix("@") && !["public", "package", "internal", "private", "fileprivate"].contains($0)
            }
            guard words.first == "import", words.count >= 2 else { break }
            let kinds: Set<Substring> = ["struct", "class", "enum", "func", "protocol", "typealias", "var", "let"]
            let path = kinds.contains(words[1]) && words.count > 2 ? words[2] : words[1]
            modules.insert(String(path.split(separator: ".")[0]))
        }
        return modules
    }

    /// The targets as `swift package dump-package` describes them.
    static func targets() async throws -> [[String: Any]] {
        // A scratch folder of its own: the test run holds the package's .build.
        let scratch = try Fixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let dump = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/env"), ["swift", "package", "--scratch-path", scratch.path, "dump-package"],
            timeout: 300)
        try #require(dump.status == 0, "\(dump.errors)")
        let package = try #require(
            try JSONSerialization.jsonObject(with: Data(dump.output.utf8)) as? [String: Any])
        return try #require(package["targets"] as? [[String: Any]])
    }

    /// A target's dependencies by name (targets and products alike).
    static func dependencies(of target: [String: Any]) -> Set<String> {
        Set(
            (target["dependencies"] as? [[String: Any]] ?? []).compactMap { dependency in
                dependency.values.first.flatMap { ($0 as? [Any])?.first as? String }
            })
    }

    @Test(
        "docs/layout.md's layer table holds every target in Sources/ (and the fuzz targets) once, and each imports only from layers below its own"
    )
    func layers() async throws {
        let text = try String(contentsOf: Fixtures.root.appendingPathComponent("docs/layout.md"), encoding: .utf8)
        var layer: [String: Int] = [:]
        for row in text.split(separator: "\n") {
            guard let match = row.firstMatch(of: /^\| (\d+) [a-z ]+ \| (.*) \|$/), let number = Int(match.1) else {
                continue
            }
            for name in match.2.matches(of: /`([A-Za-z-]+)`/).map({ String($0.1) }) where name != "SentinelWire" {
                #expect(layer.updateValue(number, forKey: name) == nil, "\(name) is in two layers")
            }
        }
        let sources = try FileManager.default.contentsOfDirectory(atPath: Fixtures.root.path + "/Sources")
        #expect(Set(layer.keys) == Set(sources + ["sentinel-fuzz"]), "the table and Sources/ differ")
        for target in try await Self.targets() {
            guard let name = target["name"] as? String, let own = layer[name] else { continue }
            for dependency in Self.dependencies(of: target) {
                guard let theirs = layer[dependency] else { continue }
                #expect(theirs < own, "\(name) (layer \(own)) imports \(dependency) (layer \(theirs))")
            }
        }
    }

    @Test(
        "every module a target imports is declared in Package.swift (targets and products alike), and every declared one is imported"
    )
    func dependenciesMatchImports() async throws {
        let targets = try await Self.targets()
        var checked = 0
        var dependencies: [String: Set<String>] = [:]
        for target in targets {
            let name = try #require(target["name"] as? String)
            let kind = target["type"] as? String
            guard kind != "system", kind != "binary" else { continue }
            let folder = Fixtures.root.appendingPathComponent(
                target["path"] as? String ?? (kind == "test" ? "Tests/\(name)" : "Sources/\(name)"))
            let declared = Self.dependencies(of: target)
            var imported: Set<String> = []
            let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
            while let file = files?.nextObject() as? URL {
                guard file.pathExtension == "swift" else { continue }
                imported.formUnion(Self.imports(try String(contentsOf: file, encoding: .utf8)))
            }
            dependencies[name] = declared
            imported.subtract(Self.system)
            imported.remove(name)
            guard !imported.isEmpty || !declared.isEmpty else { continue }
            checked += 1
            #expect(
                imported.subtracting(declared).isEmpty,
                "\(name) imports \(imported.subtracting(declared).sorted()) without declaring them in Package.swift")
            #expect(
                declared.subtracting(imported).isEmpty,
                "\(name) declares \(declared.subtracting(imported).sorted()) in Package.swift and imports none of them")
        }
        #expect(checked > 20, "only \(checked) targets read: the dump's format changed?")
        // Reading a pipeline file and scoring against labels are pure logic: neither links OpenCV, by any path.
        for room in ["SentinelConfig", "SentinelEval"] {
            var reached: Set<String> = []
            var next = dependencies[room] ?? []
            while let module = next.popFirst() {
                guard reached.insert(module).inserted else { continue }
                next.formUnion(dependencies[module] ?? [])
            }
            #expect(!reached.contains("CSentinelCV"), "\(room) reaches the OpenCV bridge: \(reached.sorted())")
        }
    }

    /// The names a module's code declares for others: its public and package declarations (enum cases included), and
    /// every member of a public or package extension. More than it exports, never less: so an import is reported
    /// unused only when a file names nothing of them.
    static func exported(by folder: URL) throws -> Set<String> {
        let declaration =
            /\b(?:public|package|open)\s+(?:(?:static|final|override|mutating|nonisolated|convenience|required|class|indirect|lazy)\s+)*(?:struct|class|enum|protocol|actor|typealias|func|var|let|init|subscript|case)\s+([A-Za-z_]\w*)/
        var names: Set<String> = []
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: nil)
        while let file = files?.nextObject() as? URL {
            guard file.pathExtension == "swift" else { continue }
            let text = try String(contentsOf: file, encoding: .utf8)
            names.formUnion(text.matches(of: declaration).map { String($0.1) })
            names.formUnion(text.matches(of: /(?m)^\s*case\s+([a-z_]\w*)/).map { String($0.1) })
            if text.contains("public extension") || text.contains("package extension") {
                names.formUnion(text.matches(of: /\b(?:func|var|let)\s+([A-Za-z_]\w*)/).map { String($0.1) })
            }
        }
        return names
    }

    @Test(
        "no file imports one of the package's own modules and names nothing it declares (ZoneEditor imported SentinelServer and used none of it)"
    )
    func noUnusedImports() throws {
        let root = Fixtures.root
        var folders: [String: URL] = ["SentinelWire": root.appendingPathComponent("Client/Sources/SentinelWire")]
        for name in try FileManager.default.contentsOfDirectory(atPath: root.path + "/Sources") {
            folders[name] = root.appendingPathComponent("Sources/\(name)")
        }
        for name in ["SentinelLoopback", "SentinelTestSupport"] {
            folders[name] = root.appendingPathComponent("Tests/\(name)")
        }
        let exported = try folders.mapValues { try Self.exported(by: $0) }
        var checked = 0
        for top in ["Sources", "Tests"] {
            let files = FileManager.default.enumerator(
                at: root.appendingPathComponent(top), includingPropertiesForKeys: nil)
            while let file = files?.nextObject() as? URL {
                guard file.pathExtension == "swift" else { continue }
                let text = try String(contentsOf: file, encoding: .utf8)
                let body = text.split(separator: "\n", omittingEmptySubsequences: false)
                    .filter { !$0.contains("import ") }.joined(separator: "\n")
                let words = Set(body.split { !($0.isLetter || $0.isNumber || $0 == "_") }.map(String.init))
                for module in Self.imports(text) {
                    // A C bridge declares in C: not read here.
                    guard let names = exported[module], !names.isEmpty else { continue }
                    checked += 1
                    let used = !names.isDisjoint(with: words)
                    #expect(
                        used,
                        "\(file.path.dropFirst(root.path.count + 1)) imports \(module) and names nothing it declares")
                }
            }
        }
        #expect(checked > 300, "only \(checked) imports checked")
    }
}
