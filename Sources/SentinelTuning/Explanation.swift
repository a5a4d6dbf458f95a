public import Foundation
public import SentinelConfig
import SentinelCore
public import SentinelPipeline
import SentinelPrivacy
import SentinelVision
public import SentinelVisitors
import SentinelWire

/// A per-visitor timeline of a run, for finding out why a visitor was split, started late or left early: the spans in
/// which the tracker matched its detections (and through which gate), the spans it missed them (and how far the
/// nearest detection was from each gate), zone entries and exits with the inertia and grace that delayed them, and why
/// the visit ended. Fed the steps of a pipeline run with `VisitorSettings.trace` on.
public struct Explanation: Sendable {
    public let settings: TrackerSettings
    public let zones: [String: (inertia: Hysteresis, grace: Hysteresis)]
    private var order: [String] = []
    private var lines: [String: [(time: Double, text: String)]] = [:]
    private var spans: [String: Span] = [:]
    private var reasons: [String: String] = [:]
    /// Where each visitor was last detected, and the frame's size, to tell a visitor who left the frame.
    private var lastBox: [String: Box] = [:]
    private var frameSize = (width: 0.0, height: 0.0)
    /// Tracks that never became visits.
    public private(set) var dropped = 0

    /// A run of frames alike for one visitor: all matched, or all missed.
    struct Span {
        var matched: Bool
        var start: MediaTime
        var end: MediaTime
        var frames = 1
        var how: [TrackerNote.Match: Int] = [:]
        var iouSum = 0.0
        /// Missed: the nearest detection's closest approach to the gates.
        var nearest: TrackerNote.Candidate?
        var noneNear = 0
    }

    public init(settings: TrackerSettings, zones: [PipelineDefinition.ZoneSpec]) {
        self.settings = settings
        self.zones = Dictionary(zones.map { ($0.name, ($0.inertia, $0.grace)) }, uniquingKeysWith: { a, _ in a })
    }

    public mutating func add(_ step: Pipeline.Step, origin: Date) {
        if let frame = step.frame {
            frameSize = (Double(frame.image.width), Double(frame.image.height))
            for face in frame.faces where !face.predicted {
                if let label = face.label { lastBox[label] = face.box }
            }
            for (label, note) in frame.notes {
                guard let label else {
                    if note.kind == .dropped { dropped += 1 }
                    continue
                }
                record(label, note, at: frame.time)
            }
        }
        for masked in step.events {
            let event = masked.stored.event
            let label = event.visitor.faceId
            if event.type == .updated { continue }
            close(label)
            let time = MediaTime(seconds: event.time.timeIntervalSince(origin))
            func seconds(_ date: Date?) -> String {
                date.map { String(format: "%.2f", $0.timeIntervalSince(origin)) } ?? "?"
            }
            switch event.type {
            case .entered:
                append(
                    label,
                    "\(seconds(event.visitor.firstSeen)) visit starts at its first detection (confirmed at \(format(time)) after confirmFrames \(settings.confirmFrames))"
                )
            case .zoneEntered:
                let inertia = event.stay.flatMap { zones[$0.zone]?.inertia }.map(describe) ?? "?"
                append(
                    label,
                    "\(seconds(event.stay?.enteredAt)) entered \(event.stay?.zone ?? "?") (said at \(format(time)), after inertia \(inertia))"
                )
            case .zoneExited:
                let grace = event.stay.flatMap { zones[$0.zone]?.grace }.map(describe) ?? "?"
                append(
                    label,
                    "\(seconds(event.stay?.exitedAt)) left \(event.stay?.zone ?? "?") after \(String(format: "%.2f", event.stay?.dwellSeconds ?? 0)) s (said at \(format(time)), after grace \(grace))"
                )
            case .exited:
                var why =
                    reasons[label]
                    ?? (event.reason == .endOfStream ? "the recording ended" : event.reason?.rawValue ?? "?")
                if event.reason == .lost, let box = lastBox[label], leftTheFrame(box) {
                    why += ", last seen at the frame's edge: it left the frame"
                }
                append(
                    label,
                    "\(seconds(event.visitor.lastSeen)) last seen; visit ended at \(format(time)): \(why); dwell \(String(format: "%.2f", event.visitor.dwellSeconds ?? 0)) s"
                )
            case .updated:
                break
            }
        }
    }

