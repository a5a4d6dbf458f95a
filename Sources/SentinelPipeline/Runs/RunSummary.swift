public import Foundation
import SentinelCore
public import SentinelVisitors
public import SentinelWire

/// A few lines on a run for the person who started it: visits, dwell per zone and the label-free measures (suspected
/// splits first: a visitor split in two is the commonest fault, and nothing else points at it).
public struct RunSummary: Sendable {
    public var visits = 0
    public var meanDwell = 0.0
    /// Per zone: visitors who entered it and their mean time in it.
    public var zones: [(zone: String, visitors: Int, meanDwell: Double)] = []
    public var stability = Stability()
    /// Emotion readings taken and the CPU seconds they took (the pipeline's own count).
    public var emotion = (readings: 0, seconds: 0.0)
    /// Faces due a reading that were not read, by why.
    public var unread: [EmotionSettings.Unreadable: Int] = [:]

    /// From a run's events (the store's copies: exact times) and its frames' detections.
    public init(events: [VisitorEvent], collector: Stability.Collector, origin: Date) {
        let exits = events.filter { $0.type == .exited }
        visits = exits.count
        meanDwell = exits.isEmpty ? 0 : exits.map { $0.visitor.dwellSeconds ?? 0 }.reduce(0, +) / Double(exits.count)
        var order: [String] = []
        var stays: [String: [String: Double]] = [:]  // zone -> visitor -> seconds
        for event in events where event.type == .zoneExited {
            guard let stay = event.stay, let seconds = stay.dwellSeconds else { continue }
            if stays[stay.zone] == nil { order.append(stay.zone) }
            stays[stay.zone, default: [:]][event.visitor.faceId, default: 0] += seconds
        }
        zones = order.map { zone in
            let perVisitor = stays[zone]!.values
            return (zone, perVisitor.count, perVisitor.reduce(0, +) / Double(perVisitor.count))
        }
        stability = collector.finish(events: events, origin: origin)
    }

    public var lines: [String] {
        let s = stability
        var lines = [
            String(
                format:
                    "%d visits, %.1f s on average; %d suspected splits (a visit starting within %.0f s and %.0f face sides of another's end), %d shorter than %.0f s",
                visits, meanDwell, Int((s.suspectedSplits * Double(s.visits)).rounded()), Stability.splitSeconds,
                Stability.splitDistance, Int((s.shortVisits * Double(s.visits)).rounded()), Stability.shortSeconds)
        ]
        if !zones.isEmpty {
            lines.append(
                "zones: "
                    + zones.map { String(format: "%@ %d visitors, %.1f s each", $0.zone, $0.visitors, $0.meanDwell) }
                    .joined(separator: "; "))
        }
        lines.append(
            String(
                format:
                    "label-free: zone flicker %.2f returns within %g s per visitor-minute, emotion churn %.3f per visitor-second, %.1f %% of visit frames bridged gaps, stability %.3f",
                s.zoneFlicker, Stability.flickerSeconds, s.emotionChurn, s.detectionGaps * 100, s.score))
        if emotion.readings > 0 || !unread.isEmpty {
            let skipped = unread.values.reduce(0, +)
            lines.append(
                String(
                    format: "emotion: %d readings, %.2f CPU s (%.1f ms each); %d faces not read (%.0f %%)",
                    emotion.readings, emotion.seconds, emotion.seconds / Double(max(emotion.readings, 1)) * 1000,
                    skipped, Double(skipped) / Double(max(skipped + emotion.readings, 1)) * 100)
                    + (skipped == 0 ? "" : ": " + Self.unreadList(unread)))
        }
        return lines
    }

    /// "12 turned, 3 blurred": counts by why, in the order they are checked.
    public static func unreadList(_ unread: [EmotionSettings.Unreadable: Int]) -> String {
        EmotionSettings.Unreadable.allCases.compactMap { why in unread[why].map { "\($0) \(why.rawValue)" } }
            .joined(separator: ", ")
    }
}
