import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelCore
import SentinelVision

struct Synth: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Render a scene file into sample recordings with ground truth.",
        discussion: """
            Writes NAME-WxH.mp4 and NAME-WxH.truth.json for every size in the scene. The face photos come from \
            Debian packages: run Recordings/fetch-photos.sh first (make setup does).
            """)

    @Argument(help: "Scene file, such as Recordings/showroom.yml.")
    var scene: String

    @Option(help: "Output folder (default: out/ beside the scene file).")
    var output: String?

    func run() throws {
        let spec: SceneSpec
        do {
            spec = try SceneSpec.load(scene)
        } catch {
            throw CommandError(error.message)
        }
        let folder = URL(fileURLWithPath: scene).deletingLastPathComponent()
        let out = output.map { URL(fileURLWithPath: $0) } ?? folder.appendingPathComponent("out")
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        let renderer = SceneRenderer(spec: spec, folder: folder)
        for size in spec.sizes {
            let video = out.appendingPathComponent(renderer.baseName(width: size[0], height: size[1]) + ".mp4")
            let truth = try renderer.render(width: size[0], height: size[1], video: video)
            let faces = truth.frames.reduce(0) { $0 + $1.faces.count }
            print("\(video.path): \(truth.frames.count) frames, \(truth.visitors.count) visitors, \(faces) face boxes")
        }
    }
}
