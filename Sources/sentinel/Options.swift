public import ArgumentParser
import Foundation
import SentinelAssembly
import SentinelConfig
public import SentinelCore
import SentinelEval
import SentinelModels
import SentinelVision

/// The pipeline `run` and `replay` take when none is named: the checkout's demo, else the installation's.
let defaultPipeline: String = {
    let checkout = "Pipelines/showroom.yml"
    guard !FileManager.default.fileExists(atPath: checkout), let share = Installation.shareDirectory else {
        return checkout
    }
    return share.appendingPathComponent("pipelines/showroom.yml").path
}()

/// Where `run` and `fleet` listen and store, over what their file says.
struct ServingOptions: ParsableArguments {
    @Option(help: "Address to listen on (default: the file's server.host, 127.0.0.1).")
    var host: String?

    @Option(help: "Port to listen on, 0-65535 (0: any free port; default: the file's server.port, 8080).")
    var port: Int?

    @Option(
        help: """
            SQLite database (default: the file's store.path; a fleet file's database server first; for a pipeline \
            of the installation, such as its demo, NAME.sqlite in the state directory).
            """)
    var database: String?

    func validate() throws {
        // The range `sentinel check` holds server.port to: a larger value would wrap to another port.
        try checkRange(port, "port", ServerSettings.portRange)
    }

    /// These options, with `database` where none was given.
    func hosting(database fallback: String? = nil) -> HostingOptions {
        var options = HostingOptions()
        options.host = host
        options.port = port
        options.databasePath = database ?? fallback
        return options
    }
}

/// Which face detector to run and how.
struct DetectorOptions: ParsableArguments {
    @Option(help: "Face detector: \(DetectorKind.allCases.map(\.rawValue).joined(separator: ", ")).")
    var detector: DetectorKind = .retinaface

    @Option(help: "Model name from Models/models.yml (default: the detector's own, such as retinaface).")
    var model: String?

    @OptionGroup var tuning: DetectorTuning

    func make(store: ModelStore) throws -> OpenCVFaceDetector {
        try Self.make(detector, model: model, settings: tuning.settings(for: detector), store: store)
    }

    static func make(_ kind: DetectorKind, model: String? = nil, settings: DetectorSettings? = nil, store: ModelStore)
        throws
        -> OpenCVFaceDetector
    {
        let path: String
        do {
            path = try store.path(of: model ?? kind.defaultModel)
        } catch {
            throw CommandError(error.message)
        }
        return try OpenCVFaceDetector(kind: kind, modelPath: path, settings: settings)
    }
}

/// Overrides of a detector's default settings, for tuning.
struct DetectorTuning: ParsableArguments {
    @Option(help: "Downscale frames so their longest side is at most this many pixels before detecting (0: never).")
    var scale: Int?

    @Option(help: "Minimum detection score, 0-1 (defaults: cascade 0.7, centerface and retinaface 0.5, yunet 0.9).")
    var score: Double?

    @Option(help: "Non-maximum suppression IoU threshold.")
    var nms: Double?

    @Option(name: .customLong("min-face"), help: "Smallest face side kept, in pixels of the original frame.")
    var minFace: Double?

    /// The ranges a pipeline file's detector section allows.
    func validate() throws {
        try checkRange(scale, "scale", DetectorSettings.longestSideRange)
        try checkRange(score, "score", DetectorSettings.thresholdRange)
        try checkRange(nms, "nms", DetectorSettings.thresholdRange)
        try checkRange(minFace, "min-face", DetectorSettings.minFaceSizeRange)
    }

    func settings(for kind: DetectorKind) -> DetectorSettings {
        var settings = DetectorSettings.defaults(for: kind)
        if let scale { settings.longestSide = scale }
        if let score { settings.scoreThreshold = score }
        if let nms { settings.nmsThreshold = nms }
        if let minFace { settings.minFaceSize = minFace }
        return settings
    }
}

extension DetectorKind: ExpressibleByArgument {}

extension Pacing: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
extension TrackFile.LabelStudioRole: ExpressibleByArgument {}
