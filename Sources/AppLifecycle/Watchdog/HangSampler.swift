/// Finds, from the watchdog thread, an outermost callback that has run longer than the hang budget,
/// by sampling a `CallbackProbe` (no clock read on the loop thread).
///
/// Each sample reads the outermost callback's marks (`CallbackProbe.sample`: what it is, with the
/// serial of its dispatch, and which observer). Marks first seen at time `t` have run since at least
/// `t`; when the same marks are still there at `t + budget`, that callback has overrun — reported once. Samples are `interval` apart, so an overrun is reported between
/// `budget` and `budget + interval` after the callback began, and the elapsed time it reports (from
/// the first sample that saw it) is at most `interval` short. [watchdog-thread]
struct HangSampler {
    let budget: Duration
    /// A quarter of the budget, between 1 ms and 1 s.
    let interval: Duration
    private var marks: (head: UInt64, word: UInt64) = (0, 0)
    private var since = MonotonicInstant.now
    private var reported = false

    init(budget: Duration) {
        self.budget = budget
        interval = min(max(budget / 4, .milliseconds(1)), .seconds(1))
    }

    /// Forgets the callback being watched (a budgeted phase watches its callbacks instead).
    mutating func reset() { marks = (0, 0) }

    /// One sample at `now`: the overrunning callback's marks and how long it has run at least, the
    /// first time the same marks have been there `budget` or more.
    mutating func sample(_ probe: CallbackProbe, now: MonotonicInstant) -> (marks: (head: UInt64, word: UInt64), elapsed: Duration)? {
        let current = probe.sample()
        if current.head == 0 {
            marks = (0, 0)
            return nil
        }
        if current != marks {
            marks = current
            since = now
            reported = false
            return nil
        }
        let elapsed = now.duration(since: since)
        guard !reported, elapsed >= budget else { return nil }
        reported = true
        return (current, elapsed)
    }
}
