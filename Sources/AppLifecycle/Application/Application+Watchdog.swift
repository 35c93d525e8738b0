/// The application's side of the hang budget and the termination deadline (see `Watchdog`).
extension Application {
    /// Runs a delegate method marked in the callback probe (its budget is the hang budget outside the
    /// budgeted phases).
    @inline(__always)
    func marked<R>(_ method: DelegateMethod, owner: UInt32, _ body: () -> R) -> R {
        center.runMarked(CallbackProbe.bits(.delegate, subject: method.label), owner: owner, body)
    }

    /// `marked` with `body` called on `argument` (see `AppNotificationCenter.runMarked(_:owner:passing:_:)`).
    @inline(__always)
    func marked<A: AnyObject>(_ method: DelegateMethod, owner: UInt32, passing argument: A, _ body: (A) -> Void) {
        center.runMarked(CallbackProbe.bits(.delegate, subject: method.label), owner: owner, passing: argument, body)
    }

    /// Traces the hang reports the watchdog made since the last call. [loop-thread]
    func traceHangReports() {
        for report in killSwitch.takeHangReports() { trace(.watchdogOverrun(report)) }
    }

    /// The loop thread is back from a callback the watchdog reported as hung (posted by the watchdog
    /// thread, run on the next turn): the report is traced, and under the `terminate` policy an
    /// application killed outside an action stops now, as one killed inside an action stops when its
    /// callback returns. [loop-thread]
    func hangReturned() {
        traceHangReports()
        guard killSwitch.killed.load(ordering: .relaxed), currentAction == nil else { return }
        if state == .notRunning {
            killSwitch.killed.store(false, ordering: .relaxed)
        } else {
            goNotRunning(.killedByWatchdog)
        }
    }

    /// Starts the terminate budget (`Configuration.Budgets.terminationBudget`) for a termination the
    /// embedder is about to perform, e.g. on SIGTERM: if the process still runs when the budget ends,
    /// `Configuration.onTerminationOverdue` is called on the watchdog thread with a report naming the
    /// callback the loop thread is in — even when that callback never returns and the loop never
    /// turns again.
    ///
    /// [thread-safe] Returns at once; performs nothing itself (the embedder performs `terminate` on
    /// the loop thread as usual). The first call's deadline holds; later calls change nothing.
    /// - Parameter reason: what asked for the termination, for the report (e.g. `signal SIGTERM`).
    public func armTerminationDeadline(reason: String) {
        watchdog.armTermination(reason: reason)
    }

    /// Whether `armTerminationDeadline` was called. [thread-safe]
    public var isTerminationDeadlineArmed: Bool { watchdog.terminationArmed }

    /// The callbacks the loop thread is in now — the outermost (whose budget runs) and the innermost
    /// (where it is) — or nil when it runs none. A sample: by the time it is read the callback may have
    /// returned. [thread-safe]
    public var runningCallbacks: (outermost: RunningCallback, innermost: RunningCallback)? {
        center.probe.running()
    }

    /// Runs `body` (a plugin's `init`, timer or posted work) marked as a callback named `label` of
    /// `owner`, so that the hang budget watches it and `runningCallbacks` names it. [loop-thread]
    public func runMarked<R, E: Error>(_ label: String, owner: String, _ body: () throws(E) -> R) throws(E) -> R {
        loop.preconditionOnLoopThread("Application.runMarked(_:owner:_:)")
        return try center.runMarked(CallbackProbe.bits(.other, subject: center.probe.labelID(label)), owner: center.ownerID(owner), body)
    }
}
