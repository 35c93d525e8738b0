// The loop's clock: reading it, and moving a manual one.
import CLifecycleSystem
import Synchronization

extension MainRunLoop {
    /// The loop's clock reading in nanoseconds: `CLOCK_MONOTONIC`, or the manual clock. [thread-safe]
    @inlinable
    public var nowNanoseconds: UInt64 { isManual ? manualNow.load(ordering: .relaxed) : lcs_monotonic_ns() }

    /// The current time on the loop's clock (`clock`). [thread-safe]
    ///
    /// On the monotonic clock, `MonotonicInstant.now`; on a manual clock, the instant `advance(by:)`
    /// last set (the loop's creation until the first advance). Every budget, deadline and trace time
    /// of the engine reads this, never `MonotonicInstant.now`.
    @inlinable
    public var now: MonotonicInstant { MonotonicInstant(nanoseconds: nowNanoseconds) }

    /// The time on the loop's clock since the loop was created (`origin`). [thread-safe]
    public var elapsed: Duration { now.duration(since: origin) }

    /// The most turns `advance(by:)` runs at one deadline before it moves the clock on: work that
    /// posts itself for ever (or a descriptor that stays readable) cannot hold the clock still.
    public static let maxTurnsPerDeadline = 10_000

    /// The longest single `advance(by:)`: `Int64.max` nanoseconds, about 292 years.
    public static var maxAdvance: Duration { .nanoseconds(Int64.max) }

    /// Moves a manual clock forward by `duration`, running everything that falls due.
    ///
    /// [loop-thread] Every timer whose deadline is at most the target runs, in deadline order (equal
    /// deadlines in creation order), each with the clock at its own deadline; the work it posts, the
    /// timers it adds that are due, and whatever else is ready (descriptors, signals, cross-thread
    /// work) run before the clock moves on — at most `maxTurnsPerDeadline` turns at one deadline.
    /// Then the clock is set to the target. A `stop()` does not interrupt it (it stays pending for the
    /// next `run`).
    ///
    /// From inside one of the loop's callbacks (a test simulating a slow callback) it only moves the
    /// clock: timers that fall due run after the callback returns, on the loop's next turn (the
    /// enclosing `advance`, `run` or `dispatchPending`).
    /// - Throws: `.notOnLoopThread`; `.invalidArgument` on the monotonic clock or for a negative
    ///   duration; `.system` when `epoll_wait` fails.
    public func advance(by duration: Duration) throws(RunLoopError) {
        try advance(by: duration, settling: nil)
    }

    /// `advance(by:)`, calling `settle` (when given) before each move of the clock, after the due work
    /// has run, and running the work it leaves before the clock moves: the engine waits there for
    /// what runs outside the loop (isolated plugins' processes answering their callbacks), so that
    /// their answers land at the time they were asked, as in real time. [loop-thread]
    package func advance(by duration: Duration, settling settle: (() -> Void)?) throws(RunLoopError) {
        let target = try manualTarget(after: duration, caller: "advance(by:)")
        if isDispatching { return move(to: target) }
        defer { settleWakeUp() }
        while true {
            try runDueWork()
            if let settle {
                settle()
                try runDueWork()
            }
            dropCancelledTimersAtTop()
            guard let next = timers.firstDeadline, next <= target else { break }
            move(to: next)
        }
        move(to: target)
        try runDueWork()
        if let settle {
            settle()
            try runDueWork()
        }
    }

    /// Moves a manual clock forward by `duration` without running anything: what `advance(by:)` does
    /// from inside a loop callback, for a caller that knows it is inside a callback of its own (the
    /// engine's delegate calls and observers, which run outside the loop's turns). The clock observers
    /// are told; the timers that fell due run on the loop's next turn. [loop-thread]
    /// - Throws: as `advance(by:)`.
    package func moveClock(by duration: Duration) throws(RunLoopError) {
        move(to: try manualTarget(after: duration, caller: "advance(by:)"))
        // A timer now due runs on the next turn: make the fd readable for a foreign poller too.
        rearmTimer()
    }

    /// Whether a turn is dispatching (a loop callback is running). [loop-thread]
    package var isInsideTurn: Bool { isDispatching }

    /// The manual clock's reading `duration` from now, saturating, once the call is known to be allowed.
    private func manualTarget(after duration: Duration, caller: String) throws(RunLoopError) -> UInt64 {
        guard isOnLoopThread else { throw Self.notOnLoopThread(caller) }
        guard isManual else {
            throw RunLoopError(.invalidArgument, "MainRunLoop.\(caller): the loop runs on the monotonic clock; only a manual clock advances")
        }
        guard duration >= .zero else {
            throw RunLoopError(.invalidArgument, "MainRunLoop.\(caller): the duration \(duration) is negative")
        }
        let (sum, overflow) = manualNow.load(ordering: .relaxed).addingReportingOverflow(UInt64(duration.nanosecondsClamped))
        return overflow ? UInt64.max : sum
    }

    /// Sets the manual clock to `instant` if that is later, then tells the clock observers.
    private func move(to instant: UInt64) {
        let from = manualNow.load(ordering: .relaxed)
        guard instant > from else { return }
        manualNow.store(instant, ordering: .relaxed)
        // A copy: an observer may add or remove observers.
        for observer in state.pointee.clockObservers {
            observer.body(MonotonicInstant(nanoseconds: from), MonotonicInstant(nanoseconds: instant))
        }
    }

    /// Calls `body(from, to)` each time the manual clock moves forward: at each deadline `advance(by:)`
    /// stops at, before that deadline's timers run, and for an advance from inside a callback, while
    /// that callback still runs. [loop-thread] Never called on the monotonic clock. What the engine's
    /// watchdog does on the loop thread instead of its own thread. Remove it with
    /// `removeClockObserver`.
    /// - Returns: the observer's id.
    package func addClockObserver(_ body: @escaping (_ from: MonotonicInstant, _ to: MonotonicInstant) -> Void) -> Int {
        precondition(isOnLoopThread, "MainRunLoop.addClockObserver must be called on the loop thread")
        let id = state.pointee.nextClockObserverID
        state.pointee.nextClockObserverID += 1
        state.pointee.clockObservers.append((id, body))
        return id
    }

    /// Removes a clock observer. [loop-thread] Idempotent.
    package func removeClockObserver(_ id: Int) {
        precondition(isOnLoopThread, "MainRunLoop.removeClockObserver must be called on the loop thread")
        state.pointee.clockObservers.removeAll { $0.id == id }
    }

    /// Runs turns without waiting until one runs nothing (or `maxTurnsPerDeadline` turns have run).
    private func runDueWork() throws(RunLoopError) {
        var turns = 0
        while turns < Self.maxTurnsPerDeadline {
            turns += 1
            guard try turn(timeoutMS: 0, honoursStop: false) > 0 else { return }
        }
    }
}
