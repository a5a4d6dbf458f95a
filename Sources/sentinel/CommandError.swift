import ArgumentParser

/// A command that could not do its work: one line that says what and where, exit status 1, and no usage text. A
/// wrong command line is a `ValidationError` instead (usage text, exit status 64).
struct CommandError: Error, CustomStringConvertible {
    let description: String

    init(_ description: String) { self.description = description }
}
