// The run loop: its state, set-up and teardown, cross-thread work, and running.
import CLifecycleSystem
import Glibc
import Synchronization

/// The engine's main run loop: an epoll loop bound to one thread, in the manner of sd-event.
///
/// The loop owns an epoll fd watching an eventfd (cross-thread work), one `CLOCK_MONOTONIC`
/// timerfd (armed for the earliest timer), an optional signalfd, and the IO sources' fds.
///
/// The loop owns its clock (`clock`, `now`): every timer, and every engine reading of "now" (budgets,
/// deadlines, trace times), is on it. On a manual clock (`init(clock: .manual)`) the timerfd is never
/// armed: timers fall due only when `advance(by:)` moves the clock, while posted work, descriptors
/// and signals stay live (epoll still waits for them in real time).
/// Every callback runs on the thread that created the loop, which must be the one that runs it.
///
/// One turn is prepare (arm the timerfd) / wait (epoll) / dispatch, in this order:
/// 1. posted work (`perform`, `send`), in one FIFO shared by all threads;
/// 2. due timers, by deadline, equal deadlines in creation order;
/// 3. signals, in arrival order;
/// 4. readable fds, in the order epoll reports them.
/// Work posted, and timers added, while a turn dispatches run on a later turn, never inline.
///
/// Nesting: poll `fileDescriptor` for `POLLIN` from a foreign loop (with `nextTimerDeadline` as its
/// timeout if it likes), then call `dispatchPending()`.
///
/// Reentrancy: `run` and `dispatchPending` called from inside one of the loop's callbacks are refused
/// (`run` throws `.reentrant`, `dispatchPending` returns 0); adding and cancelling sources from
/// callbacks is fine.
///
/// - Important: `[loop-thread]` members trap (`precondition`) when called from another thread unless
///   they throw, in which case they throw `.notOnLoopThread`.
public final class MainRunLoop: @unchecked Sendable {
    // @unchecked: `queue` (under `queueLock`) and `stopRequested` are the only state touched off the
    // loop thread; every other mutable property is loop-thread only (enforced by `isOnLoopThread`
    // checks at entry points).

    static let wakeToken: UInt64 = 0
    static let timerToken: UInt64 = 1
    static let signalToken: UInt64 = 2
    /// Source ids start here, so a reader's id is its epoll token and never collides with ours.
    static let firstSourceID: UInt64 = 16
    static let maxEvents: Int32 = 64

    /// The loop's thread. Immutable. Usable from inline code: `isOnLoopThread` is inlined into the
    /// callers in other modules (the posting paths check it on every post).
    @usableFromInline let owner: pthread_t
    /// The loop's thread as `lcs_thread_id()` reads it (one instruction): what the checks compare.
    @usableFromInline let ownerID: UInt
    let epollFD: Int32
    let wakeFD: Int32
    let timerFD: Int32
    /// The loop's clock. Immutable.
    public let clock: LoopClock
    /// `clock.isManual`, read by every clock reading and timer arm (one load and branch). Immutable.
    @usableFromInline let isManual: Bool
    /// The monotonic reading when the loop was created: the manual clock starts there, and
    /// `elapsed` counts from it. Immutable.
    public let origin: MonotonicInstant
    /// The manual clock's reading in nanoseconds (unused on the monotonic clock): written on the loop
    /// thread only (`advance`), read from any thread (the watchdog's).
    @usableFromInline let manualNow: Atomic<UInt64>

    // [thread-safe]
    /// The cross-thread queue, guarded by `queueLock`.
    let queue: UnsafeMutablePointer<WorkQueue>
    let queueLock = QueueLock()
    let stopRequested = Atomic<Bool>(false)
    /// The receivers of `send`, guarded by `queueLock`; `targetsVersion` changes with every change.
    let targets: UnsafeMutablePointer<TargetTable>
    let targetsVersion = Atomic<Int>(0)

    // [loop-thread]
    /// The loop-thread state, behind a pointer: a turn reads and writes it without the dynamic
    /// exclusivity checks (`swift_beginAccess`, ~75 instructions each) that every access to a class's
    /// stored `var` pays — a dozen per wake-up. No access to it ever spans a callback (callbacks run
    /// between accesses), so the checks had nothing to catch. The computed properties below keep
    /// the code reading as before.
    let state: UnsafeMutablePointer<LoopState>
    let eventTokens: UnsafeMutablePointer<UInt64>
    let eventMasks: UnsafeMutablePointer<UInt32>

