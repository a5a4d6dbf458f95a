public import Foundation

/// Where Sentinel's own files are, whether it runs from a checkout or from an installation (`make install`), so the
/// binary works from any directory.
///
/// An installation is `{prefix}/bin/sentinel` beside `{prefix}/share/sentinel` (the model manifest and converters,
/// the web assets, the schema and the demo); what Sentinel obtains or writes for itself (models) goes to the state
/// directory. A binary with no such share folder beside it runs from a build and finds its files in the checkout.
public enum Installation {
    /// `{prefix}/share/sentinel` of the installation this binary belongs to; nil when it runs from a build.
    public static let shareDirectory: URL? = {
        let share = executable.deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("share/sentinel")
        return FileManager.default.fileExists(atPath: share.appendingPathComponent("models/models.yml").path)
            ? share : nil
    }()

    /// The checkout this binary was built in (the nearest folder above it holding `Package.swift` and
    /// `Models/models.yml`, as `.build/release/sentinel` sits in it); nil when it runs from elsewhere.
    public static let checkout: URL? = {
        var folder = executable.deletingLastPathComponent()
        while folder.path != "/" {
            folder = folder.deletingLastPathComponent()
            if FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path),
                FileManager.default.fileExists(atPath: folder.appendingPathComponent("Models/models.yml").path)
            {
                return folder
            }
        }
        return nil
    }()

    /// The running executable, symlinks resolved (`/proc/self/exe`).
    public static let executable: URL = {
        let path =
            (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]
        return URL(fileURLWithPath: path).standardizedFileURL
    }()

    /// The state directories an installed Sentinel reads, the writable one first: systemd's `$STATE_DIRECTORY`
    /// (`StateDirectory=sentinel` in the unit) when set; otherwise `/var/lib/sentinel` for root, and for anyone else
    /// `$XDG_DATA_HOME/sentinel` (`~/.local/share/sentinel`) followed by `/var/lib/sentinel`, so a user reads what
    /// the administrator set up.
    public static func stateDirectories(environment: [String: String] = ProcessInfo.processInfo.environment)
        -> [URL]
    {
        let system = URL(fileURLWithPath: "/var/lib/sentinel")
        if let state = environment["STATE_DIRECTORY"]?.split(separator: ":").first {
            return [URL(fileURLWithPath: String(state))]
        }
        if getuid() == 0 { return [system] }
        let data =
            environment["XDG_DATA_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.local/share"
        return [URL(fileURLWithPath: data).appendingPathComponent("sentinel"), system]
    }
}
