// White space trimmed off a line, as every text input of the host reads it.

extension String {
    /// The string without leading and trailing white space (`Character.isWhitespace`).
    package func trimmingWhitespace() -> String {
        var s = Substring(self)
        while let first = s.first, first.isWhitespace { s.removeFirst() }
        while let last = s.last, last.isWhitespace { s.removeLast() }
        return String(s)
    }
}