    struct LoopState {
        /// The batch being run (taken out of the queue): the chunk being run, whose items from
        /// `batchIndex` on (and every later chunk's) have not run yet. Items of a batch interrupted by
        /// `stop()` stay here and run before the queue on the next turn.
        var batch: UnsafeMutablePointer<WorkChunk>?
        var batchIndex = 0
        /// Chunks the batch emptied, handed back to the queue's pool at the next take.
        var drained: UnsafeMutablePointer<WorkChunk>?
        /// The last take found work, so no producer has been told to wake the loop: the next turn takes
        /// again without waiting (and without a wake-up event).
        var takeFoundWork = false
        var timers = TimerHeap()
        /// On a manual clock, the timers on the monotonic clock (`addRealTimeTimer`), which arm the
        /// timerfd; empty on the monotonic clock (where they are ordinary timers).
        var realTimers = TimerHeap()
        /// The deadline the timerfd is armed for (0: disarmed or already expired and read).
        var armedDeadline: UInt64 = 0
        var readers: [UInt64: LoopSource] = [:]
        var signalFD: Int32 = -1
        var signalSources: [Int32: [LoopSource]] = [:]
        var nextSourceID = MainRunLoop.firstSourceID
        var isDispatching = false
        /// `performNext`'s work, in order: run at the start of a turn, before the cross-thread batch.
        var next: [() -> Void] = []
        /// Told each time a manual clock moves (`addClockObserver`), in the order they were added.
        var clockObservers: [(id: Int, body: (MonotonicInstant, MonotonicInstant) -> Void)] = []
        var nextClockObserverID = 1
    }

    var batch: UnsafeMutablePointer<WorkChunk>? {
        _read { yield state.pointee.batch }
        _modify { yield &state.pointee.batch }
    }
    var batchIndex: Int {
        _read { yield state.pointee.batchIndex }
        _modify { yield &state.pointee.batchIndex }
    }
    var timers: TimerHeap {
        _read { yield state.pointee.timers }
        _modify { yield &state.pointee.timers }
    }
    var armedDeadline: UInt64 {
        _read { yield state.pointee.armedDeadline }
        _modify { yield &state.pointee.armedDeadline }
    }
    var readers: [UInt64: LoopSource] {
        _read { yield state.pointee.readers }
        _modify { yield &state.pointee.readers }
    }
    var signalFD: Int32 {
        _read { yield state.pointee.signalFD }
        _modify { yield &state.pointee.signalFD }
    }
    var signalSources: [Int32: [LoopSource]] {
        _read { yield state.pointee.signalSources }
        _modify { yield &state.pointee.signalSources }
    }
    var nextSourceID: UInt64 {
        _read { yield state.pointee.nextSourceID }
        _modify { yield &state.pointee.nextSourceID }
    }
    var isDispatching: Bool {
        _read { yield state.pointee.isDispatching }
        _modify { yield &state.pointee.isDispatching }
    }


    /// Creates a loop bound to the calling thread, on `clock` (the monotonic clock by default).
    ///
    /// That thread must run the loop (`run`, `dispatchPending`, `advance(by:)`); every callback runs
    /// there.
    /// - Throws: `RunLoopError` `.system` when a descriptor cannot be created (e.g. `EMFILE`).
    public init(clock: LoopClock = .monotonic) throws(RunLoopError) {
        self.clock = clock
        isManual = clock.isManual
        let start = lcs_monotonic_ns()
        origin = MonotonicInstant(nanoseconds: start)
        manualNow = Atomic<UInt64>(start)
        owner = pthread_self()
        ownerID = UInt(lcs_thread_id())
        var opened: [Int32] = []
        // Close what was opened if a later step fails (deinit does not run for a failed init).
        func fail(_ call: String, _ code: Int32) -> RunLoopError {
            for fd in opened { _ = close(fd) }
            return .system(call, errno: code)
        }
        func fail(_ error: SystemCallError, _ call: String) -> RunLoopError {
            for fd in opened { _ = close(fd) }
            return RunLoopError(error, call: call)
        }
        let epollFD = lcs_epoll_create()
        guard epollFD >= 0 else { throw fail("epoll_create1", errno) }
        opened.append(epollFD)
        let wakeFD = lcs_eventfd()
        guard wakeFD >= 0 else { throw fail("eventfd", errno) }
        opened.append(wakeFD)
        let timerFD = lcs_timerfd_create(CLOCK_MONOTONIC)
        guard timerFD >= 0 else { throw fail("timerfd_create", errno) }
        opened.append(timerFD)
        // Edge-triggered: every write to the eventfd queues one event, which epoll_wait consumes, so the
        // loop never reads the eventfd (one syscall less per wake-up). Its counter only grows, by one
        // per wake-up; it would take 2^64 of them to fill.
        let wakeEvents = UInt32(EPOLLIN.rawValue) | UInt32(EPOLLET.rawValue)
        do throws(SystemCallError) {
            _ = try systemCall("epoll_ctl") { lcs_epoll_add(epollFD, wakeFD, wakeEvents, Self.wakeToken) }
        } catch { throw fail(error, "epoll_ctl(EPOLL_CTL_ADD, eventfd)") }
        do throws(SystemCallError) {
            _ = try systemCall("epoll_ctl") { lcs_epoll_add(epollFD, timerFD, UInt32(EPOLLIN.rawValue), Self.timerToken) }
        } catch { throw fail(error, "epoll_ctl(EPOLL_CTL_ADD, timerfd)") }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        self.timerFD = timerFD
        eventTokens = .allocate(capacity: Int(Self.maxEvents))
        eventMasks = .allocate(capacity: Int(Self.maxEvents))
        queue = .allocate(capacity: 1)
        queue.initialize(to: WorkQueue())
        targets = .allocate(capacity: 1)
        targets.initialize(to: TargetTable())
        state = .allocate(capacity: 1)
        state.initialize(to: LoopState())
    }

