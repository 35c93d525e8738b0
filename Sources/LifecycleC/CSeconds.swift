import CLifecycleABI

/// Seconds from a C caller (a `double`) as a `Duration`: the one place the C layer turns numbers
/// into durations. A `Duration` made from a nanosecond count holds at most `Int64.max` ns (about
/// 292 years); a larger, negative, NaN or infinite number is checked before it is converted, never
/// trapped on.
package enum CSeconds {
    /// The most whole seconds a nanosecond count (`Int64`) holds: 9,223,372,036.
    package static let maximum: Double = 9_223_372_036

    /// A budget from `lc_config_t`: 0 keeps `keep` (the default); otherwise a finite number of
    /// seconds greater than 0 and at most `maximum`.
    /// - Throws: `CStatusError` (`LC_ERR_INVALID_ARGUMENT`) naming the field and the limit.
    package static func budget(_ seconds: Double, field: String, keep: Duration) throws(CStatusError) -> Duration {
        if seconds == 0 { return keep }
        guard seconds.isFinite, seconds > 0, seconds <= maximum else {
            throw CStatusError(status: lc_status(LC_ERR_INVALID_ARGUMENT),
                               message: "config->\(field) is \(seconds); a budget is 0 (the default) or a number of seconds above 0 and at most \(Int64(maximum))")
        }
        return duration(seconds)
    }

    /// `seconds` (already checked to be finite and ≥ 0) at most `limit`, as a duration.
    package static func duration(_ seconds: Double, atMost limit: Double = maximum) -> Duration {
        .nanoseconds(Int64((seconds.isNaN ? 0 : max(0, min(seconds, limit, maximum))) * 1e9))
    }
}
