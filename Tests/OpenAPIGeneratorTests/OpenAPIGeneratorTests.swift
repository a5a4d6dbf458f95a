import Foundation
import Testing
import _OpenAPIGeneratorCore

/// What an app team gets when it points apple/swift-openapi-generator at the box's `openapi.json`.
@Suite("openapi.json through swift-openapi-generator")
struct OpenAPIGeneratorTests {
    final class Collected: DiagnosticCollector, @unchecked Sendable {
        var diagnostics: [Diagnostic] = []
        func emit(_ diagnostic: Diagnostic) { diagnostics.append(diagnostic) }
    }

    static let document = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .appendingPathComponent("../../Sources/SentinelHTTP/openapi.json").standardizedFileURL

    static func generate(_ mode: GeneratorMode) throws -> (code: String, diagnostics: [Diagnostic]) {
        let collected = Collected()
        let output = try runGenerator(
            input: InMemoryInputFile(absolutePath: document, contents: try Data(contentsOf: document)),
            config: Config(mode: mode, access: .public, namingStrategy: .idiomatic), diagnostics: collected)
        return (
            output.map { String(decoding: $0.contents, as: UTF8.self) }.joined(separator: "\n"), collected.diagnostics
        )
    }

    @Test("types and a client are generated without a warning: named operations, schemas, the payload oneOf, emotions")
    func generates() throws {
        let types = try Self.generate(.types)
        let client = try Self.generate(.client)
        let complaints = (types.diagnostics + client.diagnostics).filter { $0.severity != .note }
        #expect(complaints.isEmpty, "\(complaints.map(\.description))")
        // Every operation by the name the document gives it, every response and event a named type.
        for operation in [
            "streamEvents", "listVisitors", "getVisitor", "getSentiment", "listZones", "getReport", "getHealth",
            "getMetrics", "getOpenAPIDocument",
        ] {
            #expect(client.code.contains("func \(operation)("), "\(operation)")
        }
        for schema in [
            "VisitorPage", "VisitorDetail", "SentimentHistory", "ZoneList", "ServiceHealth", "Report", "Envelope",
            "VisitorEnvelope", "GaugeEnvelope", "VisitorEvent", "GaugeReading", "StreamNotice", "Emotion",
        ] {
            #expect(types.code.contains("struct \(schema)") || types.code.contains("enum \(schema)"), "\(schema)")
        }
        // The payload is told apart by payloadType, and an emotion is one of the classes.
        #expect(types.code.contains("case visitor_entered(Components.Schemas.VisitorEnvelope)"))
        #expect(types.code.contains("case sentiment_gauge(Components.Schemas.GaugeEnvelope)"))
        #expect(types.code.contains("forKey: .payloadType"))
        #expect(types.code.contains("case happy = \"happy\""))
    }
}
