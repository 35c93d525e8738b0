import AppLifecycle
import CLifecycleABI

/// Seconds from a C caller (a `double`) as a `Duration`: the C layer's face of `Seconds`, the one
/// place numbers become durations. A `Duration` made from a nanosecond count holds at most
/// `Int64.max` ns (about 292 years); a larger, negative, NaN or infinite number is checked before it
/// is converted, never trapped on.
package enum CSeconds {
    /// A budget from `lc_config_t`: 0 keeps `keep` (the default); otherwise a finite number of
    /// seconds greater than 0 and at most `Seconds.maximum`.
    /// - Throws: `CStatusError` (`LC_ERR_INVALID_ARGUMENT`) naming the field and the limit.
    package static func budget(_ seconds: Double, field: String, keep: Duration) throws(CStatusError) -> Duration {
        if seconds == 0 { return keep }
        guard let duration = try? Seconds.duration(seconds, allowsZero: false) else {
            throw CStatusError(status: lc_status(LC_ERR_INVALID_ARGUMENT),
                               message: "config->\(field) is \(seconds); a budget is 0 (the default) or a number of seconds above 0 and at most \(Int64(Seconds.maximum))")
        }
        return duration
    }

    /// `seconds` clamped to `0...limit` (NaN and negative numbers are 0), as a duration: for the
    /// calls that take any number and document the clamp (`lc_app_run_for`, delays).
    package static func duration(_ seconds: Double, atMost limit: Double = Seconds.maximum) -> Duration {
        (try? Seconds.duration(seconds.isNaN ? 0 : max(0, min(seconds, limit, Seconds.maximum)))) ?? .zero
    }
}
