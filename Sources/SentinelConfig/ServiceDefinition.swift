import Foundation
import SentinelCore

/// A pipeline file as `sentinel run` serves it: the pipeline, and the `store:` and `server:` sections, each read by
/// its owner's declarations, with every problem reported by file, line and field together.
public struct ServiceDefinition: Sendable {
    public var pipeline: PipelineDefinition
    public var store: StoreSettings
    public var server = ServerSettings()
    /// Where the event log is forwarded besides SSE (`outputs.mqtt`).
    public var mqtt: MQTTSettings?
    /// Where `store.group` was written, for the message when this machine has no such group.
    package var groupLocation: ConfigProblem?

    public static func load(_ path: String, overrides: [ConfigOverride] = []) throws(ConfigError) -> ServiceDefinition {
        try read(file: path) { sections throws(ConfigError) in
            try PipelineDefinition.load(path, sections: sections, overrides: overrides)
        }
    }

    public static func parse(_ text: String, file: String) throws(ConfigError) -> ServiceDefinition {
        try read(file: file) { sections throws(ConfigError) in
            try PipelineDefinition.parse(text, file: file, sections: sections)
        }
    }

    private static func read(
        file: String,
        pipeline: ([String: PipelineDefinition.SectionReader]) throws(ConfigError) -> PipelineDefinition
    ) throws(ConfigError) -> ServiceDefinition {
        var store = StoreSettings(beside: file)
        var server = ServerSettings()
        var mqtt: MQTTSettings?
        var groupLocation: ConfigProblem?
        let definition = try pipeline([
            "store": { field, reader in
                _ = reader.section(field, StoreSettings.settings, into: &store)
                groupLocation = reader.locations["store.group"]
            },
            "server": { field, reader in server.read(field, reader) },
            "outputs": { field, reader in
                guard let outputs = reader.mapping(field, keys: ["mqtt"]), let section = outputs["mqtt"] else { return }
                mqtt = MQTTSettings.read(section, reader)
            },
        ])
        return ServiceDefinition(
            pipeline: definition, store: store, server: server, mqtt: mqtt, groupLocation: groupLocation)
    }

    /// Every tunable setting of a pipeline file that `sentinel run` serves, as commented YAML (see
    /// `PipelineReference`).
    public static var reference: String {
        let example = MQTTSettings(url: "mqtt://127.0.0.1", site: "{site}")
        return PipelineReference.text(
            appending: PipelineReference.section("store", StoreSettings.settings, StoreSettings(path: ""))
                + PipelineReference.section("server", ServerSettings.settings, ServerSettings())
                + [
                    "# Forwarding by MQTT is off until outputs.mqtt gives a url and a site (see docs/api.md):",
                    "# outputs:",
                ]
                + (PipelineReference.section("mqtt", MQTTSettings.settings, example, indent: "    ")
                + PipelineReference.section("mqtt", MQTTConnection.settings, example.connection, indent: "    ")
                .dropFirst()).map { "# " + $0 })
    }
}
