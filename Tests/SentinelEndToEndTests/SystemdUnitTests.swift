import Foundation
import SentinelLoopback
import SentinelTestSupport
import Testing

/// The installed unit as Debian's systemd runs it. This machine's PID 1 is not systemd, so the test boots systemd as
/// PID 1 of new PID and mount namespaces (`systemd_boot.sh`, which keeps the host's /tmp, /run, /var and kernel
/// settings out of reach) and drives it with systemctl through nsenter. Making namespaces needs root.
@Suite(
    "The installed unit under systemd", .ownThread, .timeLimit(.minutes(5)),
    .enabled(if: getuid() == 0, "namespaces need root"))
struct SystemdUnitTests {
    @Test(
        "installed with a prefix, the unit starts once the demo serves (Type=notify), runs it under its sandbox as a dynamic user with its camera, its store in the state directory (0600), and stops with status 0"
    )
    func underSystemd() async throws {
        // Where the namespace and the unit both see it, wherever the checkout is: not under /tmp (the namespace's
        // tmpfs and the unit's PrivateTmp hide it), /root or /home (ProtectHome), /run or /var/lib (tmpfs in here).
        let prefix = URL(fileURLWithPath: "/opt/sentinel-unit-tests/\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: prefix) }
        let make = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/make"),
            [
                "--no-print-directory", "install-files", "install-models", "PREFIX=\(prefix.path)",
                "SYSCONFDIR=\(prefix.path)/etc", "UNITDIR=\(prefix.path)/lib/systemd/system",
                "BINARY=\(Fixtures.sentinel.path)",
            ],
            timeout: 300)
        try #require(make.status == 0, "make install-files install-models: \(make.errors)")
        // The operator's one edit: a port of their choosing (a free one here).
        let pipeline = prefix.appendingPathComponent("etc/sentinel/sentinel.yml")
        let port = try await Self.freePort()
        let text = try String(contentsOf: pipeline, encoding: .utf8)
        try #require(text.contains("\n  port: 8080\n"))
        try text.replacingOccurrences(of: "\n  port: 8080\n", with: "\n  port: \(port)\n").write(
            to: pipeline, atomically: true, encoding: .utf8)

        let boot = try await OwnedProcess(
            "/usr/bin/unshare",
            [
                "--pid", "--fork", "--mount", "--mount-proc",
                Fixtures.root.appendingPathComponent("Tests/SentinelTestSupport/systemd_boot.sh").path,
            ], waitForOutput: false)
        let unshare = boot.process.processIdentifier
        guard let pid1 = await Fixtures.onOwnThread({ Self.child(of: unshare) }) else {
            boot.kill()
            Issue.record("systemd did not start")
            return
        }
        // Should the test stop early: SIGKILL to a namespace's init ends every process in it.
        defer { if boot.process.isRunning { kill(pid1, SIGKILL) } }
        func inside(_ arguments: [String]) async throws -> Fixtures.Outcome {
            try await Fixtures.run(
                URL(fileURLWithPath: "/usr/bin/nsenter"), ["-t", "\(pid1)", "-m", "-p"] + arguments, timeout: 60)
        }
        // Booted: until systemd has made /run/systemd/system and its socket, systemctl says "offline" (or nothing);
        // then `--wait` waits for the start-up to finish. A loaded machine (the whole suite on two cores) takes a while.
        func booted() async throws -> String {
            try await inside(["systemctl", "is-system-running", "--wait"]).output
                .trimmingCharacters(in: .whitespacesAndNewlines)
        }
        var system = try await booted()
        let bootDeadline = Date().addingTimeInterval(90)
        while !["running", "degraded"].contains(system) && Date() < bootDeadline {
            try await Task.sleep(for: .milliseconds(250))
            system = try await booted()
        }
        try #require(["running", "degraded"].contains(system), "systemd in the namespace: \(system)")
        let unit = prefix.appendingPathComponent("lib/systemd/system/sentinel.service").path
        let linked = try await inside(["systemctl", "link", "--runtime", unit])
        try #require(linked.status == 0, "\(linked.errors)")
        func journal() async -> String {
            (try? await inside(["journalctl", "-u", "sentinel", "--no-pager", "-o", "cat"]))?.output ?? "no journal"
        }

        // Type=notify: start returns once the service said READY=1, so it serves at once.
        let started = try await inside(["systemctl", "start", "sentinel.service"])
        let startLog = started.status == 0 ? "" : await journal()
        #expect(started.status == 0, "\(started.errors)\n\(startLog)")
        let state = Self.properties(
            try await inside(["systemctl", "show", "sentinel", "-p", "ActiveState,SubState,MainPID"]))
        #expect(state["ActiveState"] == "active" && state["SubState"] == "running", "\(state)")
        let (health, _) = try await LoopbackClient.fetch(port: port, path: "/healthz")
        #expect(health.status != 0, "nothing listens on \(port) once the unit is started")
        // The camera (the demo recording) runs under the sandbox: a visitor comes.
        var present = false
        let deadline = Date().addingTimeInterval(60)
        while !present && Date() < deadline {
            let (head, body) = try await LoopbackClient.fetch(port: port, path: "/api/visitors")
            present = head.status == 200 && String(decoding: body, as: UTF8.self).contains("\"faceId\"")
            if !present { try await Task.sleep(for: .milliseconds(500)) }
        }
        let visitorLog = present ? "" : await journal()
        #expect(present, "no visitor in 60 s: \(visitorLog.suffix(3000))")
        // A dynamic user, not root; its store in the state directory, readable by it alone.
        let owner = try await inside(["stat", "-c", "%U", "/proc/\(state["MainPID"] ?? "0")"]).output
        #expect(owner.hasPrefix("sentinel"), "\(owner)")
        let store = try await inside(["stat", "-c", "%U %a", "/var/lib/private/sentinel/sentinel.sqlite"]).output
        #expect(store.hasPrefix("sentinel 600"), "\(store)")

        // SIGTERM: visits ended, the store flushed, status 0.
        let stopped = try await inside(["systemctl", "stop", "sentinel.service"])
        #expect(stopped.status == 0, "\(stopped.errors)")
        let ended = Self.properties(try await inside(["systemctl", "show", "sentinel", "-p", "Result,ExecMainStatus"]))
        let log = await journal()
        #expect(ended["Result"] == "success" && ended["ExecMainStatus"] == "0", "\(ended)\n\(log)")
        #expect(log.contains("Sentinel is serving \(pipeline.path) on http://127.0.0.1:\(port)"), "\(log)")
        #expect(!log.contains(" error "), "\(log)")
        // Standard input closed: the namespace powers off, systemd and everything in it end.
        let poweredOff = await boot.finish(within: 20)
        #expect(poweredOff, "the namespace did not power off in 20 s")
    }

    /// `systemctl show`'s `Key=value` lines.
    static func properties(_ outcome: Fixtures.Outcome) -> [String: String] {
        Dictionary(
            outcome.output.split(separator: "\n").compactMap { line in
                line.firstIndex(of: "=").map { (String(line[..<$0]), String(line[line.index(after: $0)...])) }
            }, uniquingKeysWith: { $1 })
    }

    /// The process `unshare --fork` started: PID 1 of the new namespace.
    static func child(of pid: Int32) -> Int32? {
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let children = (try? String(contentsOfFile: "/proc/\(pid)/task/\(pid)/children", encoding: .utf8)) ?? ""
            if let child = children.split(separator: " ").first.flatMap({ Int32($0) }) { return child }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return nil
    }

    /// A port nothing listens on now.
    static func freePort() async throws -> Int {
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            ["-c", "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])"],
            timeout: 10)
        return try #require(Int(outcome.output.trimmingCharacters(in: .whitespacesAndNewlines)))
    }
}
