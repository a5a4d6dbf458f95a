public import SentinelCore
import SentinelPrivacy
import SentinelVisitors

/// Every declared setting of a pipeline file, with its default, what it may be and what it means, as commented YAML:
/// printed by `sentinel check --reference` and kept in docs/reference.md (a test holds the two together).
public enum PipelineReference {
    /// The pipeline's own sections, then `appending` (the service's, from `section`).
    public static func text(appending more: [String] = []) -> String {
        let defaults = PipelineDefinition(file: "")
        var lines = [
            "# Every setting of a pipeline file beyond its sources and zones, at its default, with what it may be",
            "# and what it means. Generated from the settings' declarations: sentinel check --reference.",
            "# Sources, zones and the privacy outputs' allowlists are structures: see docs/configuration.md.",
            "version: 1",
        ]
        lines += section("detector", DetectorChoice.settings, defaults.detection)
        lines += section("detector", PipelineDefinition.detectorModelSettings, defaults).dropFirst()
        lines += section("detector", DetectorSettings.settings, defaults.detectorSettings).dropFirst()
        lines += section("tracker", TrackerSettings.settings, defaults.visitors.tracker)
        lines += section("emotion", PipelineDefinition.emotionModelSettings, defaults)
        lines += section("emotion", EmotionSettings.settings, defaults.visitors.emotion).dropFirst()
        lines += calibration()
        lines += section("events", VisitorSettings.settings, defaults.visitors)
        lines += section("gauge", GaugeSettings.settings, defaults.gauge)
        lines += privacy(defaults.privacy)
        return (lines + more).joined(separator: "\n") + "\n"
    }

    /// Each declared setting's value in `definition`, by key (`tracker.minIoU`), as the reference writes it.
    public static func values(of definition: PipelineDefinition) -> [String: String] {
        var values: [String: String] = [:]
        func add<Owner>(_ section: String, _ settings: [Setting<Owner>], _ owner: Owner) {
            for setting in settings { values["\(section).\(setting.key)"] = setting.value(in: owner) }
        }
        add("detector", DetectorChoice.settings, definition.detection)
        add("detector", PipelineDefinition.detectorModelSettings, definition)
        add("detector", DetectorSettings.settings, definition.detectorSettings)
        add("tracker", TrackerSettings.settings, definition.visitors.tracker)
        add("emotion", PipelineDefinition.emotionModelSettings, definition)
        add("emotion", EmotionSettings.settings, definition.visitors.emotion)
        add("events", VisitorSettings.settings, definition.visitors)
        add("gauge", GaugeSettings.settings, definition.gauge)
        return values
    }

    /// `emotion.head` and `emotion.calibration`, commented out: unless a pipeline gives one, the model's own
    /// (Models/models.yml) holds.
    static func calibration() -> [String] {
        let identity = EmotionCalibration.identity
        let head = section("head", PipelineDefinition.headSettings, FileReference(file: "", sha256: ""), indent: "    ")
        let lines =
            section("calibration", EmotionCalibration.settings, identity, indent: "    ")
            + section("scales", EmotionCalibration.scaleSettings, identity, indent: "      ")
            + section("offsets", EmotionCalibration.offsetSettings, identity, indent: "      ")
            + section("valence", EmotionCalibration.valenceSettings, identity, indent: "      ")
            + section(
                "fittedWith", EmotionCalibration.cropSettings, CropRecord(margin: 0.1, align: true, mirror: true),
                indent: "      ")
        return [
            "  # head: the model's own (Models/models.yml) unless given here: a file sentinel eval emotion --fit wrote for",
            "  # a model that names a feature layer, and its sha256. Its crop, alignment and mirror must be this pipeline's.",
        ] + head.map { "  # " + $0.dropFirst(2) } + [
            "  # calibration: for a model without a head, the model's own unless given here; one given here replaces it",
            "  # whole (what it leaves out is as below, the identity). fittedWith, where given, must match the pipeline.",
        ] + lines.map { "  # " + $0.dropFirst(2) }
    }

    /// The `privacy:` section's lines, with its subsections.
    static func privacy(_ policy: PrivacyPolicy) -> [String] {
        section("privacy", PrivacyPolicy.settings, policy)
            + section("pseudonyms", PseudonymSettings.settings, policy.pseudonyms, indent: "    ")
            + section("retention", RetentionPolicy.settings, policy.retention, indent: "    ")
            + section("review", ReviewSettings.settings, policy.review, indent: "    ")
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
