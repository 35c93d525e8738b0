import CLifecycleSystem
@preconcurrency import Glibc
import Synchronization

/// Notices, from its own thread, that one of some signals is pending — blocked, and not yet read by
/// the loop's signalfd — so that an embedder can act even when the loop thread never turns again (a
/// callback that never returns). swift-service-lifecycle takes its signals on a thread of their own
/// for the same reason; here the loop still reads and handles every signal.
///
/// Guarantees:
/// - **Never consumes.** It polls a signalfd of its own for readability and never reads it; the
///   signal stays pending for the loop's signalfd, which handles it as usual when it can.
/// - **One-shot.** `handler` is called at most once, on the watch's thread, with the first of the
///   signals found pending (`sigpending`); then the thread ends. A signal the loop reads before the
///   watch wakes may go unnoticed here (the loop has it: nothing is lost).
/// - **Threads.** The watch's thread has every signal blocked. The signals must be blocked in every
///   thread of the process (start the loop's `OSEventSources` first, before other threads): a thread
///   that lets one through takes it with its default action, and it is never pending.
/// - `stop()` [thread-safe, idempotent] wakes and joins the thread; the handler is not called after
///   it returns. The thread holds the watch until it ends: call `stop()` when done with it.
public final class PendingSignalWatch: @unchecked Sendable {
    // @unchecked: the descriptors are immutable; `thread` is behind its lock.
    /// The signals watched.
    public let signals: [Int32]
    private let signalFD: Int32
    private let wakeFD: Int32
    private let handler: @Sendable (Int32) -> Void
    private let thread = Mutex<pthread_t?>(nil)
    private let stopping = Atomic<Bool>(false)

    /// Starts watching on a new thread.
    /// - Throws: `.invalidArgument` for a number outside 1…64 or `SIGKILL`/`SIGSTOP`; `.system` when
    ///   the signalfd, the eventfd or the thread cannot be made.
    public init(signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) throws(OSEventError) {
        for signo in signals where signo < 1 || signo > 64 || signo == SIGKILL || signo == SIGSTOP {
            throw OSEventError(.invalidArgument, "pending-signal watch: signal \(signo) cannot be watched")
        }
        self.signals = signals
        self.handler = handler
        signalFD = signals.withUnsafeBufferPointer { lcs_signalfd(-1, $0.baseAddress, Int32($0.count)) }
        guard signalFD >= 0 else { throw Self.systemError("signalfd") }
        wakeFD = lcs_eventfd()
        guard wakeFD >= 0 else {
            let error = Self.systemError("eventfd")
            close(signalFD)
            throw error
        }
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = lcs_thread_create_signals_blocked(&tid, { raw in
            Unmanaged<PendingSignalWatch>.fromOpaque(raw!).takeRetainedValue().watch()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            close(signalFD)
            close(wakeFD)
            throw OSEventError(.system, "pending-signal watch: pthread_create failed: \(String(cString: lcs_strerror(rc)))", errno: rc)
        }
        thread.withLock { $0 = tid }
    }

    deinit {
        close(signalFD)
        close(wakeFD)
    }

    /// Wakes and joins the thread; the handler is not called after this returns. [thread-safe] Idempotent.
    public func stop() {
        stopping.store(true, ordering: .sequentiallyConsistent)
        _ = lcs_eventfd_signal(wakeFD)
        let joined = thread.withLock { t -> pthread_t? in
            defer { t = nil }
            return t
        }
        if let joined { pthread_join(joined, nil) }
    }

    private static func systemError(_ call: String) -> OSEventError {
        let code = errno
        return OSEventError(.system, "pending-signal watch: \(call) failed: \(String(cString: lcs_strerror(code))) (errno \(code))",
                            errno: code)
    }

    /// The watch's thread: wait until a watched signal is pending (or `stop`), report it once, end.
    private func watch() {
        var fds = [pollfd(fd: signalFD, events: Int16(POLLIN), revents: 0), pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0)]
        while !stopping.load(ordering: .sequentiallyConsistent) {
            guard (try? systemCall("poll", { poll(&fds, 2, -1) })) != nil else { return }
            if fds[1].revents != 0 || stopping.load(ordering: .sequentiallyConsistent) { return }
            guard fds[0].revents & Int16(POLLIN) != 0 else { continue }
            var pending = sigset_t()
            sigpending(&pending)
            // Readable but gone: the loop read it between the poll and here; wait again.
            guard let signo = signals.first(where: { sigismember(&pending, $0) == 1 }) else { continue }
            handler(signo)
            return
        }
    }
}
