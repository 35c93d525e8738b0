import CLifecycleSystem
import Glibc
import Synchronization

/// Watches the loop thread from its own thread, so that a callback that never returns is still noticed.
///
/// Three duties, all on the watchdog thread:
/// - **Budgeted phases.** The loop thread opens a phase (`begin`) with a budget, names the callback
///   running inside it (`setCurrent`), and closes it (`end`). The watchdog sleeps until the phase
///   deadline and, if the phase is still open then, reports the overrun at once through `onOverrun` —
///   while the callback may still be running.
/// - **The hang budget.** Every `interval` (a quarter of the hang budget, at most 1 s) it samples the
///   application's `CallbackProbe`; an outermost callback outside a budgeted phase that is still the
///   same after the hang budget is reported through `onOverrun` (budget `.hang`).
/// - **The termination deadline.** Once `armTermination` was called (from any thread), if the process
///   still runs when the terminate budget ends, `onTerminationOverdue` gets a report naming the
///   callback the loop thread is in — whatever the loop thread is doing.
///
/// The thread starts with the watchdog, with every signal blocked (so that a host's signals stay
/// pending for its loop's signalfd), and is joined by `shutdown()`. Cost on the loop thread: a lock
/// per phase call, one eventfd write per phase; nothing per callback (the probe's stores).
///
/// **On a manual clock** (`LoopClock.manual`, docs/lifecycle.md decision 58) there is no thread: time
/// passes only when the loop's owner advances the clock, so the three duties run on the loop thread
/// each time the clock moves (`MainRunLoop.addClockObserver`), with the clock's readings. A phase
/// overruns when the clock passes its deadline; a callback hangs only when the clock moves by the hang
/// budget while it runs (an advance from inside the callback, which stands for a slow callback);
/// a termination is overdue when the clock passes its deadline. Reports come at once, while the
/// callback still runs, as the thread's would. A termination's deadline passes in real time too: once
/// armed, a thread of its own waits the terminate budget on the monotonic clock and reports it overdue
/// if it is still due — a host moving a manual clock (`run --record`, `--clock virtual`) whose loop
/// thread is stuck in a callback still ends on SIGTERM.
final class Watchdog: @unchecked Sendable {
    // @unchecked: all mutable state is in `state` (Mutex) or atomics; the rest are lets of Sendable values.
    struct Phase {
        var budgetKind: WatchdogReport.Budget
        var budget: Duration
        var started: MonotonicInstant
        var deadline: MonotonicInstant
        var event: String = ""
        var observer: String = ""
        var reported = false
        /// Since when the phase's clock is stopped (`pause`), nil while it runs.
        var pausedAt: MonotonicInstant?
    }

    private struct Termination {
        let reason: String
        let requested: MonotonicInstant
        let deadline: MonotonicInstant
        var reported = false
    }

    private struct State {
        var phase: Phase?
        /// How many `pause`s are open: the hang budget does not run meanwhile either (the main thread
        /// is waiting for callbacks policed by deadlines of their own).
        var pauses = 0
        var termination: Termination?
        var stopping = false
        var thread: pthread_t?
        /// When the watchdog thread will wake by itself (set before it sleeps): a new deadline before it
        /// needs the eventfd, a later one does not (the thread reads the deadlines again when it wakes).
        var plannedWake: MonotonicInstant?

        /// Whether the watchdog thread must be woken to see `deadline` in time.
        func needsWake(for deadline: MonotonicInstant) -> Bool {
            guard let plannedWake else { return true }
            return deadline < plannedWake
        }
    }

    private let state = Mutex(State())
    private let wakeFD: Int32
    private let policy: Configuration.WatchdogPolicy
    private let probe: CallbackProbe
    private let hangBudget: Duration
    private let terminateBudget: Duration
    private let onOverrun: @Sendable (WatchdogReport) -> Void
    private let onTerminationOverdue: @Sendable (WatchdogReport) -> Void
    /// The clock every reading is taken on.
    private let loop: MainRunLoop
    /// On a manual clock: the sampler the clock observer drives, and the observer's id. [loop-thread]
    private let manualHang: Mutex<HangSampler>
    private let clockObserver = Atomic<Int>(0)

