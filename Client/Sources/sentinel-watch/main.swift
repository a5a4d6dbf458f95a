// sentinel-watch: SentinelClient's example. Prints who is in the showroom and the mood as they change.
//
//   swift run sentinel-watch http://127.0.0.1:8080 [token]
//
// It loads who is here now from the REST API, then follows the event stream; after a reconnect it resumes where it
// was, and after a `stream.reset` (events lost to retention) it loads the state again.
import Foundation
import SentinelClient

let arguments = CommandLine.arguments.dropFirst()
guard let address = arguments.first, let url = URL(string: address) else {
    FileHandle.standardError.write(Data("usage: sentinel-watch URL [TOKEN]\n".utf8))
    exit(2)
}
let client = SentinelClient(url: url, token: arguments.dropFirst().first)

func say(_ line: String) {
    let time = ISO8601.string(from: Date()).dropFirst(11).prefix(8)
    FileHandle.standardOutput.write(Data("\(time) \(line)\n".utf8))
}

func describe(_ visitor: VisitorRecord) -> String {
    let emotion = visitor.emotion.map { label in
        "\(label.rawValue)" + (visitor.emotionConfidence.map { " \(Int(($0 * 100).rounded())) %" } ?? "")
    }
    return [
        visitor.faceId, visitor.zone ?? "no zone", visitor.dwellSeconds.map { String(format: "%.1f s", $0) },
        emotion,
    ].compactMap { $0 }.joined(separator: "  ")
}

func mood(_ reading: GaugeReading) -> String {
    switch reading.overall {
    case .suppressed: "too few visitors to show"
    case .value(let level, let visitors):
        "\(level.score)/100 \(level.label) over \(visitors) visitors" + (reading.stale ? " (stale)" : "")
    }
}

func loadState() async throws {
    let present = try await client.presentVisitors().visitors
    say("\(present.count) here now")
    for visitor in present { say("  \(describe(visitor))") }
    if let current = try await client.sentiment(minutes: 1).current { say("mood: \(mood(current))") }
}

do {
    try await loadState()
    for try await item in client.events() {
        switch item {
        case .event(let envelope):
            switch envelope.payload {
            case .visitor(let event): say("\(event.type.rawValue)  \(describe(event.visitor))")
            case .gauge(let reading): say("mood: \(mood(reading))")
            }
        case .reset(let notice):
            say("stream reset (\(notice.reason)): \(notice.message ?? "")")
            try await loadState()
        case .cutoff(let notice): say("cut off by the server: \(notice.reason)")
        case .connected(let after): say("connected" + (after.map { ", resuming after \($0)" } ?? ""))
        case .disconnected(let reason, let wait):
            let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) * 1e-18
            say("disconnected (\(reason)); again in \(String(format: "%.1f", seconds)) s")
        }
    }
} catch {
    FileHandle.standardError.write(Data("sentinel-watch: \(error)\n".utf8))
    exit(1)
}
