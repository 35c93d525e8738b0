/// Text from outside the host — a path, a plugin's id or words, a refusal naming a file — as the
/// host prints it in its text output (the text trace, `check`, `validate`'s report, lines on standard
/// error): on one line, whatever it holds.
///
/// Guarantee: the result holds no control character. Each one is escaped: line feed `\n`, carriage
/// return `\r`, tab `\t`, any other C0 control, DEL or C1 control (U+0085 included) and the line and
/// paragraph separators U+2028/U+2029 as `\u{XX}` (hex, as Swift writes it). Everything else is kept
/// as it is — a backslash too, so an ordinary path prints unchanged (a path holding a backslash
/// followed by `n` reads like an escaped line feed: the JSON trace, which quotes, tells them apart).
/// Text without anything to escape is returned as given, without copying.
func printable(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: needsEscape) else { return text }
    var out = String.UnicodeScalarView()
    for scalar in text.unicodeScalars {
        guard needsEscape(scalar) else {
            out.append(scalar)
            continue
        }
        let escaped = switch scalar {
        case "\n": "\\n"
        case "\r": "\\r"
        case "\t": "\\t"
        default: "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
        }
        out.append(contentsOf: escaped.unicodeScalars)
    }
    return String(out)
}

/// A C0 control, DEL, a C1 control, or U+2028/U+2029: what would break or colour a line.
private func needsEscape(_ scalar: Unicode.Scalar) -> Bool {
    let value = scalar.value
    return value < 0x20 || (value >= 0x7F && value <= 0x9F) || value == 0x2028 || value == 0x2029
}
