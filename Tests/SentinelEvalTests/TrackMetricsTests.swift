import Foundation
import SentinelCore
import SentinelEval
import SentinelTestSupport
import SentinelWire
import Testing

/// py-motmetrics and TrackEval from PyPI, installed by `make references` into `.build/references` (the Makefile's
/// `test` does it), with the MOT data py-motmetrics ships (TUD-Campus, TUD-Stadtmitte: ground truth and a tracker's
/// output).
enum References {
    static let folder = Fixtures.root.appendingPathComponent(".build/references")
    static let data = folder.appendingPathComponent("motmetrics/data")
    static let sequences = ["TUD-Campus", "TUD-Stadtmitte"].map {
        (
            truth: data.appendingPathComponent("\($0)/gt.txt").path,
            tracks: data.appendingPathComponent("\($0)/test.txt").path
        )
    }

    /// What the references compute, by sequence index and "combined", under Sentinel's names.
    static func figures(_ pairs: [(truth: String, tracks: String)]) async throws -> [String: [String: Double]] {
        let outcome = try await Fixtures.run(
            URL(fileURLWithPath: "/usr/bin/python3"),
            [Fixtures.root.appendingPathComponent("Tests/SentinelEvalTests/References/mot_reference.py").path]
                + pairs.flatMap { [$0.truth, $0.tracks] }, timeout: 300, environment: ["PYTHONPATH": folder.path])
        guard outcome.status == 0 else {
            throw ReferenceError(message: "mot_reference.py failed (run `make references`?): \(outcome.errors)")
        }
        return try JSONDecoder().decode([String: [String: Double]].self, from: Data(outcome.output.utf8))
    }

    struct ReferenceError: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}

@Suite("Tracking metrics agree with py-motmetrics and TrackEval on public MOT data", .ownThread)
struct TrackMetricsTests {
    func figures(_ m: TrackMetrics) -> [String: Double] {
        [
            "idf1": m.idf1, "idp": m.idp, "idr": m.idr, "mota": m.mota, "motp": m.motp, "hota": m.hota,
            "detA": m.detA, "assA": m.assA, "locA": m.locA, "precision": m.precision, "recall": m.recall,
            "idSwitches": Double(m.idSwitches), "fragmentations": Double(m.fragmentations),
            "mostlyTracked": Double(m.mostlyTracked), "partiallyTracked": Double(m.partiallyTracked),
            "mostlyLost": Double(m.mostlyLost), "falsePositives": Double(m.falsePositives), "misses": Double(m.misses),
            "objects": Double(m.objects), "predictions": Double(m.predictions),
        ]
    }

