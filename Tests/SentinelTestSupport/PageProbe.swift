public import Foundation

/// A page test's browser half: a probe script of Tests/SentinelTestSupport drives Debian's headless Chromium at `url`
/// and prints what the page showed as JSON, decoded here; its screenshot must be a real picture, and is kept where
/// the environment variable `keepAs` names (`make screenshot`, for the README).
public func probePage<Shown: Decodable>(
    _ script: String, url: String, seconds: Int, folder: URL, keepAs: String, as: Shown.Type, extra: [String] = []
) async throws -> Shown {
    let screenshot = folder.appendingPathComponent("\(script).png")
    let outcome = try await Fixtures.run(
        URL(fileURLWithPath: "/usr/bin/python3"),
        [
            Fixtures.root.appendingPathComponent("Tests/SentinelTestSupport/\(script).py").path, url,
            screenshot.path, "\(seconds)",
        ] + extra, timeout: Double(seconds) + 60)
    guard outcome.status == 0 else { throw TestSupportError("\(script).py failed: \(outcome.errors)") }
    let png = try Data(contentsOf: screenshot)
    guard png.starts(with: [0x89, 0x50, 0x4E, 0x47]) && png.count > 20_000 else {
        throw TestSupportError("\(script).py's screenshot is not a real picture (\(png.count) bytes)")
    }
    if let keep = ProcessInfo.processInfo.environment[keepAs] {
        try? FileManager.default.removeItem(atPath: keep)
        try FileManager.default.copyItem(at: screenshot, to: URL(fileURLWithPath: keep))
    }
    return try JSONDecoder().decode(Shown.self, from: Data(outcome.output.utf8))
}
