public import Foundation
import HTTPTypes
public import Hummingbird
import HummingbirdCore
import Logging
import SentinelCore
import SentinelPrivacy
import SentinelRuntime
import SentinelStore
import ServiceLifecycle

/// Debian's web libraries (`libjs-*`), served as Debian's web packages do from /usr/share/javascript: the dashboard's
/// charts come from `libjs-chart.js` (`/javascript/chart.js/Chart.min.js`), with no CDN and no copy in the project.
enum WebLibrary {
    static let root = URL(fileURLWithPath: "/usr/share/javascript")

    static func file(package: String, name: String) throws -> Response {
        // One folder and one file name, nothing that walks elsewhere.
        let safe = { (part: String) in
            !part.hasPrefix(".") && part.allSatisfy { $0.isLetter || $0.isNumber || "._-".contains($0) }
        }
        let url = root.appendingPathComponent(package).appendingPathComponent(name)
        guard safe(package), safe(name), let data = FileManager.default.contents(atPath: url.path) else {
            throw HTTPError(
                .notFound,
                message: "no \(package)/\(name) in /usr/share/javascript (the charts need Debian's libjs-chart.js)")
        }
        let type =
            name.hasSuffix(".js")
            ? "text/javascript; charset=utf-8" : name.hasSuffix(".css") ? "text/css" : "application/octet-stream"
        return Response(
            status: .ok, headers: [.contentType: type, .cacheControl: "max-age=86400"],
            body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }
}

/// Files shipped with the binary: the OpenAPI document and the dashboard page. Installed, they are in
/// `{prefix}/share/sentinel/web`; from a build, in the resource folder SwiftPM puts beside the executable. Not
/// `Bundle.module`: it falls back to the build's absolute path, so an installation would work only while the build
/// is there, and it stops the process when neither is found.
public enum Resource {
    static let folder =
        Installation.shareDirectory?.appendingPathComponent("web")
        ?? Installation.executable.deletingLastPathComponent().appendingPathComponent(
            "Sentinel_SentinelHTTP.resources")

    public static func url(_ name: String) -> URL { folder.appendingPathComponent(name) }

    /// One of the shipped pages (the dashboard, the zone editor), which only a page of the same origin may frame:
    /// another site's page framing it could lay its own over the camera stills and controls (clickjacking). Both
    /// headers, for browsers that know only the older one.
    public static func page(_ name: String) throws -> Response {
        Response(
            status: .ok,
            headers: [
                .contentType: "text/html; charset=utf-8", .contentSecurityPolicy: "frame-ancestors 'self'",
                HTTPField.Name("X-Frame-Options")!: "SAMEORIGIN",
            ],
            body: .init(byteBuffer: ByteBuffer(bytes: try Data(contentsOf: url(name)))))
    }
}