    @Test(
        "IDF1, IDP, IDR, MOTA, MOTP, switches, fragmentations, MT/PT/ML equal py-motmetrics, and HOTA, DetA, AssA, LocA equal TrackEval, to 1e-4, per sequence and combined"
    )
    func agreement() async throws {
        let expected = try await References.figures(References.sequences)
        var sequences: [TrackMetrics] = []
        for (index, pair) in References.sequences.enumerated() {
            let metrics = try TrackMetrics.evaluate(
                truth: try TrackFile.read(pair.truth), tracks: try TrackFile.read(pair.tracks))
            sequences.append(metrics)
            try compare(figures(metrics), try #require(expected["\(index)"]), "\(pair.truth)")
        }
        try compare(figures(TrackMetrics.combined(sequences)), try #require(expected["combined"]), "combined")
    }

    @Test(
        "sentinel eval tracks --json: both sequences (each tracks file named test.txt) combined, as the references combine them"
    )
    func commandLine() async throws {
        let expected = try #require(try await References.figures(References.sequences)["combined"])
        let json = try Fixtures.temporaryFolder().appendingPathComponent("score.json").path
        let outcome = try await Fixtures.run(
            Fixtures.sentinel,
            ["eval", "tracks", "--json", json]
                + References.sequences.flatMap { ["--truth", $0.truth, "--tracks", $0.tracks] })
        #expect(outcome.status == 0, "\(outcome.errors)")
        let figures = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: json))) as? [String: Any])
        for key in ["idf1", "idp", "idr", "mota", "motp", "hota", "idSwitches"] {
            let value = try #require((figures[key] as? NSNumber)?.doubleValue, "\(key)")
            #expect(abs(value - expected[key]!) <= 1e-4, "\(key): \(value) against \(expected[key]!)")
        }
        #expect((figures["sequences"] as? [String: Any])?.count == 2)
    }

    func compare(_ ours: [String: Double], _ theirs: [String: Double], _ what: String) throws {
        #expect(Set(ours.keys) == Set(theirs.keys))
        for (name, value) in theirs {
            let mine = try #require(ours[name])
            #expect(abs(mine - value) <= 1e-4, "\(what) \(name): Sentinel \(mine), reference \(value)")
        }
    }

    @Test("a perfect tracker scores 1 everywhere; one that swaps two ids halfway scores a switch each and IDF1 0.5")
    func simpleCases() throws {
        let a = Box(x: 0, y: 0, width: 10, height: 10)
        let b = Box(x: 100, y: 0, width: 10, height: 10)
        let truth = TrackSet(
            (0..<10).flatMap { [TrackSet.Entry(frame: $0, id: "1", box: a), .init(frame: $0, id: "2", box: b)] })
        let perfect = try TrackMetrics.evaluate(truth: truth, tracks: truth)
        #expect(perfect.idf1 == 1 && perfect.mota == 1 && perfect.hota == 1 && perfect.motp == 0)
        let swapped = TrackSet(
            (0..<10).flatMap { f in
                [
                    TrackSet.Entry(frame: f, id: f < 5 ? "x" : "y", box: a),
                    .init(frame: f, id: f < 5 ? "y" : "x", box: b),
                ]
            })
        let metrics = try TrackMetrics.evaluate(truth: truth, tracks: swapped)
        #expect(metrics.idSwitches == 2 && metrics.idf1 == 0.5 && metrics.mota == 0.9)
    }

    @Test(
        "30,000 ids on each side (a 1 MB MOT file) are scored: the ID and HOTA tables hold the pairs that overlap, not ids squared (7.4 GB before)"
    )
    func manyIDs() throws {
        let n = 30_000
        // Each id one box in a frame of its own, matched by the track of the same number; every 7th track shifted off.
        let truth = TrackSet(
            (0..<n).map {
                TrackSet.Entry(
                    frame: $0 / 3, id: "\($0)", box: Box(x: Double($0 % 3) * 50, y: 0, width: 20, height: 20))
            })
        let tracks = TrackSet(
            (0..<n).map {
                TrackSet.Entry(
                    frame: $0 / 3, id: "\($0)",
                    box: Box(x: Double($0 % 3) * 50 + ($0 % 7 == 0 ? 30 : 0), y: 0, width: 20, height: 20))
            })
        let metrics = try TrackMetrics.evaluate(truth: truth, tracks: tracks)
        let missed = Double((0..<n).filter { $0 % 7 == 0 }.count)
        #expect(abs(metrics.idf1 - (Double(n) - missed) / Double(n)) < 1e-12)
        #expect(metrics.hota > 0.8 && metrics.hota < 1)
    }

    @Test(
        "100 boxes stacked at one spot a frame, against tracks whose ids are new every frame (the HOTA case that took 1.4 GB): every figure equals the references' and the closed form (each association lasts one frame of F)"
    )
    func stackedBoxes() async throws {
        let (people, frames) = (100, 30)
        let box = Box(x: 40, y: 40, width: 30, height: 30)
        let truth = TrackSet(
            (0..<frames).flatMap { f in (0..<people).map { TrackSet.Entry(frame: f, id: "\($0 + 1)", box: box) } })
        let tracks = TrackSet(
            (0..<frames).flatMap { f in
                (0..<people).map { TrackSet.Entry(frame: f, id: "\(f * people + $0 + 1)", box: box) }
            })
        let folder = try Fixtures.temporaryFolder()
        let paths = (
            truth: folder.appendingPathComponent("gt.txt").path, tracks: folder.appendingPathComponent("test.txt").path
        )
        try TrackFile.write(truth, to: paths.truth)
        try TrackFile.write(tracks, to: paths.tracks)
        let metrics = try TrackMetrics.evaluate(
            truth: try TrackFile.read(paths.truth), tracks: try TrackFile.read(paths.tracks))
        let f = Double(frames)
        #expect(abs(metrics.hota - (1 / f).squareRoot()) < 1e-12 && metrics.detA == 1)
        #expect(abs(metrics.idf1 - 1 / f) < 1e-12 && abs(metrics.mota - 1 / f) < 1e-12)
        #expect(metrics.idSwitches == people * (frames - 1))
        let expected = try #require(try await References.figures([paths])["0"])
        try compare(figures(metrics), expected, "stacked")
    }

    @Test(
        "Beyond the bounds scoring is refused before it matches: 1,000 boxes stacked a frame over 100 frames (509 s and 4.89 GB before), ids new every frame on stacked boxes past 5 M overlapping pairs"
    )
    func stackedBeyondBounds() throws {
        let box = Box(x: 40, y: 40, width: 30, height: 30)
        func stacked(_ people: Int, _ frames: Int, newEveryFrame: Bool) -> TrackSet {
            TrackSet(
                (0..<frames).flatMap { f in
                    (0..<people).map {
                        TrackSet.Entry(frame: f, id: "\((newEveryFrame ? f * people : 0) + $0 + 1)", box: box)
                    }
                })
        }
        let crowd = stacked(1_000, 100, newEveryFrame: false)
        #expect {
            try TrackMetrics.evaluate(truth: crowd, tracks: crowd)
        } throws: { error in
            "\(error)".contains("frame 0 alone matches 1000 labelled with 1000 tracked boxes")
        }
        // 60 x 60 new pairs a frame: within the steps, past the pairs by frame 1,388.
        let shifting = stacked(60, 1_400, newEveryFrame: true)
        #expect {
            try TrackMetrics.evaluate(truth: shifting, tracks: shifting)
        } throws: { error in
            "\(error)".contains("more than 5000000 pairs of a labelled and a tracked id overlap (by frame 1388)")
        }
    }
}