    deinit {
        // Sources may outlive the loop: make them inert and break callback cycles.
        for entry in timers.entries { entry.source.deactivate() }
        for entry in state.pointee.realTimers.entries { entry.source.deactivate() }
        for source in readers.values { source.deactivate() }
        for list in signalSources.values { for source in list { source.deactivate() } }
        if signalFD >= 0 { _ = close(signalFD) }
        _ = close(timerFD)
        _ = close(wakeFD)
        _ = close(epollFD)
        WorkChunk.freeChain(batch, from: batchIndex)
        WorkChunk.freeChain(state.pointee.drained, from: 0)
        queue.pointee.free()
        queue.deinitialize(count: 1)
        queue.deallocate()
        targets.deinitialize(count: 1)
        targets.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        eventTokens.deallocate()
        eventMasks.deallocate()
    }

    /// Whether the calling thread is the loop's thread. [thread-safe]
    ///
    /// Inlinable and without `pthread_equal`: on Linux a `pthread_t` is the thread's address and
    /// `pthread_equal` is `==` (glibc's definition), so the check is one `pthread_self()` and a compare.
    @inlinable
    public var isOnLoopThread: Bool { UInt(lcs_thread_id()) == ownerID }

    /// Whether `thread` (a `pthread_self()` the caller has just read) is the loop's thread; with
    /// `send(_:fromOtherThread:)`, a posting path reads `pthread_self()` once. [thread-safe]
    @inlinable
    package func isLoopThread(_ thread: pthread_t) -> Bool { thread == owner }

    /// The epoll descriptor. [thread-safe]
    ///
    /// It polls readable (`POLLIN`) whenever the loop has something to dispatch: posted work, a due
    /// timer, a signal, a readable source. Poll it from a foreign loop, then call `dispatchPending()`.
    /// Owned by the loop and valid until it is deallocated; do not close it or read from it.
    public var fileDescriptor: Int32 { epollFD }

    // MARK: Cross-thread work

    /// Schedules `work` to run on the loop thread.
    ///
    /// [thread-safe] One FIFO for all threads: work runs in the order the calls took the queue lock,
    /// so each thread's own order is kept. Called from the loop thread, `work` runs on a later turn,
    /// never inline, and is always queued. From another thread it returns immediately while the
    /// thread is within the queue's bound (`maxQueuedPerThread` messages waiting, `maxQueued` in all);
    /// past it, it **blocks** until the loop has taken the queue (it sleeps 50 µs between tries), so
    /// the work is never lost. Use `tryPerform` to be refused instead of waiting.
    /// - Important: a thread over the bound waits for the loop: the loop's thread must not wait for
    ///   it meanwhile (e.g. join it), and the loop must keep running.
    public func perform(_ work: @escaping @Sendable () -> Void) {
        let message = LoopMessage(target: .closure, payload: PerformBox(work))
        while !enqueue(message) {
            var pause = timespec(tv_sec: 0, tv_nsec: 50_000)
            _ = nanosleep(&pause, nil)
        }
    }

