import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelVision
import SentinelVisitors

/// Every declared setting of a pipeline file, with its default, what it may be and what it means, as commented YAML:
/// printed by `sentinel check --reference` and kept as Pipelines/reference.yml (a test holds the two together).
public enum PipelineReference {
    /// The pipeline's own sections, then `appending` (the service's, from `section`).
    public static func text(appending more: [String] = []) -> String {
        var lines = [
            "# Every tunable setting of a pipeline file beyond its sources and zones, at its default, with what it",
            "# may be and what it means. Generated from the settings' declarations: sentinel check --reference.",
            "# Sources, zones, detector.model, emotion.enabled/model, the privacy section's pseudonyms",
            "# and outputs, store.path/group and the server's token files and CORS origins: see README.md.",
            "version: 1",
        ]
        lines += section("detector", DetectorChoice.settings, DetectorChoice())
        lines += section("detector", DetectorSettings.settings, .defaults(for: DetectorChoice().kind)).dropFirst()
        lines += section("tracker", TrackerSettings.settings, TrackerSettings())
        lines += section("emotion", EmotionSettings.settings, EmotionSettings())
        lines += section("events", VisitorSettings.settings, VisitorSettings())
        lines += section("gauge", GaugeSettings.settings, GaugeSettings())
        lines += section("privacy", PrivacyPolicy.settings, PrivacyPolicy())
        lines += section("retention", RetentionPolicy.settings, RetentionPolicy(), indent: "    ")
        lines += section("review", ReviewSettings.settings, ReviewSettings(), indent: "    ")
        return (lines + more).joined(separator: "\n") + "\n"
    }

    /// A section's lines: each declared setting at its value in `defaults`, with its help and domain.
    public static func section<Owner>(
        _ name: String, _ settings: [Setting<Owner>], _ defaults: Owner, indent: String = "  "
    ) -> [String] {
        [String(indent.dropFirst(2)) + name + ":"]
            + settings.map { setting in
                let entry = indent + setting.key + ": " + setting.value(in: defaults)
                let pad = String(repeating: " ", count: max(1, 34 - entry.count))
                return entry + pad + "# " + setting.help + " (" + setting.domain + ")"
            }
    }
}
