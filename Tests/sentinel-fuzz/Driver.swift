import Foundation

// `sentinel-fuzz TARGET ...`, built two ways:
// - plainly (every build): `sentinel-fuzz TARGET [FILE|FOLDER ...]` reads each file through the target, by default
//   every seed of its corpus: the corpora's regression run in `make test`, which a crash ends with a signal;
// - with `-sanitize=fuzzer,address -DFUZZING` (`make fuzz`): libFuzzer drives the target; the arguments after TARGET
//   are libFuzzer's (corpus folders, -max_total_time=..., ...).
// One executable for every target: one build under the sanitizers, one place that lists them.

/// The target the command line names, and the arguments after it.
func chosenTarget() -> (FuzzTarget, [String]) {
    let arguments = Array(CommandLine.arguments.dropFirst())
    guard let name = arguments.first, let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("usage: sentinel-fuzz TARGET [ARGUMENTS]; targets: \(names)\n".utf8))
        exit(2)
    }
    return (target, Array(arguments.dropFirst()))
}

/// The repository this was built from (the seeds are read from there).
let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent()

/// The files in `paths` (a folder: the files in it whose extension is among `extensions`, or all when none).
func files(in paths: [String], extensions: Set<String> = []) throws -> [String] {
    var files: [String] = []
    for path in paths {
        var folder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &folder) else {
            throw DriverError("\(path): no such file or folder")
        }
        guard folder.boolValue else {
            files.append(path)
            continue
        }
        files += try FileManager.default.contentsOfDirectory(atPath: path).sorted().filter {
            extensions.isEmpty || extensions.contains(URL(fileURLWithPath: $0).pathExtension)
        }.map { path + "/" + $0 }
    }
    return files
}

/// The target's seed files, from its corpus folders.
func seedFiles(_ target: FuzzTarget) throws -> [String] {
    try files(
        in: target.seeds.paths.map { repository.appendingPathComponent($0).path }, extensions: target.seeds.extensions)
}

struct DriverError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

#if FUZZING
    nonisolated(unsafe) var fuzzTarget = FuzzTarget.dates

    @_silgen_name("LLVMFuzzerRunDriver")
    func runFuzzerDriver(
        _ argc: UnsafeMutablePointer<CInt>,
        _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
        _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
    ) -> CInt

    /// The program's entry point under libFuzzer (SwiftPM links an executable's `main` to `<module>_main`). Without a
    /// corpus folder among the arguments, `.build/fuzz/TARGET` is the working corpus (what libFuzzer finds is added
    /// there) and `.build/fuzz/TARGET/seeds` holds a copy of the target's seeds; crashes go to `.build/fuzz/TARGET/`.
    @_cdecl("sentinel_fuzz_main")
    func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> CInt {
        var (target, rest) = chosenTarget()
        fuzzTarget = target
        if !rest.contains(where: { !$0.hasPrefix("-") }) {
            let work = repository.appendingPathComponent(".build/fuzz/\(target.rawValue)")
            let seeds = work.appendingPathComponent("seeds")
            do {
                try? FileManager.default.removeItem(at: seeds)
                try FileManager.default.createDirectory(at: seeds, withIntermediateDirectories: true)
                for file in try seedFiles(target) {
                    let name = URL(fileURLWithPath: file).lastPathComponent
                    try FileManager.default.copyItem(atPath: file, toPath: seeds.appendingPathComponent(name).path)
                }
            } catch {
                FileHandle.standardError.write(Data("sentinel-fuzz: \(error)\n".utf8))
                return 2
            }
            rest += ["-artifact_prefix=\(work.path)/", work.path + "/corpus", seeds.path]
            try? FileManager.default.createDirectory(
                at: work.appendingPathComponent("corpus"), withIntermediateDirectories: true)
        }
        var arguments: [UnsafeMutablePointer<CChar>?] = [argv[0]] + rest.map { strdup($0) } + [nil]
        var count = CInt(rest.count + 1)
        return arguments.withUnsafeMutableBufferPointer { buffer in
            var pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = buffer.baseAddress
            return runFuzzerDriver(&count, &pointer) { data, size in
                fuzzTarget.run(size == 0 ? [] : Array(UnsafeBufferPointer(start: data, count: size)))
                return 0
            }
        }
    }
#else
    @main
    struct Replay {
        static func main() throws {
            let (target, rest) = chosenTarget()
            let inputs = rest.isEmpty ? try seedFiles(target) : try files(in: rest)
            for file in inputs { target.run(Array(try Data(contentsOf: URL(fileURLWithPath: file)))) }
            print("\(target.rawValue): \(inputs.count) inputs read, none crashed")
        }
    }
#endif
