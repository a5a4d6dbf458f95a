import Foundation
import SentinelTestSupport
import Testing

/// What an app team does with the client: depend on its published repository by URL and version, and read a box.
@Suite("the client package, as an app adopts it", .timeLimit(.minutes(10)))
struct ClientPackageTests {
    @Test(
        "make client-repo makes a repository tagged with the API version; a new app resolves it by URL with nothing else pinned, builds, and reads a running server"
    )
    func appResolvesTheClientAlone() async throws {
        let folder = try Fixtures.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let repository = folder.appendingPathComponent("sentinel-client")
        let make = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/make"),
            ["--no-print-directory", "client-repo", "CLIENT_REPO=\(repository.path)"],
            timeout: 60)
        try #require(make.status == 0, "make client-repo: \(make.errors)")
        let document = try JSONSerialization.jsonObject(
            with: Data(contentsOf: Fixtures.root.appendingPathComponent("Sources/SentinelHTTP/openapi.json")))
        let apiVersion = try #require(((document as? [String: Any])?["info"] as? [String: Any])?["version"] as? String)
        let tags = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/git"), ["-C", repository.path, "tag"], timeout: 10)
        #expect(tags.output == "\(apiVersion).0\n")

        // A new app, as the README tells it.
        let app = folder.appendingPathComponent("app")
        try FileManager.default.createDirectory(
            at: app.appendingPathComponent("Sources/App"), withIntermediateDirectories: true)
        try """
        // swift-tools-version:6.0
        import PackageDescription
        let package = Package(
            name: "App",
            dependencies: [.package(url: "\(repository.absoluteString)", from: "\(apiVersion).0")],
            targets: [
                .executableTarget(
                    name: "App", dependencies: [.product(name: "SentinelClient", package: "sentinel-client")])
            ]
        )
        """.write(to: app.appendingPathComponent("Package.swift"), atomically: true, encoding: .utf8)
        try """
        import Foundation
        import SentinelClient

        let box = SentinelClient(url: URL(string: CommandLine.arguments[1])!, token: CommandLine.arguments[2])
        let here = try await box.presentVisitors().visitors
        print("here: \\(here.count), first: \\(here.first?.zone ?? "-")")
        """.write(to: app.appendingPathComponent("Sources/App/main.swift"), atomically: true, encoding: .utf8)
        func swift(_ arguments: [String]) async throws -> Fixtures.Outcome {
            try await Fixtures.run(
                URL(fileURLWithPath: "/usr/bin/env"), ["swift"] + arguments + ["--package-path", app.path],
                timeout: 480)
        }
        let resolved = try await swift(["package", "resolve"])
        try #require(resolved.status == 0, "swift package resolve: \(resolved.output) \(resolved.errors)")
        let pins =
            try #require(
                try JSONSerialization.jsonObject(with: Data(contentsOf: app.appendingPathComponent("Package.resolved")))
                    as? [String: Any])["pins"] as? [[String: Any]]
        #expect(pins?.compactMap { $0["identity"] as? String } == ["sentinel-client"], "\(pins ?? [])")
        #expect((pins?.first?["state"] as? [String: Any])?["version"] as? String == "\(apiVersion).0")
        let built = try await swift(["build"])
        try #require(built.status == 0, "swift build: \(built.output) \(built.errors)")

        let server = try await TestServer(extra: "server: { \(try TestServer.tokenSettings()) }")
        try server.publish(4, visitors: 3)
        let binary = app.appendingPathComponent(".build/debug/App")
        var outcome: Fixtures.Outcome?
        _ = try await server.wait {
            outcome = try await Fixtures.run(
                binary, ["http://127.0.0.1:\(server.port)", TestServer.tokens.visitors], timeout: 30)
            return outcome?.output.hasPrefix("here: 3") == true
        }
        #expect(
            outcome?.status == 0 && outcome?.output == "here: 3, first: display\n", "\(String(describing: outcome))")
        try await server.stop()
    }
}
