@preconcurrency import Glibc
import AppLifecycle
import CLifecycleABI
import CLifecycleSystem

/// Turns real OS events into host commands, on the loop thread: signals (with working Ctrl-Z job
/// control), PSI memory pressure, and steps of the wall clock.
///
/// Mapping (each command is performed with the origin in parentheses):
///
/// | OS event | Host command |
/// | --- | --- |
/// | `SIGTSTP` (Ctrl-Z) | `home` if the app is in the foreground (`signal SIGTSTP`); then, once the app is suspended, the process really stops: stdout and stderr are flushed and it sends itself `SIGSTOP`, so the shell shows the job as stopped and `fg` resumes it. It stops at once if the app is already suspended (or not running), otherwise on the loop turn after the host reports `suspended` (so that transition's output is complete). An app in the background is not sent `home`; the process stops once it is suspended. A `SIGCONT` before then cancels the pending stop. |
/// | `SIGCONT` (`fg`, `bg`, `kill -CONT`) | `foreground` if the app is in the background or suspended (`signal SIGCONT`), performed on a later loop turn: whatever arrived while the process was stopped (a clock step, other signals, pressure) is handled first, while the app is still suspended, so the engine coalesces it. Nothing while the app is active, inactive or not running. |
/// | `SIGTERM`, `SIGINT` (Ctrl-C) | `terminate` (`signal SIGTERM`, `signal SIGINT`). |
/// | `SIGUSR1` | `memory-warning warning` (`signal SIGUSR1`). |
/// | PSI warning trigger (default `some 150000 2000000`: some task stalled on memory ≥ 150 ms within 2 s) | `memory-warning warning` (`psi warning`), at most one per trigger window. |
/// | PSI critical trigger (default `full 150000 2000000`: all tasks stalled ≥ 150 ms within 2 s) | `memory-warning critical` (`psi critical`), at most one per trigger window. |
/// | `CLOCK_REALTIME` set (`date -s`, `settimeofday`, an NTP step; not gradual slewing) | `time-change` (`clock`). |
///
/// PSI reads the own cgroup's `memory.pressure` when there is one (cgroup v2), else
/// `/proc/pressure/memory`; a file that cannot be opened or armed is logged and the host runs on
/// without memory-pressure warnings. An event seen within a trigger's window of the previous warning
/// at that level is held until the window ends (then reported once), and the descriptor is not watched
/// meanwhile, so a pressure state that keeps reporting cannot make the loop spin.
///
/// - Important: `start()` blocks the five signals in the calling thread, which must be the loop thread.
///   Threads started afterwards inherit the mask; a thread started before it does not, and a signal sent
///   to the process (Ctrl-Z, Ctrl-C, `kill`) may then be delivered there and take its default action
///   (stop or terminate at once, without `home` or `terminate`). So call `start()` before spawning
///   threads. The signals stay blocked after `stop()`.
final class OSEventSources: @unchecked Sendable {
    // @unchecked: every member is [loop-thread]; closures this type posts with `loop.perform` run there.

    /// What to watch. Defaults: everything on.
    struct Options: Sendable {
        /// Signals (`--no-signals` turns them off).
        var signals = true
        /// PSI memory pressure.
        var pressure = true
        /// The PSI file the triggers are armed on: a cgroup's `memory.pressure` or `/proc/pressure/memory`.
        var pressureFile = Options.defaultPressureFile
        /// `some|full STALL_µs WINDOW_µs`: the warning level. The kernel requires a window that is a
        /// multiple of 2 s unless the process may raise resource limits (here: always).
        var warningTrigger = "some 150000 2000000"
        /// As `warningTrigger`, for the critical level.
        var criticalTrigger = "full 150000 2000000"
        /// A `CLOCK_REALTIME` timerfd that reports clock steps as a significant time change.
        var clock = true

        /// The own cgroup's `memory.pressure` (cgroup v2, from `/proc/self/cgroup`), else
        /// `/sys/fs/cgroup/memory.pressure`, else `/proc/pressure/memory`. Reads the file system.
        static var defaultPressureFile: String {
            var candidates: [String] = []
            if let own = ownCgroupV2Path(), own != "/" { candidates.append("/sys/fs/cgroup\(own)/memory.pressure") }
            candidates.append("/sys/fs/cgroup/memory.pressure")
            return candidates.first { access($0, F_OK) == 0 } ?? "/proc/pressure/memory"
        }

