import Synchronization

/// A handle on one event source of a `MainRunLoop`: a timer, a readable file descriptor, or a signal.
///
/// The loop keeps the source (and its callback) alive while it is active; dropping the handle does
/// not cancel it. Call `cancel()` to remove it.
///
/// - Important: a callback that captures its own loop or source strongly forms a cycle that lasts
///   until the source is cancelled (or, for a one-shot timer, fires).
public final class LoopSource: @unchecked Sendable {
    // @unchecked: every stored property except `active` is read and written on the loop thread only.

    enum Kind {
        case timer
        case reader(fd: Int32)
        case signal(Int32)
    }

    enum Callback {
        case plain(() -> Void)
        case signal((_ senderPID: Int32) -> Void)
    }

    let kind: Kind
    /// Unique per loop and never reused: the epoll token of a reader, the tie-break of equal timer deadlines.
    let id: UInt64
    weak var loop: MainRunLoop?
    /// Cleared on cancel; the dispatcher holds its own copy while the callback runs.
    var callback: Callback?
    private let active = Atomic<Bool>(true)

    // Timers only.
    var deadline: UInt64 = 0
    /// Nanoseconds, at least 1; nil for a one-shot timer.
    var interval: UInt64?
    /// Whether an entry for this timer is in the loop's heap (false while its callback runs).
    var inHeap = false

    init(loop: MainRunLoop, id: UInt64, kind: Kind, callback: Callback) {
        self.loop = loop
        self.id = id
        self.kind = kind
        self.callback = callback
    }

    /// Removes the source: its callback is never called again.
    ///
    /// [thread-safe] Takes effect at once, even for events already reported in the current loop turn.
    /// Safe from inside the source's own callback: the source is detached at once and its callback is
    /// released after it returns. From another thread the source stops firing at once and the loop
    /// detaches it on its next turn (so an owner released on any thread may cancel its sources).
    /// Idempotent; a no-op on a fired one-shot timer or once the loop is gone.
    public func cancel() {
        guard isActive else { return }
        guard let loop else {
            deactivate()
            return
        }
        if loop.isOnLoopThread {
            loop.detach(self)
        } else {
            active.store(false, ordering: .releasing)
            loop.perform { [self] in loop.detach(self) }
        }
    }

    /// Whether the source can still fire: false after `cancel()`, after a one-shot timer fired
    /// (already while its callback runs), and once its loop is deallocated. [thread-safe]
    public var isActive: Bool { active.load(ordering: .acquiring) }

    /// Marks the source inactive and drops its callback. [loop-thread]
    func deactivate() {
        active.store(false, ordering: .releasing)
        callback = nil
    }
}