    /// Schedules `work` to run on the loop thread at the start of its next turn, before any work
    /// other threads have queued (and before any `perform`).
    ///
    /// [loop-thread] For the owner's own control flow — a scenario's next line, the action an OS
    /// event asks for — which must not wait behind a flood of posts from other threads: the loop
    /// runs at most `postedSlice` of queued work a turn, so such work starts within one slice.
    /// Work added by `performNext` from inside such work runs at the turn after, in order. Not
    /// bounded (the loop's own thread adds it) and never refused.
    public func performNext(_ work: @escaping () -> Void) {
        precondition(isOnLoopThread, "MainRunLoop.performNext must be called on the loop thread")
        state.pointee.next.append(work)
    }

    /// How long a turn runs work queued from other threads before it turns to its timers, signals,
    /// descriptors and `performNext` work again (the rest runs at the next turn, which does not wait):
    /// 2 ms. A flood of posts delays them by one slice, not by the whole queue (up to 1,048,576
    /// messages). Checked every 64 messages, so one message that runs long ends its slice late.
    public static var postedSlice: Duration { .nanoseconds(Int64(postedSliceNanoseconds)) }
    static let postedSliceNanoseconds: UInt64 = 2_000_000

    /// Schedules `work` to run on the loop thread, unless this thread is over the queue's bound.
    ///
    /// [thread-safe] Returns immediately. As `perform`, except that past the bound (from a thread
    /// other than the loop's) nothing is queued and it returns false: retry once the loop has run.
    /// - Returns: whether `work` was queued.
    @discardableResult
    public func tryPerform(_ work: @escaping @Sendable () -> Void) -> Bool {
        enqueue(LoopMessage(target: .closure, payload: PerformBox(work)))
    }

    /// The most messages (posts, `send`s, `perform`s) one thread other than the loop's may have
    /// waiting in the loop's queue: 65,536. Counted from the loop's last take of the queue (when it
    /// takes, it takes everything). [thread-safe]
    public static var maxQueuedPerThread: Int { WorkQueue.maxPerProducer }

    /// The most messages all threads together may have waiting in the loop's queue: 1,048,576.
    /// [thread-safe]
    public static var maxQueued: Int { WorkQueue.maxQueued }

    /// Registers a receiver of messages sent with `send`; returns its address.
    ///
    /// [loop-thread] `handler` runs on the loop thread for each message addressed to the target, in
    /// the one FIFO that `perform` uses (so each sending thread's order holds across `perform` and
    /// `send`). Several targets share one loop without seeing each other's messages.
    public func addTarget(_ handler: @escaping (LoopMessage) -> Void) -> LoopTarget {
        addTarget(ClosureReceiver(handler))
    }

    /// Registers `receiver` for messages sent with `send`; returns its address.
    ///
    /// [loop-thread] As `addTarget(_:)` with a closure; the loop holds `receiver` strongly until
    /// `removeTarget` (so a receiver that refers back to its owner should do so without a strong
    /// reference, and the owner should remove the target when it goes).
    public func addTarget(_ receiver: LoopMessageReceiver) -> LoopTarget {
        precondition(isOnLoopThread, "MainRunLoop.addTarget must be called on the loop thread")
        queueLock.lock()
        defer { queueLock.unlock() }
        return targets.pointee.add(receiver, version: targetsVersion)
    }

    /// Removes a target: messages still queued for it are dropped, never delivered to anyone.
    ///
    /// [thread-safe] Once this returns, the handler is never called again (unless it is running right
    /// now on the loop thread, when it finishes that call). Idempotent.
    public func removeTarget(_ target: LoopTarget) {
        queueLock.lock()
        targets.pointee.remove(target, version: targetsVersion)
        queueLock.unlock()
    }

    /// Queues `message` for its target, unless this thread is over the queue's bound. [thread-safe]
    ///
    /// Returns immediately; the target's handler gets it on a later loop turn (never inline), in the
    /// same FIFO as `perform`. A message for a removed target is dropped.
    ///
    /// Bounded: a thread other than the loop's may have at most `maxQueuedPerThread` messages waiting
    /// (and all threads together `maxQueued`); past that the message is refused — not queued, false
    /// returned — until the loop takes the queue again. Messages accepted are all delivered, in each
    /// thread's order. The loop's own thread is never refused.
    /// - Returns: whether the message was queued.
    @inline(__always)
    @discardableResult
    public func send(_ message: consuming LoopMessage) -> Bool {
        enqueue(message, from: pthread_self())
    }

