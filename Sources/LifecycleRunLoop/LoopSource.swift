import Synchronization

/// A handle on one event source of a `MainRunLoop`: a timer, a file descriptor (IO source), or a signal.
///
/// The loop keeps the source (and its callback) alive while it is active; dropping the handle does
/// not cancel it. Call `cancel()` to remove it.
///
/// - Important: a callback that captures its own loop or source strongly forms a cycle that lasts
///   until the source is cancelled (or, for a one-shot timer, fires).
public final class LoopSource: @unchecked Sendable {
    // @unchecked: vars loop-thread only (the loop's entry points check); `active` atomic; an off-loop
    // cancel() only clears `active`.

    enum Kind {
        case timer
        /// A timer on the monotonic clock in a loop on a manual clock (`addRealTimeTimer`).
        case realTimeTimer
        case io(fd: Int32)
        case signal(Int32)
    }

    enum Callback {
        case plain(() -> Void)
        case signal((_ senderPID: Int32) -> Void)
        case io((IOEvents) -> Void)
    }

    let kind: Kind
    /// Unique per loop and never reused: the epoll token of a reader, the tie-break of equal timer deadlines.
    let id: UInt64
    weak var loop: MainRunLoop?
    /// Cleared on cancel; the dispatcher holds its own copy while the callback runs.
    var callback: Callback?
    private let active = Atomic<Bool>(true)

    // IO sources only: the conditions waited for.
    var ioEvents: IOEvents = []

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
            // The loop is gone (or going, on another thread: its deinit deactivates every source and
            // drops their callbacks). Only the flag, which is atomic: the callback is the loop's to drop.
            active.store(false, ordering: .releasing)
            return
        }
        if loop.isOnLoopThread {
            loop.detach(self)
        } else {
            active.store(false, ordering: .releasing)
            loop.perform { [self] in loop.detach(self) }
        }
    }

    /// Changes what an IO source (`addIO`, `addReader`) waits for; see `MainRunLoop.addIO`.
    ///
    /// [loop-thread] Takes effect from the next wait. A no-op on a cancelled source.
    /// - Throws: `.invalidArgument` for a source that is not an IO source; `.notOnLoopThread`;
    ///   `.system` when epoll refuses the change.
    public func setIOEvents(_ events: IOEvents) throws(RunLoopError) {
        guard case .io(let fd) = kind else {
            throw RunLoopError(.invalidArgument, "setIOEvents: the source is not an IO source")
        }
        guard let loop else { return }
        try loop.updateIO(self, fd: fd, events: events)
    }

    /// The conditions an IO source waits for (empty for other sources). [loop-thread: checked]
    public var events: IOEvents {
        loop?.preconditionOnLoopThread("LoopSource.events")
        return ioEvents
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

/// The conditions an IO source waits for, and that its callback receives.
public struct IOEvents: OptionSet, Hashable, Sendable {
    public let rawValue: UInt32
    public init(rawValue: UInt32) { self.rawValue = rawValue }

    /// Data to read, or end of file (`EPOLLIN`).
    public static let readable = IOEvents(rawValue: 1 << 0)
    /// Room to write (`EPOLLOUT`).
    public static let writable = IOEvents(rawValue: 1 << 1)
    /// Urgent data (`EPOLLPRI`): PSI triggers, sysfs attributes, TCP out-of-band data.
    public static let priority = IOEvents(rawValue: 1 << 2)
    /// The peer closed (`EPOLLHUP`, `EPOLLRDHUP`); always reported.
    public static let hangUp = IOEvents(rawValue: 1 << 3)
    /// An error is pending on the descriptor (`EPOLLERR`); always reported.
    public static let error = IOEvents(rawValue: 1 << 4)

    var epollMask: UInt32 {
        var mask: UInt32 = 0
        if contains(.readable) { mask |= 0x001 }  // EPOLLIN
        if contains(.writable) { mask |= 0x004 }  // EPOLLOUT
        if contains(.priority) { mask |= 0x002 }  // EPOLLPRI
        if contains(.hangUp) { mask |= 0x2000 }   // EPOLLRDHUP
        return mask
    }

    init(epollMask mask: UInt32) {
        var events: IOEvents = []
        if mask & 0x001 != 0 { events.insert(.readable) }
        if mask & 0x004 != 0 { events.insert(.writable) }
        if mask & 0x002 != 0 { events.insert(.priority) }
        if mask & (0x010 | 0x2000) != 0 { events.insert(.hangUp) }  // EPOLLHUP, EPOLLRDHUP
        if mask & 0x008 != 0 { events.insert(.error) }  // EPOLLERR
        self = events
    }
}
