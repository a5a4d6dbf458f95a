extension String {
    /// The text with each control character (an escape sequence's ESC, BEL, a newline) written as `\u{1b}`: what a
    /// file or a client said reaches a terminal shown, never sent.
    public var controlCharactersShown: String {
        String(
            String.UnicodeScalarView(
                unicodeScalars.flatMap { scalar in
                    scalar.properties.generalCategory == .control
                        ? Array("\\u{\(String(scalar.value, radix: 16))}".unicodeScalars) : [scalar]
                }))
    }
}
