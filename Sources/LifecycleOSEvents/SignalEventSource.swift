@preconcurrency import Glibc
import LifecycleRunLoop

/// Signals → `OSEvent.signal(signo, senderPID:)`, through the loop's signalfd.
///
/// Part of `OSEventSources`. `start()` blocks the signals in the calling thread (the loop thread): a
/// signal taken here no longer runs its default action (a `SIGTSTP` no longer stops the process, a
/// `SIGTERM` no longer ends it); the handler decides. See `OSEventSources` for the threads caveat.
public final class SignalEventSource: @unchecked Sendable {
    // @unchecked: every member is [loop-thread].

    /// The signals watched, in the order given.
    public let signals: [Int32]
    private let sink: OSEventSink
    private var sources: [LoopSource] = []

    init(signals: [Int32], sink: OSEventSink) {
        var unique: [Int32] = []
        for signo in signals where !unique.contains(signo) { unique.append(signo) }
        self.signals = unique
        self.sink = sink
    }

    deinit {
        for source in sources { source.cancel() }
    }

    /// Whether the signals are watched now. [loop-thread: checked]
    public var isWatching: Bool {
        sink.loop.preconditionOnLoopThread("SignalEventSource.isWatching")
        return !sources.isEmpty
    }

    /// Blocks the signals in the calling thread and watches them on the loop. [loop-thread]
    ///
    /// - Throws: `.notOnLoopThread`; `.invalidArgument` for `SIGKILL`, `SIGSTOP` or a number outside
    ///   1…64; `.system` when blocking or the signalfd fails. Nothing stays watched then (the signals
    ///   already blocked stay blocked).
    func start() throws(OSEventError) {
        guard sources.isEmpty else { return }
        do {
            for signo in signals {
                sources.append(try sink.loop.addSignal(signo) { [weak self] sender in
                    self?.sink.emit(.signal(signo, senderPID: sender))
                })
            }
        } catch {
            stop()
            throw OSEventError(error)
        }
    }

    /// Stops watching. The signals stay blocked in the loop thread (pending, harmless). [loop-thread]
    func stop() {
        for source in sources { source.cancel() }
        sources = []
    }
}
