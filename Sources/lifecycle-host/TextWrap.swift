/// Wrapping text at a width for a reader of the terminal (the demo's trace): at spaces, a word longer
/// than a line (a path) cut where the line ends. Counts characters (`Character`), as a terminal shows
/// the host's ASCII and the plugins' printable words.
enum TextWrap {
    /// `text` in lines of at most `width` characters, none ending in a space. The text's leading spaces
    /// lead every line; each line after the first is indented `indent` more. A `width` too small for
    /// the indents (at most 8 characters of room) is widened to leave 8.
    static func lines(_ text: String, width: Int, indent: Int) -> [String] {
        let lead = String(text.prefix { $0 == " " })
        let body = text.dropFirst(lead.count)
        let room = max(width - lead.count, indent + 8)
        guard body.count > room else { return [text] }
        var lines: [Substring] = []
        var line: Substring = ""
        func limit() -> Int { lines.isEmpty ? room : room - indent }
        func flush() {
            lines.append(line)
            line = ""
        }
        for piece in body.split(separator: " ", omittingEmptySubsequences: false) {
            var word = piece
            if !line.isEmpty, line.count + 1 + word.count > limit() { flush() }
            // A word longer than what is left of a line: cut where the line ends.
            while word.count > limit() - line.count - (line.isEmpty ? 0 : 1) {
                let left = limit() - line.count - (line.isEmpty ? 0 : 1)
                if left > 0 {
                    line += (line.isEmpty ? "" : " ") + word.prefix(left)
                    word = word.dropFirst(left)
                }
                flush()
            }
            if line.isEmpty, word.isEmpty { continue }  // spaces where a line was cut
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { flush() }
        let continuation = lead + String(repeating: " ", count: indent)
        return lines.enumerated().map { index, line in
            var text = Substring(line)
            while text.last == " " { text = text.dropLast() }
            return (index == 0 ? lead : continuation) + text
        }
    }
}
