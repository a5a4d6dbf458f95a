import Foundation

/// Looks through an output for anything that could identify a person or join a record with footage.
public struct LeakScanner {
    /// Internal visit ids, as the visitor stage makes them.
    public var internalIDs: Set<String>

    public init(internalIDs: Set<String>) { self.internalIDs = internalIDs }

    /// A sentiment gauge level as published (sorted keys): its `score` is a 0-100 mood over a group of visitors, not
    /// a detector's score. Exactly this shape is set aside before the scan; anything else named `score` still counts.
    static let gaugeLevel = #"\{"label":"(cold|cool|neutral|warm|hot)","score":(100|[1-9]?[0-9])\}"#

    /// What the text gives away, by kind; empty when it is clean.
    public func leaks(in text: String) -> [String] {
        let text = text.replacingOccurrences(of: Self.gaugeLevel, with: "{}", options: .regularExpression)
        var found: [String] = []
        for id in internalIDs where text.contains(id) { found.append("internal id \(id)") }
        let patterns = [
            ("internal id pattern", #"[A-Za-z0-9_-]+#\d{10,}#\d+"#),
            ("box field", #""(box|x|y|width|height|landmarks|bbox)"\s*:"#),
            ("detector score", #""(detectionScore|score)"\s*:"#),
            ("media time", #""(mediaTime|frameIndex|frame)"\s*:"#),
            ("emotion distribution", #""emotionDistribution"\s*:"#),
            ("image data", #"data:image|[A-Za-z0-9+/]{80,}={0,2}"#),
            ("box in a log line", #"Box\(|x: \d+(\.\d+)?, y: \d+"#),
        ]
        for (name, pattern) in patterns where text.range(of: pattern, options: .regularExpression) != nil {
            found.append(name)
        }
        for magic in ["\u{FF}\u{D8}\u{FF}", "\u{89}PNG"] where text.contains(magic) { found.append("image bytes") }
        return found
    }
}
