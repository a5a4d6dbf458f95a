import Foundation

/// One setting of a pipeline file's section, declared beside the settings type that owns it: the key a file
/// writes, its type and range, and what it means. The pipeline reader parses and checks every setting from this,
/// and `sentinel check --reference` prints them with their defaults, so the three cannot drift apart.
public struct Setting<Owner>: Sendable {
    public let key: String
    public let help: String
    public let kind: Kind

    public enum Kind: Sendable {
        /// A number in the range, or one of `names` (as `daily` for 86400 seconds).
        case number(
            any WritableKeyPath<Owner, Double> & Sendable, ClosedRange<Double>, names: KeyValuePairs<String, Double>)
        case integer(any WritableKeyPath<Owner, Int> & Sendable, ClosedRange<Int>)
        case flag(any WritableKeyPath<Owner, Bool> & Sendable)
        /// Text, refused with `check`'s message unless it returns nil.
        case text(any WritableKeyPath<Owner, String> & Sendable, check: (@Sendable (String) -> String?)?)
        /// Text, or null for none.
        case optionalText(any WritableKeyPath<Owner, String?> & Sendable)
        /// A file, written relative to the file that names it; null for none (or the default).
        case path(read: @Sendable (Owner) -> String?, write: @Sendable (inout Owner, String?) -> Void)
        /// A list of texts, each refused with `check`'s message unless it returns nil.
        case list(any WritableKeyPath<Owner, [String]> & Sendable, check: @Sendable (String) -> String?)
        case choice([String], read: @Sendable (Owner) -> String, write: @Sendable (inout Owner, String) -> Void)
    }

    public static func number(
        _ key: String, _ path: any WritableKeyPath<Owner, Double> & Sendable, in range: ClosedRange<Double>,
        names: KeyValuePairs<String, Double> = [:], _ help: String
    ) -> Setting {
        Setting(key: key, help: help, kind: .number(path, range, names: names))
    }

    public static func integer(
        _ key: String, _ path: any WritableKeyPath<Owner, Int> & Sendable, in range: ClosedRange<Int>, _ help: String
    ) -> Setting {
        Setting(key: key, help: help, kind: .integer(path, range))
    }

    public static func flag(_ key: String, _ path: any WritableKeyPath<Owner, Bool> & Sendable, _ help: String)
        -> Setting
    {
        Setting(key: key, help: help, kind: .flag(path))
    }

    public static func text(
        _ key: String, _ path: any WritableKeyPath<Owner, String> & Sendable,
        check: (@Sendable (String) -> String?)? = nil, _ help: String
    ) -> Setting {
        Setting(key: key, help: help, kind: .text(path, check: check))
    }

    public static func optionalText(
        _ key: String, _ path: any WritableKeyPath<Owner, String?> & Sendable, _ help: String
    ) -> Setting {
        Setting(key: key, help: help, kind: .optionalText(path))
    }

    /// A file that may be absent (null).
    public static func path(_ key: String, _ path: any WritableKeyPath<Owner, String?> & Sendable, _ help: String)
        -> Setting
    {
        Setting(
            key: key, help: help,
            kind: .path(read: { $0[keyPath: path] }, write: { owner, value in owner[keyPath: path] = value }))
    }

    /// A file that always has a value: null (and the empty default) keeps the one the owner has.
    public static func path(_ key: String, _ path: any WritableKeyPath<Owner, String> & Sendable, _ help: String)
        -> Setting
    {
        Setting(
            key: key, help: help,
            kind: .path(
                read: { $0[keyPath: path].isEmpty ? nil : $0[keyPath: path] },
                write: { owner, value in if let value { owner[keyPath: path] = value } }))
    }

    public static func list(
        _ key: String, _ path: any WritableKeyPath<Owner, [String]> & Sendable,
        check: @escaping @Sendable (String) -> String?, _ help: String
    ) -> Setting {
        Setting(key: key, help: help, kind: .list(path, check: check))
    }

    public static func choice<Choice: RawRepresentable & CaseIterable & Sendable>(
        _ key: String, _ path: any WritableKeyPath<Owner, Choice> & Sendable, _ help: String
    ) -> Setting where Choice.RawValue == String {
        Setting(
            key: key, help: help,
            kind: .choice(
                Choice.allCases.map(\.rawValue), read: { $0[keyPath: path].rawValue },
                write: { owner, value in
                    // The reader checked the value against the choices first.
                    if let choice = Choice(rawValue: value) { owner[keyPath: path] = choice }
                }))
    }

    /// The value `owner` has, as a pipeline file writes it.
    public func value(in owner: Owner) -> String {
        switch kind {
        case .number(let path, _, let names):
            names.first { $0.value == owner[keyPath: path] }?.key ?? owner[keyPath: path].written
        case .integer(let path, _): "\(owner[keyPath: path])"
        case .flag(let path): "\(owner[keyPath: path])"
        case .text(let path, _): owner[keyPath: path]
        case .optionalText(let path): owner[keyPath: path] ?? "null"
        case .path(let read, _): read(owner) ?? "null"
        case .list(let path, _): "[" + owner[keyPath: path].joined(separator: ", ") + "]"
        case .choice(_, let read, _): read(owner)
        }
    }

    /// What a file may write: the range, or the choices.
    public var domain: String {
        switch kind {
        case .number(_, let range, let names):
            (names.isEmpty ? "" : names.map(\.key).joined(separator: ", ") + " or a number from ")
                + "\(range.lowerBound.written) to \(range.upperBound.written)"
        case .integer(_, let range): "\(range.lowerBound) to \(range.upperBound)"
        case .flag: "true or false"
        case .text: "text"
        case .optionalText: "text, or null"
        case .path: "a file, relative to this file's folder, or null"
        case .list: "a list"
        case .choice(let choices, _, _): choices.joined(separator: ", ")
        }
    }

}

extension Double {
    /// The number as a person writes it in a pipeline file or reads it in a message: 0.5, 300, 1000000; an
    /// unbounded end of a range as inf.
    public var written: String {
        if abs(self) >= 1e300 { return self < 0 ? "-inf" : "inf" }
        return self == rounded() && abs(self) < 1e15 ? "\(Int(self))" : "\(self)"
    }
}

extension String {
    /// The text as a YAML double-quoted scalar, which any YAML reader reads back as written: a JSON string is one.
    public var yamlQuoted: String? {
        let encoder = JSONEncoder()
        encoder.outputFormatting = .withoutEscapingSlashes
        return (try? encoder.encode(self)).map { String(decoding: $0, as: UTF8.self) }
    }
}
