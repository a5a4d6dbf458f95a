import Foundation
public import SentinelCore
public import SentinelModels
import SentinelWire

extension PipelineDefinition {
    /// Problems that depend on this machine: missing models, a head or calibration that does not fit the emotion model
    /// or the pipeline, missing inputs, pixel zones outside the frame. `frameSize` reads a video file's frame size
    /// (SentinelVision's `VideoFileSource.frameSize(of:)`) and `openClassifier` loads the emotion model as its
    /// description says, failing on a feature layer it lacks or of another size (`FaceClassifier.open`): parsing and
    /// checking a pipeline file do not open videos or networks themselves.
    public func environmentProblems(
        models: ModelStore, frameSize: (String) throws -> (width: Int, height: Int),
        openClassifier: (String, ClassifierDescription) throws -> Void
    ) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        func at(_ key: String, _ fallback: String, _ message: String) -> ConfigProblem {
            var problem = locations[key] ?? ConfigProblem(file: file, path: fallback, message: "")
            problem.message = message
            return problem
        }
        let detectorModel = resolvedDetectorModel
        if let entry = models.manifest.entry(named: detectorModel), entry.kind.rawValue != detection.kind.rawValue {
            problems.append(
                at(
                    "detector.model", "detector",
                    "model \(detectorModel) is a \(entry.kind.rawValue) model, not one the \(detection.kind.rawValue) detector reads"
                ))
        } else {
            do { _ = try models.path(of: detectorModel) } catch {
                problems.append(at("detector.model", "detector", error.message))
            }
        }
        if emotionEnabled {
            do throws(ModelError) {
                let path = try models.path(of: emotionModel)
                let description = try models.classifier(named: emotionModel)
                do { try openClassifier(path, description) } catch {
                    throw ModelError(.manifest, "model \(emotionModel): \(error)")
                }
                _ = try emotionReadout(models: models)
            } catch {
                problems.append(at("emotion.model", "emotion", error.message))
            }
        }

        for source in sources {
            let input = at("source.\(source.id).input", "sources", "")
            switch SourceSpec(source.resolvedInput) {
            case .live:
                continue
            case .folder:
                continue
            case .file(let path):
                guard FileManager.default.fileExists(atPath: path) else {
                    problems.append(at("source.\(source.id).input", "sources", "no such file: \(path)"))
                    continue
                }
                do {
                    let video = try frameSize(path)
                    for zone in source.zones where zone.units == .pixels {
                        let outside = zone.polygon.vertices.filter {
                            $0.x > Double(video.width) || $0.y > Double(video.height)
                        }
                        if let point = outside.first {
                            problems.append(
                                at(
                                    "source.\(source.id).zone.\(zone.name)", input.path,
                                    "zone \(zone.name): point [\(point.x), \(point.y)] is outside the \(video.width)x\(video.height) frame"
                                ))
                        }
                    }
                } catch {
                    problems.append(
                        at("source.\(source.id).input", "sources", (error as? any SentinelError)?.message ?? "\(error)")
                    )
                }
            }
        }
        return problems
    }
}
