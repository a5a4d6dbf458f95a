import Foundation
import SentinelCore
import SentinelPrivacy
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
            // Each output is cut from another (the published copy from the store's, MQTT's from the event log), so
            // the list it is cut from is read first and an allow that list does not hold is refused: it could have
            // no effect.
            for output in outputs.sorted(by: { $0.depth < $1.depth }) {
                guard let field = lists[output.rawValue] else { continue }
                policy.outputs[output] = allowlist(
                    field, of: output, within: output.cutFrom.map { (source: $0, fields: policy.outputs[$0] ?? []) })
            }
        }
        if let f = fields["review"] { _ = reader.section(f, ReviewSettings.settings, into: &policy.review) }
    }

    /// `{allow: [...], deny: [...]}`: fields added to or taken from the strict default allowlist. An output cut from
    /// another cannot allow a field that one does not hold (`within`: its name and list).
    private func allowlist(
        _ field: Field, of output: PrivacyPolicy.Output,
        within cut: (source: PrivacyPolicy.Output, fields: Set<PublishedField>)?
    ) -> Set<PublishedField> {
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
                if key == "allow", let cut, !cut.fields.contains(field) {
                    let what =
                        cut.source == .store
                        ? "the store does not keep it, and what is published is cut from what is stored"
                        : "it is not in the event log this output forwards"
                    reader.report(
                        item,
                        "\"\(name)\" cannot be allowed in privacy.outputs.\(output.rawValue): \(what); allow it in "
                            + "privacy.outputs.\(cut.source.rawValue) too")
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
