import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelVision
import SentinelVisitors

/// Every declared setting of a pipeline file, with its default, what it may be and what it means, as commented YAML:
/// printed by `sentinel check --reference` and kept as Pipelines/reference.yml (a test holds the two together).
public enum PipelineReference {
    public static var text: String {
        var lines = [
            "# Every tunable setting of a pipeline file beyond its sources and zones, at its default, with what it",
            "# may be and what it means. Generated from the settings' declarations: sentinel check --reference.",
            "# Sources, zones, detector.kind/model/maxFps, emotion.enabled/model, the privacy section's pseudonyms,",
            "# outputs and retention, store.path/group and the server's token files and CORS origins: see README.md.",
            "version: 1",
        ]
        func section<Owner>(_ name: String, _ settings: [Setting<Owner>], _ defaults: Owner, indent: String = "  ") {
            lines.append(String(indent.dropFirst(2)) + name + ":")
            for setting in settings {
                let entry = indent + setting.key + ": " + setting.value(in: defaults)
                let pad = String(repeating: " ", count: max(1, 34 - entry.count))
                lines.append(entry + pad + "# " + setting.help + " (" + setting.domain + ")")
            }
        }
        section("detector", DetectorSettings.settings, .defaults(for: .retinaface))
        section("tracker", TrackerSettings.settings, TrackerSettings())
        section("emotion", EmotionSettings.settings, EmotionSettings())
        section("events", VisitorSettings.settings, VisitorSettings())
        section("gauge", GaugeSettings.settings, GaugeSettings())
        lines.append("privacy:")
        section("review", ReviewSettings.settings, ReviewSettings(), indent: "    ")
        section("store", PipelineDefinition.StoreSettings.settings, PipelineDefinition.StoreSettings(path: ""))
        section("server", PipelineDefinition.ServerSettings.settings, PipelineDefinition.ServerSettings())
        return lines.joined(separator: "\n") + "\n"
    }
}
