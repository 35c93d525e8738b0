/// Seconds given from outside — a command line, a scenario line, the prompt, a control-socket
/// request — as a `Duration`: the one place where a number of seconds someone wrote becomes a
/// duration.
///
/// Every number is range-checked *before* it is converted: `Duration.nanoseconds(Int64(x * 1e9))`
/// traps (the process dies with SIGILL) for anything at or above 2^63 ns, so `1e10` s, `1e300` s,
/// NaN and infinity are refused with an error naming the limit, never converted.
///
/// Text: a decimal number (digits, an optional point and exponent: `2`, `1.5`, `1e3`) followed by an
/// optional unit — `us`, `ms`, `s`, `m` (minutes); no unit means seconds. The range is checked on the
/// number in seconds, after the unit and before anything becomes an integer.
///
/// [thread-safe] Pure functions.
public enum Seconds {
    /// The longest duration accepted: 9,223,372,036 s (about 292 years), the most whole seconds a
    /// nanosecond count (`Int64`) holds. Deadlines add it to the monotonic clock without overflow.
    public static let maximum: Double = 9_223_372_036

    /// The units a duration may be written in, with their length in seconds ("ms" before "s" and "m").
    static let units: [(suffix: String, scale: Double)] = [("ms", 1e-3), ("us", 1e-6), ("s", 1), ("m", 60)]

    /// `seconds` as a duration, rounded to the nanosecond, once it is known to be a finite number from
    /// 0 (or, without `allowsZero`, above 0) to `limit` (at most `maximum`).
    ///
    /// - Throws: `.invalidArgument` whose message is the problem alone, for the caller to put after
    ///   the offending text: `not a number`, `cannot be negative`, `must be more than 0`,
    ///   `out of range: at most 9223372036 s (about 292 years)`.
    public static func duration(_ seconds: Double, allowsZero: Bool = true, atMost limit: Double = maximum)
        throws(ApplicationError) -> Duration
    {
        let limit = Swift.min(limit, maximum)
        guard !seconds.isNaN else { throw ApplicationError(.invalidArgument, "not a number") }
        guard seconds >= 0 else { throw ApplicationError(.invalidArgument, "cannot be negative") }
        guard allowsZero || seconds > 0 else { throw ApplicationError(.invalidArgument, "must be more than 0") }
        // Infinity fails here too.
        guard seconds <= limit else { throw ApplicationError(.invalidArgument, "out of range: at most \(describe(limit))") }
        return .nanoseconds(Int64((seconds * 1e9).rounded()))
    }

    /// Parses a duration written as text (`250ms`, `1.5s`, `2`, `100us`, `1m`) and checks it as
    /// `duration(_:allowsZero:atMost:)` does.
    ///
    /// - Throws: `.invalidArgument` whose message is the problem alone (see `duration`), or
    ///   `not a number with a unit (e.g. 250ms, 2s, 1.5s)` for text that is not a decimal number with
    ///   an optional unit (`nan`, `inf`, `0x10`, `2 s`, `soon` are all refused here).
    public static func parse(_ text: String, allowsZero: Bool = true, atMost limit: Double = maximum)
        throws(ApplicationError) -> Duration
    {
        var number = Substring(text)
        var scale = 1.0
        for unit in units where text.hasSuffix(unit.suffix) {
            number = number.dropLast(unit.suffix.count)
            scale = unit.scale
            break
        }
        guard !number.isEmpty, number.utf8.first != UInt8(ascii: "+"),
              number.utf8.allSatisfy({ isDigit($0) || $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
                  || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") }),
              number.utf8.contains(where: isDigit),
              let value = Double(number)
        else { throw ApplicationError(.invalidArgument, "not a number with a unit (e.g. 250ms, 2s, 1.5s)") }
        // The product of two finite doubles is finite or infinite, never a trap; `duration` refuses
        // infinity as out of range.
        return try duration(value * scale, allowsZero: allowsZero, atMost: limit)
    }

    /// `9223372036 s (about 292 years)`, `86400 s`, `0.5 s`.
    static func describe(_ seconds: Double) -> String {
        let whole = seconds.rounded(.down) == seconds ? "\(Int64(seconds))" : "\(seconds)"
        let years = seconds / 31_557_600
        return years >= 2 ? "\(whole) s (about \(Int64(years)) years)" : "\(whole) s"
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