        /// The path of the `0::PATH` line of `/proc/self/cgroup`, nil when there is none.
        private static func ownCgroupV2Path() -> String? {
            guard let file = fopen("/proc/self/cgroup", "re") else { return nil }
            defer { fclose(file) }
            var line: UnsafeMutablePointer<CChar>?
            var capacity = 0
            defer { free(line) }
            while getline(&line, &capacity, file) > 0, let line {
                let text = String(cString: line)
                guard text.hasPrefix("0::") else { continue }
                let path = text.dropFirst(3).trimmingSuffix("\n")
                return path.hasPrefix("/") ? path : nil
            }
            return nil
        }
    }

    let options: Options
    let signals: SignalSource
    let pressure: PressureSource
    let clock: ClockChangeSource
    private var started = false

    /// Creates the sources; nothing is installed before `start()`.
    ///
    /// - Parameters:
    ///   - loop: the host's loop; every callback runs on its thread.
    ///   - perform: runs a command; the second argument is its origin (`signal SIGTSTP`, `psi warning`, `clock`).
    ///   - state: reads the application's state.
    ///   - log: reports a problem (a PSI file that cannot be armed, a failing timerfd) in one line.
    init(loop: MainRunLoop, options: Options, perform: @escaping (HostCommand, String) -> Void,
         state: @escaping () -> ApplicationState, log: @escaping (String) -> Void)
    {
        self.options = options
        let context = OSEventContext(loop: loop, perform: perform, state: state, log: log)
        signals = SignalSource(context)
        pressure = PressureSource(context)
        clock = ClockChangeSource(context)
    }

    /// Installs the enabled sources. [loop-thread]
    ///
    /// Signals first (blocked in the calling thread: see the type's note), then the PSI triggers, then the
    /// clock timerfd. A PSI file or timerfd that cannot be set up is logged and skipped, not fatal.
    /// Does nothing when already started; after `stop()` it installs everything again.
    /// - Throws: `.notOnLoopThread` off the loop thread; `.system` when a signal cannot be blocked or the
    ///   signalfd cannot be created. Nothing stays installed when it throws.
    func start() throws(ApplicationError) {
        guard !started else { return }
        do {
            if options.signals { try signals.start() }
            if options.pressure {
                try pressure.arm(file: options.pressureFile, trigger: options.warningTrigger, level: .warning)
                try pressure.arm(file: options.pressureFile, trigger: options.criticalTrigger, level: .critical)
            }
            if options.clock { try clock.start() }
        } catch {
            stopSources()
            throw error
        }
        started = true
    }

    /// Tells the sources the application's new state; the host calls it after every state change.
    ///
    /// [loop-thread] With a Ctrl-Z pending, `suspended` makes the process stop on the next loop turn.
    func applicationStateChanged(to state: ApplicationState) {
        signals.applicationStateChanged(to: state)
    }

    /// Removes every source and closes the descriptors it opened; a pending Ctrl-Z stop is dropped.
    ///
    /// [loop-thread] The signals stay blocked in the loop thread (a `SIGTERM` stays pending instead of
    /// killing the process). Idempotent.
    func stop() {
        stopSources()
        started = false
    }

    private func stopSources() {
        signals.stop()
        pressure.stop()
        clock.stop()
    }

    // MARK: Test seams

    /// Stops the process for Ctrl-Z, called after stdout and stderr are flushed; by default sends
    /// `SIGSTOP` to the process and returns once it is continued. Tests replace it. [loop-thread]
    var stopProcess: () -> Void {
        get { signals.stopProcess }
        set { signals.stopProcess = newValue }
    }

    /// Handles one read of the clock timerfd: `result` as `lcs_timerfd_read` returns it, `errno` after it.
    func handleClockRead(result: Int64, errno code: Int32) {
        clock.handleClockRead(result: result, errno: code)
    }
}

/// What every source needs: the loop and the host's three callbacks. [loop-thread]
struct OSEventContext {
    let loop: MainRunLoop
    let perform: (HostCommand, String) -> Void
    let state: () -> ApplicationState
    let log: (String) -> Void
}

extension OSEventContext {
    /// `"open(/x) failed: No such file or directory (errno 2)"`. [thread-safe]
    static func failure(_ call: String, _ code: Int32) -> String {
        let text = lcs_strerror(code).map { String(cString: $0) } ?? "error \(code)"
        return "\(call) failed: \(text) (errno \(code))"
    }
}

extension StringProtocol {
    fileprivate func trimmingSuffix(_ suffix: String) -> String {
        hasSuffix(suffix) ? String(dropLast(suffix.count)) : String(self)
    }
}
