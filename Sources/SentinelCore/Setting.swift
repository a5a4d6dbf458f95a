/// One setting of a pipeline file's section, declared beside the settings type that owns it: the key a file
/// writes, its type and range, and what it means. The pipeline reader parses and checks every setting from this,
/// and `sentinel check --reference` prints them with their defaults, so the three cannot drift apart.
public struct Setting<Owner>: Sendable {
    public let key: String
    public let help: String
    public let kind: Kind

    public enum Kind: Sendable {
        case number(WritableKeyPath<Owner, Double> & Sendable, ClosedRange<Double>)
        case integer(WritableKeyPath<Owner, Int> & Sendable, ClosedRange<Int>)
        case flag(WritableKeyPath<Owner, Bool> & Sendable)
        case text(WritableKeyPath<Owner, String> & Sendable)
        case choice([String], read: @Sendable (Owner) -> String, write: @Sendable (inout Owner, String) -> Void)
    }

    public static func number(
        _ key: String, _ path: WritableKeyPath<Owner, Double> & Sendable, in range: ClosedRange<Double>, _ help: String
    ) -> Setting {
        Setting(key: key, help: help, kind: .number(path, range))
    }

    public static func integer(
        _ key: String, _ path: WritableKeyPath<Owner, Int> & Sendable, in range: ClosedRange<Int>, _ help: String
    ) -> Setting {
        Setting(key: key, help: help, kind: .integer(path, range))
    }

    public static func flag(_ key: String, _ path: WritableKeyPath<Owner, Bool> & Sendable, _ help: String) -> Setting {
        Setting(key: key, help: help, kind: .flag(path))
    }

    public static func text(_ key: String, _ path: WritableKeyPath<Owner, String> & Sendable, _ help: String) -> Setting
    {
        Setting(key: key, help: help, kind: .text(path))
    }

    public static func choice<Choice: RawRepresentable & CaseIterable>(
        _ key: String, _ path: WritableKeyPath<Owner, Choice> & Sendable, _ help: String
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
        case .number(let path, _): owner[keyPath: path].written
        case .integer(let path, _): "\(owner[keyPath: path])"
        case .flag(let path): "\(owner[keyPath: path])"
        case .text(let path): owner[keyPath: path]
        case .choice(_, let read, _): read(owner)
        }
    }

    /// What a file may write: the range, or the choices.
    public var domain: String {
        switch kind {
        case .number(_, let range): "\(range.lowerBound.written) to \(range.upperBound.written)"
        case .integer(_, let range): "\(range.lowerBound) to \(range.upperBound)"
        case .flag: "true or false"
        case .text: "text"
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