    /// `send` from `thread`, the caller's `pthread_self()`, already known not to be the loop's thread
    /// (`isLoopThread`). [thread-safe]
    @discardableResult
    package func send(_ message: consuming LoopMessage, fromOtherThread thread: pthread_t) -> Bool {
        enqueue(message, from: thread)
    }

    /// `send` from a thread the caller knows is not the loop's (`isOnLoopThread` was false): bounded,
    /// without reading the thread's identity again. [thread-safe]
    ///
    /// The common post — the lock free, the thread within its bound, room in the last chunk, no
    /// waiter to wake, the loop busy — makes no call: each rarer case is a tail call to a function of
    /// its own, so that this one saves no registers and keeps no frame.
    @discardableResult
    package func sendFromOtherThread(_ message: consuming LoopMessage) -> Bool {
        guard queueLock.tryLock() else { return sendContended(message) }
        return sendLocked(message)
    }

    @inline(never)
    private func sendContended(_ message: consuming LoopMessage) -> Bool {
        queueLock.lockAfterFailedTry()
        return sendLocked(message)
    }

    /// The rest of `sendFromOtherThread`, under the queue lock.
    @inline(__always)
    private func sendLocked(_ message: consuming LoopMessage) -> Bool {
        guard queue.pointee.admit(key: UnsafeRawPointer(queue)) else { return refuseLocked(message) }
        guard queue.pointee.tailHasRoom else { return appendToNewChunkLocked(message) }
        let wake = queue.pointee.appendToTail(message)
        if queueLock.unlockReportingWaiters() { return wakeWaiter(thenLoop: wake) }
        // See `enqueue(_:from:)`.
        if wake { return wakeLoop() }
        return true
    }

    @inline(never)
    private func refuseLocked(_ message: consuming LoopMessage) -> Bool {
        queue.pointee.countRefusal()
        queueLock.unlock()
        _ = consume message
        return false
    }

    @inline(never)
    private func appendToNewChunkLocked(_ message: consuming LoopMessage) -> Bool {
        let wake = queue.pointee.append(message)
        queueLock.unlock()
        if wake { _ = lcs_eventfd_signal(wakeFD) }
        return true
    }

    @inline(never)
    private func wakeWaiter(thenLoop wake: Bool) -> Bool {
        queueLock.wakeOne()
        if wake { _ = lcs_eventfd_signal(wakeFD) }
        return true
    }

    @inline(never)
    private func wakeLoop() -> Bool {
        _ = lcs_eventfd_signal(wakeFD)
        return true
    }

    /// Queues `item` from thread `producer` unless it is over the bound; returns whether it was queued.
    @inline(__always)
    func enqueue(_ item: consuming LoopMessage) -> Bool {
        enqueue(item, from: pthread_self())
    }

    @inline(__always)
    func enqueue(_ item: consuming LoopMessage, from producer: pthread_t) -> Bool {
        queueLock.lock()
        // The loop's own thread is not bounded: only code running on the loop posts from it, and
        // refusing it could lose the loop's own bookkeeping.
        guard producer == owner || queue.pointee.admit(key: UnsafeRawPointer(queue)) else {
            queue.pointee.countRefusal()
            queueLock.unlock()
            return false
        }
        let wake = queue.pointee.append(item)
        queueLock.unlock()
        // An eventfd write only when the loop last found the queue empty (see `WorkQueue`): it consumes
        // the wake-up event (epoll_wait, edge-triggered) before it takes the queue, and comes back
        // without one while its takes find work, so a post is always followed either by a take or by a
        // wake-up the loop has not consumed yet. The write cannot fail on a live eventfd.
        if wake { _ = lcs_eventfd_signal(wakeFD) }
        return true
    }

    // MARK: Running

    /// Runs the loop until `stop()`.
    ///
    /// [loop-thread] Returns after the callback during which `stop()` was called (or at once if a stop
    /// was requested while the loop was not running); the request is consumed.
    /// - Throws: `.notOnLoopThread`; `.actionInProgress` from inside a loop callback; `.system` when
    ///   `epoll_wait` fails.
    public func run() throws(RunLoopError) {
        try run(deadline: nil)
    }

