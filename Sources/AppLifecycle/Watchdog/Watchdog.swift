import CLifecycleSystem
import Glibc
import Synchronization

/// Watches budgeted callbacks from its own thread, so that a callback that never returns is still noticed.
///
/// The loop thread opens a phase (`begin`) with a budget, names the callback running inside it
/// (`setCurrent`), and closes it (`end`). The watchdog thread sleeps until the phase deadline and, if
/// the phase is still open then, reports the overrun at once through `onOverrun` — on the watchdog
/// thread, while the callback may still be running. Cost on the loop thread: a lock per call, and one
/// eventfd write per phase.
final class Watchdog: @unchecked Sendable {
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

    private struct State {
        var phase: Phase?
        var stopping = false
        var threadStarted = false
    }

    private let state = Mutex(State())
    private let wakeFD: Int32
    private let policy: Configuration.WatchdogPolicy
    private let onOverrun: @Sendable (WatchdogReport) -> Void
    private var thread: pthread_t?

    init(policy: Configuration.WatchdogPolicy, onOverrun: @escaping @Sendable (WatchdogReport) -> Void) {
        self.policy = policy
        self.onOverrun = onOverrun
        wakeFD = lcs_eventfd()
    }

    deinit { close(wakeFD) }

    /// Stops and joins the watchdog thread (which holds the watchdog until then). [loop-thread]
    func shutdown() {
        state.withLock { $0.stopping = true }
        _ = lcs_eventfd_signal(wakeFD)
        if let thread {
            pthread_join(thread, nil)
            self.thread = nil
        }
    }

    /// Opens a budgeted phase. [loop-thread]
    func begin(_ budgetKind: WatchdogReport.Budget, budget: Duration) {
        let now = MonotonicInstant.now
        let startThread = state.withLock { s -> Bool in
            s.phase = Phase(budgetKind: budgetKind, budget: budget, started: now, deadline: now + budget)
            defer { s.threadStarted = true }
            return !s.threadStarted
        }
        if startThread { spawn() }
        _ = lcs_eventfd_signal(wakeFD)
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
        let now = MonotonicInstant.now
        state.withLock { s in
            guard var phase = s.phase, phase.pausedAt == nil else { return }
            phase.pausedAt = now
            s.phase = phase
        }
    }

    /// Restarts the phase's clock: its deadline moves by the time it was stopped. [loop-thread]
    func resume() {
        let now = MonotonicInstant.now
        state.withLock { s in
            guard var phase = s.phase, let since = phase.pausedAt else { return }
            phase.deadline = phase.deadline + now.duration(since: since)
            phase.started = phase.started + now.duration(since: since)
            phase.pausedAt = nil
            s.phase = phase
        }
        _ = lcs_eventfd_signal(wakeFD)
    }

    /// Whether a phase is open. [loop-thread]
    var isWatching: Bool { state.withLock { $0.phase != nil } }

    /// Closes the phase. Returns the overrun, with the full elapsed time, when the watchdog reported one.
    func end() -> WatchdogReport? {
        resume()
        let now = MonotonicInstant.now
        let phase = state.withLock { s -> Phase? in
            defer { s.phase = nil }
            return s.phase
        }
        guard let phase, phase.reported || now >= phase.deadline else { return nil }
        let report = Self.report(phase, elapsed: now.duration(since: phase.started), policy: policy)
        if !phase.reported { onOverrun(report) }  // overran but returned before the watchdog woke
        return report
    }

    private static func report(_ p: Phase, elapsed: Duration, policy: Configuration.WatchdogPolicy) -> WatchdogReport {
        WatchdogReport(observer: p.observer, event: p.event.isEmpty ? p.budgetKind.rawValue : p.event, budget: p.budgetKind,
                       of: p.budget, elapsed: elapsed, policy: policy)
    }

    private func spawn() {
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { raw in
            let watchdog = Unmanaged<Watchdog>.fromOpaque(raw!).takeRetainedValue()
            watchdog.watch()
            return nil
        }, box.toOpaque())
        if rc == 0 { thread = tid } else { box.release() }
    }

    /// The watchdog thread's loop, until `shutdown()`.
    private func watch() {
        var pfd = pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)
        while true {
            let (deadline, stopping) = state.withLock { s in
                (s.phase.flatMap { $0.reported || $0.pausedAt != nil ? nil : $0.deadline }, s.stopping)
            }
            if stopping { return }
            var timeout: Int32 = -1
            if let deadline {
                let now = MonotonicInstant.now
                timeout = deadline <= now ? 0 : Int32(clamping: (deadline.nanoseconds - now.nanoseconds + 999_999) / 1_000_000)
            }
            _ = poll(&pfd, 1, timeout)
            _ = lcs_eventfd_drain(wakeFD)
            let now = MonotonicInstant.now
            let overrun = state.withLock { s -> WatchdogReport? in
                guard var p = s.phase, !p.reported, p.pausedAt == nil, now >= p.deadline else { return nil }
                p.reported = true
                s.phase = p
                return Self.report(p, elapsed: now.duration(since: p.started), policy: policy)
            }
            if let overrun { onOverrun(overrun) }
        }
    }
}