    init(configuration: Configuration, probe: CallbackProbe, loop: MainRunLoop,
         onOverrun: @escaping @Sendable (WatchdogReport) -> Void,
         onTerminationOverdue: @escaping @Sendable (WatchdogReport) -> Void)
    {
        self.loop = loop
        manualHang = Mutex(HangSampler(budget: configuration.budgets.hang))
        policy = configuration.watchdogPolicy
        self.probe = probe
        hangBudget = configuration.budgets.hang
        terminateBudget = configuration.budgets.terminationBudget
        self.onOverrun = onOverrun
        self.onTerminationOverdue = onTerminationOverdue
        wakeFD = lcs_eventfd()
        if loop.clock.isManual {
            clockObserver.store(loop.addClockObserver { [weak self] from, to in self?.clockMoved(from: from, to: to) },
                                ordering: .relaxed)
        } else {
            spawn()
        }
    }

    /// On a manual clock, the clock moved from `from` to `to` (loop thread): what the watchdog thread
    /// does when it wakes, with the clock's readings. The hang sampler samples at both ends, so a
    /// callback running while the clock moved by the hang budget is reported.
    private func clockMoved(from: MonotonicInstant, to: MonotonicInstant) {
        checkPhase(to)
        manualHang.withLock { hang in
            checkHang(&hang, from)
            checkHang(&hang, to)
        }
        checkTermination(to)
    }

    deinit { close(wakeFD) }

    /// How many times the watchdog thread was signalled (what `WatchdogWakeTests` counts). [thread-safe]
    var wakeUps: Int { signals.load(ordering: .relaxed) }
    private let signals = Atomic<Int>(0)

    private func wakeThread() {
        signals.add(1, ordering: .relaxed)
        _ = lcs_eventfd_signal(wakeFD)
    }

    /// Stops and joins the watchdog thread (which holds the watchdog until then). [loop-thread]
    func shutdown() {
        let observer = clockObserver.exchange(0, ordering: .relaxed)
        if observer != 0, loop.isOnLoopThread { loop.removeClockObserver(observer) }
        let thread = state.withLock { s -> pthread_t? in
            s.stopping = true
            defer { s.thread = nil }
            return s.thread
        }
        wakeThread()
        if let thread { pthread_join(thread, nil) }
    }

    /// Opens a budgeted phase. [loop-thread]
    func begin(_ budgetKind: WatchdogReport.Budget, budget: Duration) {
        let now = loop.now
        let wake = state.withLock { s -> Bool in
            s.phase = Phase(budgetKind: budgetKind, budget: budget, started: now, deadline: now + budget)
            return s.needsWake(for: now + budget)
        }
        if wake { wakeThread() }
    }

    /// Names the callback now running inside the phase. [loop-thread]
    ///
    /// Once an overrun is reported, the culprit stays named: later callbacks of the phase do not replace it.
    func setCurrent(event: String, observer: String) {
        state.withLock { s in
            guard s.phase?.reported == false else { return }
            s.phase?.event = event
            s.phase?.observer = observer
        }
    }

    /// Stops the phase's clock (time spent waiting for callbacks policed elsewhere: isolated plugins,
    /// which have deadlines of their own). Nothing is reported while it is stopped. [loop-thread]
    func pause() {
        let now = loop.now
        state.withLock { s in
            s.pauses += 1
            guard var phase = s.phase, phase.pausedAt == nil else { return }
            phase.pausedAt = now
            s.phase = phase
        }
    }

    /// Restarts the phase's clock: its deadline moves by the time it was stopped. [loop-thread]
    func resume() {
        state.withLock { s in s.pauses = max(0, s.pauses - 1) }
        resumePhase()
    }