    /// Runs the loop until `deadline` on the monotonic clock, or until `stop()`.
    ///
    /// [loop-thread] Returns no earlier than `deadline` unless stopped (the wait rounds up to the next
    /// millisecond). A deadline already past returns at once without running a turn. The deadline is
    /// real time even on a manual clock (the wait is for IO and posted work; no timer falls due).
    /// - Throws: as `run()`.
    public func run(until deadline: MonotonicInstant) throws(RunLoopError) {
        try run(deadline: deadline.nanoseconds)
    }

    /// Runs the loop for `duration` (measured on the monotonic clock, real time even on a manual
    /// clock), or until `stop()`.
    ///
    /// [loop-thread]
    /// - Throws: as `run()`.
    public func run(for duration: Duration) throws(RunLoopError) {
        try run(deadline: Self.instant(lcs_monotonic_ns(), after: duration).nanoseconds)
    }

    /// Makes the running `run` return after the callback in progress (a signal's sources all run).
    ///
    /// [thread-safe] Returns immediately. Work not yet dispatched stays queued, in order, for the next
    /// run. With no `run` in progress, the next one returns at once. `dispatchPending` ignores it.
    public func stop() {
        stopRequested.store(true, ordering: .releasing)
        _ = lcs_eventfd_signal(wakeFD)  // wake a blocked epoll_wait
    }

    /// Runs one loop turn without waiting: everything ready when it is called.
    ///
    /// [loop-thread] Never blocks. Work posted and timers added by these callbacks wait for the next
    /// call (`fileDescriptor` is then readable again). Returns 0 without running anything when called
    /// from inside a loop callback.
    /// - Returns: the number of callbacks run.
    @discardableResult
    public func dispatchPending() -> Int {
        precondition(isOnLoopThread, "MainRunLoop.dispatchPending must be called on the loop thread")
        guard !isDispatching else { return 0 }
        // Nothing to report: a failing zero-timeout epoll_wait on our own epoll fd means no events.
        let ran = (try? turn(timeoutMS: 0, honoursStop: false)) ?? 0
        settleWakeUp()
        return ran
    }

    /// Before the loop is left to whoever waits on it next (a foreign poller, or a later `run`):
    /// makes the fd readable exactly when posted work may be waiting. After a take that found work
    /// no producer signals (see `WorkQueue`), so the queue is checked: empty, the loop is marked
    /// waiting (the next post signals); not empty, the loop signals itself. [loop-thread]
    func settleWakeUp() {
        if batch == nil, state.pointee.takeFoundWork {
            queueLock.lockSpinning()
            let empty = queue.pointee.markWaitingIfEmpty()
            queueLock.unlock()
            if empty { state.pointee.takeFoundWork = false }
        }
        if hasPostedWork || !state.pointee.next.isEmpty { _ = lcs_eventfd_signal(wakeFD) }
    }

    /// The earliest deadline of an active timer on the loop's clock, nil when there is none. [loop-thread]
    ///
    /// For a foreign loop nesting this one: wake no later than this (the fd also polls readable then).
    /// On a manual clock the deadline is manual time: the fd polls readable once a timer is due
    /// (after `advance(by:)`), and a timer not yet due never falls due by waiting.
    public var nextTimerDeadline: MonotonicInstant? {
        precondition(isOnLoopThread, "MainRunLoop.nextTimerDeadline must be read on the loop thread")
        dropCancelledTimersAtTop()
        return timers.first.map { MonotonicInstant(nanoseconds: $0.deadline) }
    }

    func run(deadline: UInt64?) throws(RunLoopError) {
        guard isOnLoopThread else { throw Self.notOnLoopThread("run") }
        guard !isDispatching else {
            throw RunLoopError(.reentrant, "MainRunLoop.run cannot be called from inside one of the loop's callbacks")
        }
        // Whoever waits on the loop next (this run again, or a foreign poller) must find the fd
        // readable while posted work may be waiting unsignalled.
        defer { settleWakeUp() }
        while true {
            if stopRequested.exchange(false, ordering: .acquiringAndReleasing) { return }
            var timeoutMS: Int32 = -1
            if let deadline {
                let now = lcs_monotonic_ns()
                if now >= deadline { return }
                // Round up: epoll waits in whole milliseconds and must not return before the deadline.
                let remaining = deadline - now
                timeoutMS = Int32(clamping: remaining / 1_000_000 + (remaining % 1_000_000 == 0 ? 0 : 1))
            }
            if hasPostedWork || !state.pointee.next.isEmpty { timeoutMS = 0 }
            try turn(timeoutMS: timeoutMS, honoursStop: true)
        }
    }
}
