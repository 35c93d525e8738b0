@preconcurrency import Glibc
import AppLifecycle

/// Signals → host commands, with Ctrl-Z job control: `SIGTSTP`, `SIGCONT`, `SIGTERM`, `SIGINT`, `SIGUSR1`.
///
/// Part of `OSEventSources`, whose documentation gives the mapping. Signals arrive through the loop's
/// signalfd; `start()` blocks them in the calling (loop) thread.
final class SignalSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread]; closures posted with `loop.perform` run there.

    /// The signals taken, with the names used in origins (`signal SIGTSTP`).
    static let handled: [(signo: Int32, name: String)] = [
        (SIGTSTP, "SIGTSTP"), (SIGCONT, "SIGCONT"), (SIGTERM, "SIGTERM"), (SIGINT, "SIGINT"), (SIGUSR1, "SIGUSR1"),
    ]

    /// Really stops the process (stdout and stderr are already flushed): `SIGSTOP` to the whole process,
    /// which the shell's job control reports as stopped; it returns once the process is continued.
    static func sendStopToProcess() {
        _ = kill(getpid(), SIGSTOP)
    }

    private let context: OSEventContext
    /// Called to stop the process for Ctrl-Z (tests replace it). [loop-thread]
    var stopProcess: () -> Void = SignalSource.sendStopToProcess
    /// Whether a Ctrl-Z waits for the application to be suspended. [loop-thread]
    private(set) var stopPending = false
    private var sources: [LoopSource] = []

    init(_ context: OSEventContext) {
        self.context = context
    }

    deinit {
        for source in sources { source.cancel() }
    }

    /// Blocks the signals in the calling thread and watches them on the loop. [loop-thread]
    ///
    /// - Throws: what `MainRunLoop.addSignal` throws (`.notOnLoopThread`, `.system`); nothing stays
    ///   watched then (the signals already blocked stay blocked).
    func start() throws(ApplicationError) {
        guard sources.isEmpty else { return }
        do {
            for (signo, _) in Self.handled {
                sources.append(try context.loop.addSignal(signo) { [weak self] _ in self?.handle(signal: signo) })
            }
        } catch {
            stop()
            throw ApplicationError(error)
        }
    }

    /// Stops watching; a pending Ctrl-Z stop is dropped. The signals stay blocked. [loop-thread]
    func stop() {
        for source in sources { source.cancel() }
        sources = []
        stopPending = false
    }

    /// Acts on one signal as the mapping says. [loop-thread]
    func handle(signal signo: Int32) {
        let origin = "signal \(Self.handled.first { $0.signo == signo }?.name ?? "\(signo)")"
        switch signo {
        case SIGTSTP:
            // Pending before `home`: the engine may suspend the app inside it (no background task).
            stopPending = true
            if context.state().isForeground { context.perform(.action(.home), origin) }
            stopIfSuspended()
        case SIGCONT:
            // Like the kernel, a continue cancels a stop that has not happened yet.
            stopPending = false
            guard Self.returnsToForeground(context.state()) else { return }
            // A later turn: readers of this turn (a clock step read while stopped) and signals that were
            // pending with this one are handled first, while the app is still suspended.
            context.loop.perform { [weak self] in
                guard let self, !sources.isEmpty, Self.returnsToForeground(context.state()) else { return }
                context.perform(.action(.foreground), origin)
            }
        case SIGTERM, SIGINT:
            context.perform(.action(.terminate), origin)
        case SIGUSR1:
            context.perform(.action(.memoryWarning(.warning)), origin)
        default:
            break
        }
    }

    /// With a Ctrl-Z pending, `suspended` stops the process on the next loop turn. [loop-thread]
    ///
    /// The next turn, not now: the host calls this from inside the transition, whose remaining output
    /// (trace lines) should be written before the process stops. The state is read again then.
    func applicationStateChanged(to state: ApplicationState) {
        guard stopPending, state == .suspended else { return }
        context.loop.perform { [weak self] in self?.stopIfSuspended() }
    }

    private static func returnsToForeground(_ state: ApplicationState) -> Bool {
        state == .background || state == .suspended
    }

    /// Stops the process if a Ctrl-Z is pending and the app runs no code (suspended, or not running).
    private func stopIfSuspended() {
        guard stopPending else { return }
        let state = context.state()
        guard state == .suspended || state == .notRunning else { return }
        stopPending = false
        // Everything written so far reaches the terminal before the shell prints "Stopped".
        _ = fflush(nil)
        stopProcess()
    }
}