    /// Restarts the phase's clock if it is stopped (its deadline moves by the time it was stopped).
    private func resumePhase() {
        let now = loop.now
        let wake = state.withLock { s -> Bool in
            guard var phase = s.phase, let since = phase.pausedAt else { return false }
            phase.deadline = phase.deadline + now.duration(since: since)
            phase.started = phase.started + now.duration(since: since)
            phase.pausedAt = nil
            s.phase = phase
            return s.needsWake(for: phase.deadline)
        }
        if wake { wakeThread() }
    }

    /// Whether a phase is open. [loop-thread]
    var isWatching: Bool { state.withLock { $0.phase != nil } }

    /// Closes the phase. Returns the overrun, with the full elapsed time, when the watchdog reported one.
    func end() -> WatchdogReport? {
        resumePhase()
        let now = loop.now
        let phase = state.withLock { s -> Phase? in
            defer { s.phase = nil }
            return s.phase
        }
        guard let phase, phase.reported || now >= phase.deadline else { return nil }
        let report = Self.report(phase, elapsed: now.duration(since: phase.started), policy: policy)
        if !phase.reported { onOverrun(report) }  // overran but returned before the watchdog woke
        return report
    }

    /// Starts the terminate budget: if the process still runs when it ends, `onTerminationOverdue` is
    /// called on the watchdog thread. The first call's deadline holds; later calls change nothing.
    /// [thread-safe] Returns at once.
    func armTermination(reason: String) {
        let now = loop.now
        let armed = state.withLock { s -> Bool in
            guard s.termination == nil else { return false }
            s.termination = Termination(reason: reason, requested: now, deadline: now + terminateBudget)
            return true
        }
        guard armed else { return }
        // On a manual clock: a thread that waits the terminate budget in real time (or until
        // `shutdown`), then reports the termination overdue if the clock has not already.
        if loop.clock.isManual { spawn(.terminationBackstop) } else { wakeThread() }
    }

