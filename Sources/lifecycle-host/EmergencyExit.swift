import AppLifecycle
@preconcurrency import Glibc
import Synchronization

/// How the host ends when it cannot end through its main loop — from the watchdog thread (a watchdog
/// kill, a hang, an overdue termination) or from inside someone else's `exit()` — and how it notices
/// such an `exit()`. One per process.
///
/// Every such end does the same things, in order: writes its last trace line (rendered from a
/// typed `HostEvent`), writes the metrics file when there is one (`setLastWrite`), says it on
/// standard error, flushes standard output and error (only if their locks are free: the stuck thread
/// may hold one), removes the control socket's file, then `_exit`s with the event's status — no
/// `atexit` handler, no destructor, nothing that could block.
///
/// **Exit interception.** `arm()` (at the start of `run`) registers an `on_exit` handler once; until
/// `disarm()` (when `run` returns), an `exit()` from anywhere — a plugin's `init`, an observer, a
/// plugin thread — is not the host's: the handler writes an `exit` event naming the callback the loop
/// thread was in (or what the host was doing: loading a plugin), and `_exit`s with
/// `HostExit.pluginExit` instead of the status the caller asked for (the only way to change the status
/// of an exit under way). `_exit`, `quick_exit` and a crash cannot be intercepted.
enum EmergencyExit {
    private struct State {
        var writer: TraceWriter?
        var socketPath: String?
        var application: Application?
        /// The state of the last traced event (a handler on another thread must not read the engine's).
        var state: ApplicationState = .notRunning
        var armed = false
        var registered = false
        /// Run before `_exit`: the metrics file's last write (`--metrics-file`).
        var lastWrite: (@Sendable () -> Void)?
    }

    private static let shared = Mutex(State())

    /// Where the last line goes. [thread-safe]
    static func setWriter(_ writer: TraceWriter?) { shared.withLock { $0.writer = writer } }

    /// The socket file to remove (nil: none). [thread-safe]
    static func setSocketPath(_ path: String?) { shared.withLock { $0.socketPath = path } }

    /// What to write last, after the trace line, before `_exit` (nil: nothing). [thread-safe]
    static func setLastWrite(_ body: (@Sendable () -> Void)?) { shared.withLock { $0.lastWrite = body } }

    /// The application whose running callbacks an `exit` event names. [thread-safe]
    static func setApplication(_ application: Application?) { shared.withLock { $0.application = application } }

    /// The application's state after the last traced event. [thread-safe]
    static func noteState(_ state: ApplicationState) { shared.withLock { $0.state = state } }

    /// From now on an `exit()` is someone else's: intercepted. [thread-safe]
    static func arm() {
        let register = shared.withLock { s -> Bool in
            s.armed = true
            defer { s.registered = true }
            return !s.registered
        }
        if register { _ = on_exit({ status, _ in EmergencyExit.intercepted(status: status) }, nil) }
    }

    /// The host's own exit follows: not intercepted. [thread-safe]
    static func disarm() { shared.withLock { $0.armed = false } }

    /// Ends the process now with `event`'s status, its line last in the trace. [thread-safe] Never returns.
    static func end(_ event: HostEvent) -> Never {
        let (writer, socketPath, state, lastWrite) = shared.withLock { s in
            s.armed = false  // our own end from here: not an exit to intercept
            return (s.writer, s.socketPath, s.state, s.lastWrite)
        }
        writer?.write(event.traceLine(state: state))
        lastWrite?()
        fputs("lifecycle-host: \(event.message)\n", stderr)
        flushIfFree(stdout)
        flushIfFree(stderr)
        if let socketPath { _ = unlink(socketPath) }
        _exit(event.status)
    }

    /// The `on_exit` handler: an exit the host did not make while armed becomes a `pluginExit` end.
    private static func intercepted(status: Int32) {
        let (armed, application) = shared.withLock { ($0.armed, $0.application) }
        guard armed else { return }
        end(.unexpectedExit(status: status, running: application?.runningCallbacks))
    }

    /// Flushes a stream unless another thread holds its lock (which may never be released).
    private static func flushIfFree(_ stream: UnsafeMutablePointer<FILE>?) {
        guard let stream, ftrylockfile(stream) == 0 else { return }
        fflush_unlocked(stream)
        funlockfile(stream)
    }
}

/// An end of the host decided outside its main loop, typed: its trace line, its message and its
/// exit status are rendered from it.
enum HostEvent {
    /// The watchdog killed the application (policy `terminate`) — a budgeted phase or a callback past
    /// the hang budget — and the callback cannot be unwound: the process exits (`watchdogKill`).
    case watchdogKill(WatchdogReport)
    /// A termination (SIGTERM, SIGINT) did not end the process within the terminate budget
    /// (`terminationOverdue`).
    case terminationOverdue(WatchdogReport)
    /// `exit(status)` was called by code that is not the host's while `run` ran (`pluginExit`);
    /// `running`: the callbacks the loop thread was in, if any.
    case unexpectedExit(status: Int32, running: (outermost: RunningCallback, innermost: RunningCallback)?)

    var status: Int32 {
        switch self {
        case .watchdogKill: HostExit.watchdogKill
        case .terminationOverdue: HostExit.terminationOverdue
        case .unexpectedExit: HostExit.pluginExit
        }
    }

    /// One sentence, as standard error gets it.
    var message: String {
        switch self {
        case .watchdogKill(let report): "watchdog: \(report.description)"
        case .terminationOverdue(let report): "watchdog: \(report.description); the process exits with status \(status)"
        case .unexpectedExit(let code, let running):
            "exit(\(code)) was called \(Self.place(running)), not by the host; the process exits with status \(status)"
        }
    }

    /// The trace line: `watchdog` (with the report's budget) or `exit` (with the plugin that called it).
    func traceLine(state: ApplicationState) -> TraceLine {
        switch self {
        case .watchdogKill(let report):
            TraceLine(kind: "watchdog", name: report.event, state: .notRunning, plugin: report.observer,
                      detail: report.description + "; the process exits", budget: report.budgetName)
        case .terminationOverdue(let report):
            TraceLine(kind: "watchdog", name: report.event, state: state, plugin: report.observer,
                      detail: report.description + "; the process exits with status \(status)", budget: report.budgetName)
        case .unexpectedExit(let code, let running):
            TraceLine(kind: "exit", name: "exit(\(code))", state: state, plugin: running?.innermost.owner,
                      detail: "called \(Self.place(running)), not by the host; the process exits with status \(status)")
        }
    }

    /// `in the didBecomeActive observer of 'x'`, `in init of '/p/libx.so'`, `outside any callback`.
    private static func place(_ running: (outermost: RunningCallback, innermost: RunningCallback)?) -> String {
        guard let running else { return "outside any callback" }
        if running.innermost == running.outermost { return "in the \(running.innermost)" }
        return "in the \(running.innermost) (inside the \(running.outermost))"
    }
}
