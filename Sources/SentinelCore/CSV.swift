import Foundation

/// Writing CSV that people open in a spreadsheet.
public enum CSV {
    /// A field (RFC 4180): quoted when it holds a comma, quote or line break; text a spreadsheet would take for a
    /// formula (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) gets a leading `'`, as OWASP advises, so
    /// that a recording or zone named `=HYPERLINK(...)` is shown, never run. Numbers, negative ones too, stay numbers.
    public static func field(_ text: String) -> String {
        var text = text
        if let first = text.first, "=+-@\t\r".contains(first), Double(text) == nil { text = "'" + text }
        return text.contains(where: { ",\"\r\n".contains($0) })
            ? "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\"" : text
    }
}
