/// Finds, from the watchdog thread, an outermost callback that has run longer than the hang budget,
/// by sampling a `CallbackProbe` (no clock read on the loop thread).
///
/// Each sample reads the outer words. An unflagged word means a callback began since the last
/// sample: the sampler flags both and starts its clock. Words still flagged at later samples mean no
/// outermost callback began since: once that has lasted `budget`, the callback running has overrun —
/// reported once. Samples are `interval` apart, so an overrun is reported
/// between `budget` and `budget + interval` after the callback began, and the elapsed time it reports
/// (from the flagging sample) is at most `interval` short. [watchdog-thread]
struct HangSampler {
    let budget: Duration
    /// A quarter of the budget, between 1 ms and 1 s.
    let interval: Duration
    private var watching = false
    private var since = MonotonicInstant.now
    private var reported = false

    init(budget: Duration) {
        self.budget = budget
        interval = min(max(budget / 4, .milliseconds(1)), .seconds(1))
    }

    /// Forgets the callback being watched (a budgeted phase watches its callbacks instead).
    mutating func reset() { watching = false }

    /// One sample at `now`: the overrunning callback's outer words (flags included) and how long it
    /// has run at least, the first time it has run `budget` or more.
    mutating func sample(_ probe: CallbackProbe, now: MonotonicInstant) -> (words: (what: UInt64, whose: UInt64), elapsed: Duration)? {
        let words = probe.outerWords()
        let flag = CallbackProbe.flag
        guard words.what & ~flag != 0 else {
            watching = false  // the loop thread runs no marked callback
            return nil
        }
        guard watching, words.what & flag != 0, words.whose & flag != 0 else {
            // A callback began since the last sample (or none was watched): flag it, start the clock.
            probe.flag(words)
            watching = true
            since = now
            reported = false
            return nil
        }
        let elapsed = now.duration(since: since)
        guard !reported, elapsed >= budget else { return nil }
        reported = true
        return (words, elapsed)
    }
}