    private func backstopTermination() {
        let started = MonotonicInstant.now
        let deadline = started + terminateBudget
        var pfd = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
        while true {
            let now = MonotonicInstant.now
            if state.withLock({ $0.stopping }) { return }
            guard now < deadline else { break }
            _ = poll(&pfd, 1, Int32(clamping: (deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000))
            _ = lcs_eventfd_drain(wakeFD)
        }
        reportTermination(elapsed: MonotonicInstant.now.duration(since: started), manualNow: nil)
    }

    /// Whether a termination deadline is armed. [thread-safe]
    var terminationArmed: Bool { state.withLock { $0.termination != nil } }

    private static func report(_ p: Phase, elapsed: Duration, policy: Configuration.WatchdogPolicy) -> WatchdogReport {
        WatchdogReport(observer: p.observer, event: p.event.isEmpty ? p.budgetKind.rawValue : p.event, budget: p.budgetKind,
                       of: p.budget, elapsed: elapsed, policy: policy)
    }

    /// What the watchdog's thread does: watch (the monotonic clock), or a manual clock's termination backstop.
    private enum ThreadJob { case watch, terminationBackstop }

    /// Starts the thread with every signal blocked in it from its first instruction: the watching one
    /// joined by `shutdown()`, the backstop detached.
    private func spawn(_ job: ThreadJob = .watch) {
        let box = Unmanaged.passRetained(ThreadStart(watchdog: self, job: job))
        var tid = pthread_t()
        let rc = lcs_thread_create_signals_blocked(&tid, { raw in
            let start = Unmanaged<ThreadStart>.fromOpaque(raw!).takeRetainedValue()
            switch start.job {
            case .watch: start.watchdog.watch()
            case .terminationBackstop: start.watchdog.backstopTermination()
            }
            return nil
        }, box.toOpaque())
        guard rc == 0 else { return box.release() }
        switch job {
        case .watch: state.withLock { $0.thread = tid }
        // Detached: it holds the watchdog until it ends, at its deadline or once `shutdown` wakes it
        // (an application dropped without `shutdown` would otherwise leave it unjoined).
        case .terminationBackstop: pthread_detach(tid)
        }
    }

    /// The thread's watchdog and job, handed over retained.
    private final class ThreadStart {
        let watchdog: Watchdog
        let job: ThreadJob
        init(watchdog: Watchdog, job: ThreadJob) {
            self.watchdog = watchdog
            self.job = job
        }
    }

    /// The watchdog thread's loop, until `shutdown()`.
    private func watch() {
        var pfd = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
        var hang = HangSampler(budget: hangBudget)
        var nextSample = MonotonicInstant.now + hang.interval
        while true {
            let now = MonotonicInstant.now
            let (wake, stopping) = state.withLock { s in
                let deadlines = [s.phase.flatMap { $0.reported || $0.pausedAt != nil ? nil : $0.deadline },
                                 s.termination.flatMap { $0.reported ? nil : $0.deadline }]
                let wake = deadlines.compactMap { $0 }.reduce(nextSample, min)
                // Published under the lock that publishes deadlines: a deadline set after this read
                // and before `wake` signals the eventfd, which `poll` then sees.
                s.plannedWake = wake
                return (wake, s.stopping)
            }
            if stopping { return }
            let timeout = wake <= now ? 0 : Int32(clamping: (wake.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
            _ = poll(&pfd, 1, timeout)
            _ = lcs_eventfd_drain(wakeFD)
            let later = MonotonicInstant.now
            checkPhase(later)
            if later >= nextSample {
                checkHang(&hang, later)
                nextSample = later + hang.interval
            }
            checkTermination(later)
        }
    }

    private func checkPhase(_ now: MonotonicInstant) {
        let overrun = state.withLock { s -> WatchdogReport? in
            guard var p = s.phase, !p.reported, p.pausedAt == nil, now >= p.deadline else { return nil }
            p.reported = true
            s.phase = p
            return Self.report(p, elapsed: now.duration(since: p.started), policy: policy)
        }
        if let overrun { onOverrun(overrun) }
    }

    /// The hang budget: only outside budgeted phases (a phase's own budget covers its callbacks).
    private func checkHang(_ hang: inout HangSampler, _ now: MonotonicInstant) {
        if state.withLock({ $0.phase != nil || $0.pauses > 0 }) {
            hang.reset()
            return
        }
        guard let overrun = hang.sample(probe, now: now), let running = probe.running() else { return }
        // Still the same callback after the read (not one that began meanwhile).
        guard probe.outerWords() == overrun.words else { return }
        onOverrun(WatchdogReport(observer: running.outermost.owner, event: running.outermost.name, budget: .hang,
                                 of: hang.budget, elapsed: overrun.elapsed, policy: policy,
                                 subject: .hang(running.outermost, in: running.innermost)))
    }

    private func checkTermination(_ now: MonotonicInstant) {
        reportTermination(elapsed: nil, manualNow: now)
    }

    /// Reports the termination overdue, once: when the clock reads `manualNow` past its deadline, or
    /// (`manualNow` nil: the real-time backstop) at once, `elapsed` after it was armed.
    private func reportTermination(elapsed: Duration?, manualNow now: MonotonicInstant?) {
        let due = state.withLock { s -> Termination? in
            guard var t = s.termination, !t.reported, now.map({ $0 >= t.deadline }) ?? true else { return nil }
            t.reported = true
            s.termination = t
            return t
        }
        guard let due else { return }
        let running = probe.running()
        onTerminationOverdue(WatchdogReport(observer: running?.outermost.owner ?? "", event: running?.outermost.name ?? "terminate",
                                            budget: .terminate, of: terminateBudget,
                                            elapsed: elapsed ?? now.map { $0.duration(since: due.requested) } ?? terminateBudget,
                                            policy: policy,
                                            subject: .termination(reason: due.reason, running: running?.outermost,
                                                                  in: running?.innermost)))
    }
}