    private mutating func record(_ label: String, _ note: TrackerNote, at time: MediaTime) {
        switch note.kind {
        case .matched(let how, let iou, _, _, _):
            extend(label, matched: true, at: time) { span in
                span.how[how, default: 0] += 1
                span.iouSum += iou
            }
        case .missed(let nearest):
            extend(label, matched: false, at: time) { span in
                guard let nearest else {
                    span.noneNear += 1
                    return
                }
                if span.nearest.map({ nearest.distance - nearest.gate < $0.distance - $0.gate }) ?? true {
                    span.nearest = nearest
                }
            }
        case .ended(let unseen):
            reasons[label] = String(
                format: "unseen %.2f s, more than visitTimeoutSeconds %@", unseen, written(settings.visitTimeoutSeconds)
            )
        case .started, .dropped:
            break
        }
    }

    private mutating func extend(_ label: String, matched: Bool, at time: MediaTime, _ update: (inout Span) -> Void) {
        if var span = spans[label], span.matched == matched {
            span.end = time
            span.frames += 1
            update(&span)
            spans[label] = span
            return
        }
        close(label)
        var span = Span(matched: matched, start: time, end: time)
        update(&span)
        spans[label] = span
    }

    private mutating func close(_ label: String) {
        guard let span = spans.removeValue(forKey: label) else { return }
        let range = "\(format(span.start))-\(format(span.end))"
        if span.matched {
            let how = span.how.sorted { $0.value > $1.value }.map { "\($0.key.rawValue) \($0.value)" }
                .joined(separator: ", ")
            append(
                label,
                "\(range) detected in \(span.frames) frames (\(how); mean IoU with the prediction \(String(format: "%.2f", span.iouSum / Double(span.frames))))"
            )
        } else {
            var text = "\(range) missed in \(span.frames) frames"
            if let n = span.nearest {
                text += String(
                    format:
                        ": nearest detection %.2f face sides from the prediction (gate %.2f), IoU %.2f (minIoU %@), score %.2f%@",
                    n.distance, n.gate, n.iou, written(settings.minIoU), n.score,
                    n.taken ? ", taken by another track" : "")
            }
            if span.noneNear > 0 { text += "; \(span.noneNear) frames with no detection at all" }
            append(label, text)
        }
    }

    /// A line of a visitor's timeline; it starts with the media time it is about, which orders the timeline.
    private mutating func append(_ label: String, _ line: String) {
        if lines[label] == nil { order.append(label) }
        let time = Double(line.prefix { $0.isNumber || $0 == "." }) ?? .infinity
        lines[label, default: []].append((time, line))
    }

    /// Each visitor's timeline, in order of first appearance (only `visitor` if given).
    public mutating func report(visitor: String? = nil) -> [String] {
        for label in Array(spans.keys) { close(label) }
        var out: [String] = []
        for label in order where visitor == nil || label.hasPrefix(visitor!) {
            out.append("visitor \(label)")
            // Stable: lines about the same moment keep the order they were learnt in.
            let timeline = lines[label, default: []].enumerated().sorted {
                ($0.element.time, $0.offset) < ($1.element.time, $1.offset)
            }
            out += timeline.map { "  " + $0.element.text }
        }
        if visitor == nil {
            out.append(
                "\(dropped) tentative tracks dropped before confirmFrames \(settings.confirmFrames) (taken for false detections)"
            )
        }
        return out
    }

    /// Whether a box touches the frame's edge (within 2 % of its size).
    private func leftTheFrame(_ box: Box) -> Bool {
        let (w, h) = frameSize
        return box.x <= 0.02 * w || box.y <= 0.02 * h || box.x + box.width >= 0.98 * w || box.y + box.height >= 0.98 * h
    }

    private func format(_ time: MediaTime) -> String { String(format: "%.2f", time.seconds) }

    private func describe(_ rule: Hysteresis) -> String {
        switch rule {
        case .seconds(let s): "\(written(s)) s"
        case .frames(let n): "\(n) frames"
        }
    }
}
