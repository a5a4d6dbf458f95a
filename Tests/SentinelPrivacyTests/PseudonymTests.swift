import Foundation
import SentinelCore
import SentinelWire
import Testing

@testable import SentinelPrivacy

/// A clock the test moves by hand.
final class ManualClock: @unchecked Sendable {
    var now: Date
    init(_ now: Date) { self.now = now }
    var read: @Sendable () -> Date { { [unowned self] in self.now } }
}

func visitorEvent(_ type: VisitorEvent.Kind, id: String, at time: Date = Date(timeIntervalSince1970: 1_700_000_000.123))
    -> VisitorEvent
{
    VisitorEvent(
        type: type, time: time,
        visitor: VisitorRecord(
            faceId: id, sourceId: "cam", zone: "display", state: type == .exited ? .exited : .active,
            zones: [.init(zone: "display", dwellSeconds: 2.5)], dwellSeconds: 4.25,
            firstSeen: time.addingTimeInterval(-4.25),
            lastSeen: time, emotion: .known(.happy), emotionConfidence: 0.8,
            emotionDistribution: ["happy": 0.8, "neutral": 0.2],
            valence: 0.8, box: Box(x: 101.5, y: 52, width: 64, height: 70), detectionScore: 0.93),
        stay: .init(zone: "display", enteredAt: time.addingTimeInterval(-2.5)), reason: type == .exited ? .lost : nil,
        mediaTime: 12.4)
}

@Suite("Pseudonymous ids")
struct PseudonymTests {
    let day = 86_400.0
    let start = Date(timeIntervalSince1970: 20_000 * 86_400 + 3_600)

    @Test("an id is stable within a key period, different for different visits, and never the internal id")
    func stableWithinPeriod() throws {
        let clock = ManualClock(start)
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: try PseudonymKeyRing(clock: clock.read))
        let a = try mask.pseudonym(of: "cam#1#1")
        clock.now += 3_600
        #expect(try mask.pseudonym(of: "cam#1#1") == a)
        #expect(try mask.pseudonym(of: "cam#1#2") != a)
        #expect(a.count == 16 && a.allSatisfy { $0.isLowercase || ("2"..."7").contains($0) })
        #expect(!a.contains("cam") && !a.contains("#"))
    }

    @Test("ids of the same visits after a rotation share nothing with those before it")
    func rotationUnlinks() throws {
        let clock = ManualClock(start)
        let keys = try PseudonymKeyRing(clock: clock.read)
        let ids = (1...300).map { "cam#1700000000000#\($0)" }
        var before = PrivacyMask(policy: PrivacyPolicy(), keys: keys)
        let first = try ids.map { try before.pseudonym(of: $0) }
        clock.now += day
        var after = PrivacyMask(policy: PrivacyPolicy(), keys: keys)
        let second = try ids.map { try after.pseudonym(of: $0) }
        #expect(Set(first).isDisjoint(with: second))
        #expect(Set(first).count == ids.count)
        // Independent keys: each pair differs in about half of its 80 bits, as two random ids would.
        func bits(_ text: String) -> [Bool] {
            let alphabet = Array("abcdefghijklmnopqrstuvwxyz234567")
            return text.flatMap { c in (0..<5).reversed().map { (alphabet.firstIndex(of: c)! >> $0) & 1 == 1 } }
        }
        let distances = zip(first, second).map { a, b in zip(bits(a), bits(b)).filter { $0 != $1 }.count }
        let mean = Double(distances.reduce(0, +)) / Double(distances.count)
        #expect(abs(mean - 40) < 2, "mean Hamming distance \(mean) of 80 bits")
    }

    @Test("a visit open across a rotation keeps its id; the old key is forgotten when it exits")
    func openVisitSpansRotation() throws {
        let clock = ManualClock(start)
        let keys = try PseudonymKeyRing(clock: clock.read)
        var mask = PrivacyMask(policy: PrivacyPolicy(), keys: keys)
        let entered = try mask.mask(visitorEvent(.entered, id: "cam#1#7")).published
        clock.now += day
        let updated = try mask.mask(visitorEvent(.updated, id: "cam#1#7")).published
        #expect(updated.event.visitor.faceId == entered.event.visitor.faceId)
        #expect(keys.heldKeys == 1)
        let exited = try mask.mask(visitorEvent(.exited, id: "cam#1#7")).published
        #expect(exited.event.visitor.faceId == entered.event.visitor.faceId)
        // Nothing open uses the old period's key any more: it is gone, and nothing can recompute those ids.
        #expect(keys.heldKeys == 0)
        // The same internal id now belongs to the new period.
        #expect(try mask.pseudonym(of: "cam#1#7") != entered.event.visitor.faceId)
        #expect(keys.heldKeys == 1)
    }

    @Test("a key file is private (0600), keeps ids across a restart, and is replaced at rotation")
    func keyFile() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("sentinel-key-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        var settings = PseudonymSettings()
        settings.keyFile = folder.appendingPathComponent("pseudonym.key").path
        let clock = ManualClock(start)
        var first = PrivacyMask(
            policy: PrivacyPolicy(), keys: try PseudonymKeyRing(settings: settings, clock: clock.read))
        let id = try first.pseudonym(of: "cam#1#1")
        let mode = try FileManager.default.attributesOfItem(atPath: settings.keyFile!)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        clock.now += 3_600
        var restarted = PrivacyMask(
            policy: PrivacyPolicy(), keys: try PseudonymKeyRing(settings: settings, clock: clock.read))
        #expect(try restarted.pseudonym(of: "cam#1#1") == id)

        let before = try Data(contentsOf: URL(fileURLWithPath: settings.keyFile!))
        clock.now += day
        var rotated = PrivacyMask(
            policy: PrivacyPolicy(), keys: try PseudonymKeyRing(settings: settings, clock: clock.read))
        #expect(try rotated.pseudonym(of: "cam#1#1") != id)
        #expect(try Data(contentsOf: URL(fileURLWithPath: settings.keyFile!)) != before)

        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: settings.keyFile!)
        let error = #expect(throws: PrivacyError.self) { try PseudonymKeyRing(settings: settings, clock: clock.read) }
        #expect(
            error?.message.contains("pseudonym.key is readable by others (mode 644)") == true,
            "\(String(describing: error))")
    }
}
