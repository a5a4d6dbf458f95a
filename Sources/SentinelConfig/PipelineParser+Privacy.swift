import Foundation
import SentinelAggregates
import SentinelCore
import SentinelPrivacy
import SentinelVision
import SentinelVisitors
import Yams

extension PipelineParser {
    func privacy(
        _ field: Field, _ policy: inout PrivacyPolicy, outputs: [PrivacyPolicy.Output] = PrivacyPolicy.Output.allCases
    ) {
        guard
            let fields = reader.section(
                field, PrivacyPolicy.settings, extra: ["pseudonyms", "retention", "outputs", "review"], into: &policy)
        else { return }
        if let f = fields["pseudonyms"] { _ = reader.section(f, PseudonymSettings.settings, into: &policy.pseudonyms) }
        if let f = fields["retention"] { _ = reader.section(f, RetentionPolicy.settings, into: &policy.retention) }
        if let f = fields["outputs"], let lists = reader.mapping(f, keys: Set(outputs.map(\.rawValue))) {
            // In declaration order: the event log's list (events) is known when MQTT's is checked against it.
            for output in outputs {
                guard let field = lists[output.rawValue] else { continue }
                policy.outputs[output] = allowlist(
                    field, within: PrivacyPolicy.Output.masked.contains(output) ? nil : policy.outputs[.events])
            }
        }
        if let f = fields["review"] { _ = reader.section(f, ReviewSettings.settings, into: &policy.review) }
    }

    /// `{allow: [...], deny: [...]}`: fields added to or taken from the strict default allowlist. An output made from
    /// the event log cannot allow a field the log does not hold (`within`, the events output's list).
    private func allowlist(_ field: Field, within log: Set<PublishedField>?) -> Set<PublishedField> {
        var fields = PublishedField.defaults
        guard let lists = reader.mapping(field, keys: ["allow", "deny"]) else { return fields }
        let known = PublishedField.allCases.map(\.rawValue)
        let core = ["type", "time", "visitor.faceId", "visitor.sourceId", "visitor.zone", "visitor.state"]
        func names(_ key: String) -> [PublishedField] {
            guard let list = lists[key].flatMap(reader.sequence) else { return [] }
            return list.compactMap { item in
                guard let name = reader.string(item) else { return nil }
                if core.contains(name) {
                    reader.report(item, "\"\(name)\" is a core field: every event carries it")
                    return nil
                }
                guard let field = PublishedField(rawValue: name) else {
                    reader.report(item, "unknown field \"\(name)\"; fields are \(known.joined(separator: ", "))")
                    return nil
                }
                if key == "allow", let log, !log.contains(field) {
                    reader.report(
                        item,
                        "\"\(name)\" is not in the event log this output forwards: allow it in privacy.outputs.events too"
                    )
                    return nil
                }
                return field
            }
        }
        fields.formUnion(names("allow"))
        fields.subtract(names("deny"))
        return fields
    }
}
