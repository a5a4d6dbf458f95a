import Foundation

/// Looks through an output for anything that could identify a person or join a record with footage.
public struct LeakScanner {
    /// Internal visit ids, as the visitor stage makes them.
    public var internalIDs: Set<String>

    public init(internalIDs: Set<String>) { self.internalIDs = internalIDs }

    /// What the text gives away, by kind; empty when it is clean.
    public func leaks(in text: String) -> [String] {
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
