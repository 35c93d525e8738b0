/// The application's clock: its loop's (`MainRunLoop.clock`), and moving a manual one.
extension Application {
    /// The clock the application's budgets, watchdog, background-task expiry, completion-handler
    /// timeouts, timers and trace times run on: its loop's. [thread-safe]
    public var clock: LoopClock { loop.clock }

    /// The time on the application's clock since its loop was created. [thread-safe]
    public var clockElapsed: Duration { loop.elapsed }

    /// Moves a manual clock forward by `duration`: every timer, budget and deadline that falls due runs,
    /// in deadline order, each with the clock at its own deadline, and the work they post runs before
    /// the clock moves on (`MainRunLoop.advance(by:)`).
    ///
    /// [loop-thread] From inside one of the application's callbacks — a delegate method, an observer,
    /// an expiration handler, an action's trace, a loop callback — it only moves the clock, standing
    /// for a slow callback: the watchdog sees the time pass (a budgeted phase or the hang budget
    /// overruns as the clock passes its deadline, reported at once, while the callback runs), and the
    /// timers that fell due run after the callback returns, on the loop's next turn.
    ///
    /// Isolated plugins (in processes of their own, in real time) are waited for before the clock
    /// moves each time: the answers to the callbacks they were sent (a background task ended by its
    /// expiration handler) land at the time they were asked, as they would in real time.
    ///
    /// A test of "the task ends when its 30 s budget expires" on a `MainRunLoop(clock: .manual)`:
    /// ```swift
    /// let loop = try MainRunLoop(clock: .manual)
    /// let app = Application(loop: loop)
    /// // … launch, go to the background with a task open …
    /// try app.advance(by: .seconds(30))  // returns at once, the task expired at 25 s and ended at 30 s
    /// ```
    /// - Throws: `.invalidArgument` on the monotonic clock or for a negative duration;
    ///   `.notOnLoopThread`.
    public func advance(by duration: Duration) throws(ApplicationError) {
        do {
            if isInsideCallback {
                try loop.moveClock(by: duration)
            } else {
                try loop.advance(by: duration, settling: settleHandler.map { settle in { settle() } })
            }
        } catch {
            throw ApplicationError(error)
        }
    }

    /// Whether the loop thread is inside one of the application's callbacks or actions, or a loop
    /// callback. [loop-thread]
    var isInsideCallback: Bool { loop.isInsideTurn || currentAction != nil || center.probe.running() != nil }
}
