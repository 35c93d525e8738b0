import AppLifecycle
import CLifecycleSystem
import PluginHost
@preconcurrency import Glibc
import Synchronization

/// How the host ends when it cannot end through its main loop — from the watchdog thread (a watchdog
/// kill, a hang, an overdue termination) or from inside someone else's `exit()` — and how it notices
/// such an `exit()`. One per process.
///
/// Every such end does the same things, in order: writes its last trace line (rendered from a
/// typed `HostEvent`), writes the metrics file when there is one (`setLastWrite`), says it on
/// standard error, flushes standard output and error (only if their locks are free: the stuck thread
/// may hold one), removes the control socket's file, kills the isolated plugins' processes and all
/// they started (`IsolatedProcesses.endAll`), then `_exit`s with the event's status — no
/// `atexit` handler, no destructor, nothing that could block.
///
/// **Exit interception.** `arm()` (at the start of `run`) registers an `on_exit` handler once; until
/// `disarm()` (when `run` returns), an `exit()` from anywhere — a plugin's `init`, an observer, a
/// plugin thread — is not the host's: the handler writes an `exit` event naming the callback the loop
/// thread was in (or what the host was doing: loading a plugin) — or, called on another thread, the
/// plugin whose code is on that thread's stack (its return addresses against the images of the
/// plugins loaded in this process) — and `_exit`s with `HostExit.pluginExit` instead of the status the
/// caller asked for (the only way to change the status of an exit under way). `_exit`, `quick_exit`
/// and a crash cannot be intercepted.
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
        /// Where the plugins loaded in this process are mapped, by id: who called an `exit()` from a
        /// thread that is not the main one.
        var pluginImages: [(id: String, ranges: [Range<UInt>])] = []
    }

    private static let shared = Mutex(State())

    /// Where the last line goes. [thread-safe]
    static func setWriter(_ writer: TraceWriter?) { shared.withLock { $0.writer = writer } }

    /// The socket file to remove (nil: none). [thread-safe]
    static func setSocketPath(_ path: String?) {
        shared.withLock { $0.socketPath = path }
        lcs_crash_guard_set_socket(path)  // a crash removes it too
    }

    /// What to write last, after the trace line, before `_exit` (nil: nothing). [thread-safe]
    static func setLastWrite(_ body: (@Sendable () -> Void)?) { shared.withLock { $0.lastWrite = body } }

    /// The application whose running callbacks an `exit` event names. [thread-safe]
    static func setApplication(_ application: Application?) { shared.withLock { $0.application = application } }

    /// Adds a plugin loaded in this process: `ranges`, its image's address ranges. [thread-safe]
    static func addPluginImage(id: String, ranges: [Range<UInt>]) {
        guard !ranges.isEmpty else { return }
        shared.withLock { $0.pluginImages.append((id, ranges)) }
        // A crash in that code names the plugin too (the crash guard reads plain memory).
        for range in ranges { _ = lcs_crash_guard_add_code(id, range.lowerBound, range.upperBound) }
    }

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
        // No unload runs: the isolated plugins' processes, and all they started, end here.
        IsolatedProcesses.endAll()
        _exit(event.status)
    }

    /// The `on_exit` handler: an exit the host did not make while armed becomes a `pluginExit` end.
    private static func intercepted(status: Int32) {
        let (armed, application, images) = shared.withLock { ($0.armed, $0.application, $0.pluginImages) }
        guard armed else { return }
        if application?.loop.isOnLoopThread ?? true {
            end(.unexpectedExit(status: status, running: application?.runningCallbacks, thread: nil))
        }
        end(.unexpectedExit(status: status, running: nil, thread: .other(plugin: pluginOnStack(images))))
    }

    /// The first plugin (innermost frame first) whose image holds a return address of this thread's
    /// stack; nil when none does. O(frames × segments of the plugins loaded), once, at the end.
    private static func pluginOnStack(_ images: [(id: String, ranges: [Range<UInt>])]) -> String? {
        guard !images.isEmpty else { return nil }
        let capacity: Int32 = 128
        return withUnsafeTemporaryAllocation(of: UnsafeMutableRawPointer?.self, capacity: Int(capacity)) { frames in
            let count = Int(lcs_backtrace(frames.baseAddress, capacity))
            for frame in frames.prefix(count) {
                guard let frame else { continue }
                let address = UInt(bitPattern: frame)
                if let owner = images.first(where: { image in image.ranges.contains { $0.contains(address) } }) { return owner.id }
            }
            return nil
        }
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
    /// `running`: the callbacks the loop thread was in, if any; `thread`: nil on the loop thread.
    case unexpectedExit(status: Int32, running: (outermost: RunningCallback, innermost: RunningCallback)?, thread: ExitThread?)

    /// Where an `exit()` that was not on the loop thread came from.
    enum ExitThread {
        /// Another thread: `plugin`, the one whose code is on its stack (nil: no plugin's).
        case other(plugin: String?)
    }

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
        case .unexpectedExit(let code, let running, let thread):
            "exit(\(code)) was called \(Self.place(running, thread)), not by the host; the process exits with status \(status)"
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
        case .unexpectedExit(let code, let running, let thread):
            TraceLine(kind: "exit", name: "exit(\(code))", state: state, plugin: Self.caller(running, thread),
                      detail: "called \(Self.place(running, thread)), not by the host; the process exits with status \(status)")
        }
    }

    /// The plugin the trace line names: the innermost callback's owner, or the plugin on the stack.
    private static func caller(_ running: (outermost: RunningCallback, innermost: RunningCallback)?, _ thread: ExitThread?) -> String? {
        if case .other(let plugin)? = thread { return plugin }
        return running?.innermost.owner
    }

    /// `in the didBecomeActive observer of 'x'`, `in init of '/p/libx.so'`, `outside any callback`,
    /// `on a thread of 'x' (not the main thread)`.
    private static func place(_ running: (outermost: RunningCallback, innermost: RunningCallback)?, _ thread: ExitThread?) -> String {
        if case .other(let plugin)? = thread {
            guard let plugin else { return "on a thread that is not the main thread, with no plugin's code on its stack" }
            return "on a thread of '\(plugin)' (not the main thread)"
        }
        guard let running else { return "outside any callback" }
        if running.innermost == running.outermost { return "in the \(running.innermost)" }
        return "in the \(running.innermost) (inside the \(running.outermost))"
    }
}
