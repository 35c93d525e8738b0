import CLifecycleSystem

/// A point on the monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds since an arbitrary origin.
///
/// Unaffected by wall-clock steps; this is the clock of every budget, timer and trace timestamp.
public struct MonotonicInstant: Sendable, Hashable, Comparable {
    public var nanoseconds: UInt64

    public init(nanoseconds: UInt64) { self.nanoseconds = nanoseconds }

    /// The current time. [thread-safe]
    @inlinable public static var now: MonotonicInstant { MonotonicInstant(nanoseconds: lcs_monotonic_ns()) }

    public static func < (lhs: MonotonicInstant, rhs: MonotonicInstant) -> Bool { lhs.nanoseconds < rhs.nanoseconds }

    public static func + (lhs: MonotonicInstant, rhs: Duration) -> MonotonicInstant {
        let delta = rhs.nanosecondsClamped
        return MonotonicInstant(nanoseconds: delta >= 0 ? lhs.nanoseconds &+ UInt64(delta) : lhs.nanoseconds &- UInt64(-delta))
    }

    /// The time from `earlier` to `self` (zero when `earlier` is later).
    public func duration(since earlier: MonotonicInstant) -> Duration {
        nanoseconds >= earlier.nanoseconds ? .nanoseconds(Int64(nanoseconds - earlier.nanoseconds)) : .zero
    }
}

extension Duration {
    /// The duration in whole nanoseconds, clamped to the `Int64` range.
    public var nanosecondsClamped: Int64 {
        let (seconds, attoseconds) = components
        let (ns, overflow) = seconds.multipliedReportingOverflow(by: 1_000_000_000)
        if overflow { return seconds < 0 ? .min : .max }
        return ns &+ attoseconds / 1_000_000_000
    }

    /// The duration in seconds as a double.
    public var secondsDouble: Double {
        let (seconds, attoseconds) = components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
