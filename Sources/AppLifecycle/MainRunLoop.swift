import CLifecycleSystem
import Glibc
import Synchronization

/// One item of the loop's cross-thread queue: a closure, or a notification post (no closure allocated).
enum LoopWork: Sendable {
    case closure(@Sendable () -> Void)
    case post(PendingPost)
}

/// The storage of queued work: a manually managed buffer the loop trades for an empty one under the
/// queue lock, so that a swap copies three words and both buffers keep their capacity across batches
/// (no element copies, no reallocation once warmed up, no array uniqueness checks).
///
/// Plain value with no ownership semantics of its own: exactly one variable holds each buffer
/// (the queue, or the loop's `batch`); items in `0..<count` are initialized. Touched only under the
/// queue lock or, once swapped out, on the loop thread.
struct WorkBuffer {
    var base: UnsafeMutablePointer<LoopWork>?
    var count = 0
    var capacity = 0

    @inline(__always)
    mutating func append(_ item: consuming LoopWork) {
        if count == capacity { grow() }
        (base.unsafelyUnwrapped + count).initialize(to: item)
        count += 1
    }

    @inline(never)
    private mutating func grow() {
        let newCapacity = Swift.max(64, capacity * 2)
        let grown = UnsafeMutablePointer<LoopWork>.allocate(capacity: newCapacity)
        if let base {
            grown.moveInitialize(from: base, count: count)
            base.deallocate()
        }
        base = grown
        capacity = newCapacity
    }

    /// Destroys the items in `start..<count` (those not moved out yet) and frees the storage.
    mutating func free(from start: Int) {
        if let base {
            if start < count { (base + start).deinitialize(count: count - start) }
            base.deallocate()
        }
        self = WorkBuffer()
    }
}

/// The lock of the loop's cross-thread queue: one inline compare-exchange to take it and one exchange
/// to release it when uncontended; contended, a short spin, then a park on a condition variable.
///
/// Drepper's three-state mutex ("Futexes Are Tricky", mutex 3: 0 free, 1 held, 2 held and maybe
/// waited for), with the futex replaced by a pthread mutex + condition variable since Swift cannot
/// call futex(2). Not `Synchronization.Mutex`: on Linux that is a priority-inheritance futex whose
/// unlock hands the lock to a sleeping waiter, so with more posting threads than cores every post
/// costs a context switch (4 producers on 2 cores: 0.1–7 M posts/s instead of over 10). Not a bare
/// glibc mutex either: its lock and unlock calls cost ~65 instructions per post against ~10 here.
final class QueueLock: @unchecked Sendable {
    // @unchecked: `state` is atomic; `parkMutex` and `parked` are pthread objects used as such.
    private let state = Atomic<UInt32>(0)
    private let parkMutex: UnsafeMutablePointer<pthread_mutex_t>
    private let parked: UnsafeMutablePointer<pthread_cond_t>

    init() {
        parkMutex = .allocate(capacity: 1)
        pthread_mutex_init(parkMutex, nil)
        parked = .allocate(capacity: 1)
        pthread_cond_init(parked, nil)
    }

    deinit {
        pthread_cond_destroy(parked)
        parked.deallocate()
        pthread_mutex_destroy(parkMutex)
        parkMutex.deallocate()
    }

    @inline(__always)
    func lock() {
        if state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
        lockContended()
    }

    @inline(__always)
    func unlock() {
        if state.exchange(0, ordering: .releasing) == 2 { wakeOne() }
    }

    @inline(never)
    private func lockContended() {
        // The queue's critical sections are a few dozen instructions: a holder that is running
        // releases the lock within the spin.
        for _ in 0..<100 {
            if state.load(ordering: .relaxed) == 0,
               state.compareExchange(expected: 0, desired: 1, ordering: .acquiring).exchanged { return }
        }
        // Mark the lock waited-for (2) and park until it is free. The exchange is made holding
        // `parkMutex`, which `wakeOne` takes before signalling, so a release cannot slip between the
        // exchange and the wait. Acquired this way the state stays 2 (perhaps more waiters).
        pthread_mutex_lock(parkMutex)
        while state.exchange(2, ordering: .acquiring) != 0 {
            pthread_cond_wait(parked, parkMutex)
        }
        pthread_mutex_unlock(parkMutex)
    }

    @inline(never)
    private func wakeOne() {
        pthread_mutex_lock(parkMutex)
        pthread_cond_signal(parked)
        pthread_mutex_unlock(parkMutex)
    }
}

/// The engine's main run loop: an epoll loop bound to one thread, in the manner of sd-event.
///
/// The loop owns an epoll fd watching an eventfd (cross-thread work), one `CLOCK_MONOTONIC`
/// timerfd (armed for the earliest timer), an optional signalfd, and the readers' fds.
/// Every callback runs on the thread that created the loop, which must be the one that runs it.
///
/// One turn is prepare (arm the timerfd) / wait (epoll) / dispatch, in this order:
/// 1. posted work (`perform`, `enqueuePost`), in one FIFO shared by all threads;
/// 2. due timers, by deadline, equal deadlines in creation order;
/// 3. signals, in arrival order;
/// 4. readable fds, in the order epoll reports them.
/// Work posted, and timers added, while a turn dispatches run on a later turn, never inline.
///
/// Nesting: poll `fileDescriptor` for `POLLIN` from a foreign loop (with `nextTimerDeadline` as its
/// timeout if it likes), then call `dispatchPending()`.
///
/// Reentrancy: `run` and `dispatchPending` called from inside one of the loop's callbacks are refused
/// (`run` throws `.actionInProgress`, `dispatchPending` returns 0); adding and cancelling sources from
/// callbacks is fine.
///
/// - Important: `[loop-thread]` members trap (`precondition`) when called from another thread unless
///   they throw, in which case they throw `.notOnLoopThread`.
public final class MainRunLoop: @unchecked Sendable {
    // @unchecked: `queue` (under `queueLock`) and `stopRequested` are the only state touched off the
    // loop thread; every other mutable property is loop-thread only (enforced by `isOnLoopThread`
    // checks at entry points).

    private static let wakeToken: UInt64 = 0
    private static let timerToken: UInt64 = 1
    private static let signalToken: UInt64 = 2
    /// Source ids start here, so a reader's id is its epoll token and never collides with ours.
    private static let firstSourceID: UInt64 = 16
    private static let maxEvents: Int32 = 64
    /// A drained batch buffer keeps its storage for the next swap unless it grew past this (items).
    private static let maxSpareCapacity = 1 << 16

    private let owner: pthread_t
    private let epollFD: Int32
    private let wakeFD: Int32
    private let timerFD: Int32

    // [thread-safe]
    /// The cross-thread queue, guarded by `queueLock`.
    private let queue: UnsafeMutablePointer<WorkBuffer>
    private let queueLock = QueueLock()
    private let stopRequested = Atomic<Bool>(false)

    // [loop-thread]
    /// The loop-thread state, behind a pointer: a turn reads and writes it without the dynamic
    /// exclusivity checks (`swift_beginAccess`, ~75 instructions each) that every access to a class's
    /// stored `var` pays — a dozen per wake-up. No access to it ever spans a callback (callbacks run
    /// between accesses), so the checks had nothing to catch. The computed properties below keep
    /// the code reading as before.
    private let state: UnsafeMutablePointer<LoopState>
    private let eventTokens: UnsafeMutablePointer<UInt64>
    private let eventMasks: UnsafeMutablePointer<UInt32>

    private struct LoopState {
        /// The batch being run (swapped out of the queue); `batch[batchIndex...]` have not run yet.
        /// Items of a batch interrupted by `stop()` stay here and run before the queue on the next turn.
        var batch = WorkBuffer()
        var batchIndex = 0
        var postHandler: ((PendingPost) -> Void)?
        /// Bumped whenever `postHandler` is set, so a batch calls the handler it holds without
        /// reloading (and retaining) it for each post, yet sees a change made by one of its callbacks.
        var postHandlerVersion = 0
        var timers = TimerHeap()
        /// Heap entries whose source was cancelled (removed lazily).
        var cancelledTimers = 0
        /// The deadline the timerfd is armed for (0: disarmed or already expired and read).
        var armedDeadline: UInt64 = 0
        var readers: [UInt64: LoopSource] = [:]
        var signalFD: Int32 = -1
        var signalSources: [Int32: [LoopSource]] = [:]
        var nextSourceID = MainRunLoop.firstSourceID
        var isDispatching = false
    }

    private var batch: WorkBuffer {
        _read { yield state.pointee.batch }
        _modify { yield &state.pointee.batch }
    }
    private var batchIndex: Int {
        _read { yield state.pointee.batchIndex }
        _modify { yield &state.pointee.batchIndex }
    }
    private var postHandlerVersion: Int { state.pointee.postHandlerVersion }
    private var timers: TimerHeap {
        _read { yield state.pointee.timers }
        _modify { yield &state.pointee.timers }
    }
    private var cancelledTimers: Int {
        _read { yield state.pointee.cancelledTimers }
        _modify { yield &state.pointee.cancelledTimers }
    }
    private var armedDeadline: UInt64 {
        _read { yield state.pointee.armedDeadline }
        _modify { yield &state.pointee.armedDeadline }
    }
    private var readers: [UInt64: LoopSource] {
        _read { yield state.pointee.readers }
        _modify { yield &state.pointee.readers }
    }
    private var signalFD: Int32 {
        _read { yield state.pointee.signalFD }
        _modify { yield &state.pointee.signalFD }
    }
    private var signalSources: [Int32: [LoopSource]] {
        _read { yield state.pointee.signalSources }
        _modify { yield &state.pointee.signalSources }
    }
    private var nextSourceID: UInt64 {
        _read { yield state.pointee.nextSourceID }
        _modify { yield &state.pointee.nextSourceID }
    }
    private var isDispatching: Bool {
        _read { yield state.pointee.isDispatching }
        _modify { yield &state.pointee.isDispatching }
    }

    /// Called for each post given to `enqueuePost`, in queue order, on the loop thread.
    ///
    /// [loop-thread] Set by the notification center. Posts dispatched while it is nil are dropped.
    package var postHandler: ((PendingPost) -> Void)? {
        get { state.pointee.postHandler }
        set {
            state.pointee.postHandler = newValue
            state.pointee.postHandlerVersion &+= 1
        }
    }

    /// Creates a loop bound to the calling thread.
    ///
    /// That thread must run the loop (`run`, `dispatchPending`); every callback runs there.
    /// - Throws: `ApplicationError` `.system` when a descriptor cannot be created (e.g. `EMFILE`).
    public init() throws(ApplicationError) {
        owner = pthread_self()
        var opened: [Int32] = []
        // Close what was opened if a later step fails (deinit does not run for a failed init).
        func fail(_ call: String, _ code: Int32) -> ApplicationError {
            for fd in opened { _ = close(fd) }
            return .system(call, errno: code)
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
        // per batch; it would take 2^64 batches to fill.
        let wakeEvents = UInt32(EPOLLIN.rawValue) | UInt32(EPOLLET.rawValue)
        guard Self.retryingEINTR({ lcs_epoll_add(epollFD, wakeFD, wakeEvents, Self.wakeToken) }) == 0
        else { throw fail("epoll_ctl(EPOLL_CTL_ADD, eventfd)", errno) }
        guard Self.retryingEINTR({ lcs_epoll_add(epollFD, timerFD, UInt32(EPOLLIN.rawValue), Self.timerToken) }) == 0
        else { throw fail("epoll_ctl(EPOLL_CTL_ADD, timerfd)", errno) }
        self.epollFD = epollFD
        self.wakeFD = wakeFD
        self.timerFD = timerFD
        eventTokens = .allocate(capacity: Int(Self.maxEvents))
        eventMasks = .allocate(capacity: Int(Self.maxEvents))
        queue = .allocate(capacity: 1)
        queue.initialize(to: WorkBuffer())
        state = .allocate(capacity: 1)
        state.initialize(to: LoopState())
    }

    deinit {
        // Sources may outlive the loop: make them inert and break callback cycles.
        for entry in timers.entries { entry.source.deactivate() }
        for source in readers.values { source.deactivate() }
        for list in signalSources.values { for source in list { source.deactivate() } }
        if signalFD >= 0 { _ = close(signalFD) }
        _ = close(timerFD)
        _ = close(wakeFD)
        _ = close(epollFD)
        batch.free(from: batchIndex)
        queue.pointee.free(from: 0)
        queue.deinitialize(count: 1)
        queue.deallocate()
        state.deinitialize(count: 1)
        state.deallocate()
        eventTokens.deallocate()
        eventMasks.deallocate()
    }

    /// Whether the calling thread is the loop's thread. [thread-safe]
    public var isOnLoopThread: Bool { pthread_equal(pthread_self(), owner) != 0 }

    /// The epoll descriptor. [thread-safe]
    ///
    /// It polls readable (`POLLIN`) whenever the loop has something to dispatch: posted work, a due
    /// timer, a signal, a readable source. Poll it from a foreign loop, then call `dispatchPending()`.
    /// Owned by the loop and valid until it is deallocated; do not close it or read from it.
    public var fileDescriptor: Int32 { epollFD }

    // MARK: Cross-thread work

    /// Schedules `work` to run on the loop thread.
    ///
    /// [thread-safe] Returns immediately. One FIFO for all threads: work runs in the order the calls
    /// took the queue lock, so each thread's own order is kept. Called from the loop thread, `work`
    /// runs on a later turn, never inline.
    public func perform(_ work: @escaping @Sendable () -> Void) {
        enqueue(.closure(work))
    }

    /// Schedules `post` for `postHandler`, in the same FIFO as `perform`. [thread-safe]
    package func enqueuePost(_ post: PendingPost) {
        enqueue(.post(post))
    }

    @inline(__always)
    private func enqueue(_ item: consuming LoopWork) {
        queueLock.lock()
        queue.pointee.append(item)
        let wasEmpty = queue.pointee.count == 1
        queueLock.unlock()
        // One eventfd write per batch: the loop consumes the wake-up event (epoll_wait, edge-triggered)
        // before it swaps the queue out, so a post that finds the queue empty is always followed by a
        // wake-up the loop has not consumed yet. The write cannot fail on a live eventfd.
        if wasEmpty { _ = lcs_eventfd_signal(wakeFD) }
    }

    // MARK: Sources

    /// Adds a timer that fires at `deadline` on the monotonic clock, then every `interval` if given.
    ///
    /// [loop-thread] The callback runs on a loop turn at or after the deadline, never inline and never
    /// before it; timers due in the same turn fire by deadline, equal deadlines in creation order.
    /// A repeating timer's next deadline is the previous one plus `interval`; ticks missed by more than
    /// one interval are skipped, not replayed (its next deadline is then now + `interval`). An interval
    /// under 1 ns counts as 1 ns (at most once per turn). A one-shot timer is inactive once it fires.
    /// - Returns: the source; `cancel()` it to stop the timer.
    @discardableResult
    public func addTimer(at deadline: MonotonicInstant, repeating interval: Duration? = nil,
                         _ callback: @escaping () -> Void) -> LoopSource
    {
        precondition(isOnLoopThread, "MainRunLoop.addTimer must be called on the loop thread")
        let source = LoopSource(loop: self, id: makeSourceID(), kind: .timer, callback: .plain(callback))
        // 0 would disarm the timerfd; every real monotonic reading is far above 1.
        source.deadline = Swift.max(deadline.nanoseconds, 1)
        if let interval { source.interval = UInt64(Swift.max(interval.nanosecondsClamped, 1)) }
        source.inHeap = true
        timers.push(TimerHeap.Entry(deadline: source.deadline, id: source.id, source: source))
        if armedDeadline == 0 || source.deadline < armedDeadline { arm(source.deadline) }
        return source
    }

    /// Adds a timer that fires `delay` from now (a delay ≤ 0 means the next turn), then every `interval`.
    ///
    /// [loop-thread] Same guarantees as `addTimer(at:repeating:_:)`.
    @discardableResult
    public func addTimer(after delay: Duration, repeating interval: Duration? = nil,
                         _ callback: @escaping () -> Void) -> LoopSource
    {
        addTimer(at: Self.instant(after: delay), repeating: interval, callback)
    }

    /// Watches `fd` for readability (level-triggered: `EPOLLIN`; hang-up and error also count).
    ///
    /// [loop-thread] The callback runs on every turn while the fd stays readable, so it should read
    /// until `EAGAIN` or cancel the source. The loop does not own `fd`: cancel the source before
    /// closing it.
    /// - Throws: `.notOnLoopThread`; `.invalidArgument` for a negative fd; `.system` when epoll refuses
    ///   the fd (`EEXIST`: already watched by this loop; `EPERM`: a regular file).
    public func addReader(fd: Int32, _ callback: @escaping () -> Void) throws(ApplicationError) -> LoopSource {
        try addReader(fd: fd, priority: false, callback)
    }

    /// Watches `fd` for readability, or with `priority` for urgent data (`EPOLLPRI`: PSI triggers,
    /// sysfs attributes). [loop-thread] Otherwise as `addReader(fd:_:)`.
    public func addReader(fd: Int32, priority: Bool, _ callback: @escaping () -> Void) throws(ApplicationError) -> LoopSource {
        guard isOnLoopThread else { throw Self.notOnLoopThread("addReader") }
        guard fd >= 0 else { throw ApplicationError(.invalidArgument, "addReader: file descriptor \(fd) is negative") }
        let id = makeSourceID()
        let epollFD = epollFD
        let events = priority ? UInt32(EPOLLPRI.rawValue) : UInt32(EPOLLIN.rawValue)
        guard Self.retryingEINTR({ lcs_epoll_add(epollFD, fd, events, id) }) == 0 else {
            throw .system("epoll_ctl(EPOLL_CTL_ADD, fd \(fd))", errno: errno)
        }
        let source = LoopSource(loop: self, id: id, kind: .reader(fd: fd), callback: .plain(callback))
        readers[id] = source
        return source
    }

    /// Receives `signo` through a signalfd; the callback gets the sender's process id (0 if none).
    ///
    /// [loop-thread] Blocks `signo` in the calling (loop) thread so that it stays pending for the
    /// signalfd; cancelling the source does not unblock it. Several sources may watch one signal:
    /// each is called, in the order they were added. Standard signals coalesce while pending.
    /// - Important: a signal sent to the process (`kill`) goes to any thread that does not block it,
    ///   and runs its default action there. Block the signal in every thread — call this (or block it)
    ///   before spawning threads, since threads inherit the mask — or send it to the loop thread
    ///   (`pthread_kill`).
    /// - Throws: `.notOnLoopThread`; `.invalidArgument` for a signal number outside 1…64 or for
    ///   `SIGKILL`/`SIGSTOP`; `.system` when blocking or creating the signalfd fails.
    public func addSignal(_ signo: Int32, _ callback: @escaping (_ senderPID: Int32) -> Void)
        throws(ApplicationError) -> LoopSource
    {
        guard isOnLoopThread else { throw Self.notOnLoopThread("addSignal") }
        guard signo >= 1, signo <= 64, signo != SIGKILL, signo != SIGSTOP else {
            throw ApplicationError(.invalidArgument, "addSignal: signal \(signo) cannot be caught")
        }
        guard lcs_block_signal(signo) == 0 else { throw .system("pthread_sigmask(SIG_BLOCK)", errno: errno) }
        if signalSources[signo] == nil { try updateSignalMask(adding: signo) }
        let source = LoopSource(loop: self, id: makeSourceID(), kind: .signal(signo), callback: .signal(callback))
        signalSources[signo, default: []].append(source)
        return source
    }

    // MARK: Running

    /// Runs the loop until `stop()`.
    ///
    /// [loop-thread] Returns after the callback during which `stop()` was called (or at once if a stop
    /// was requested while the loop was not running); the request is consumed.
    /// - Throws: `.notOnLoopThread`; `.actionInProgress` from inside a loop callback; `.system` when
    ///   `epoll_wait` fails.
    public func run() throws(ApplicationError) {
        try run(deadline: nil)
    }

    /// Runs the loop until `deadline` on the monotonic clock, or until `stop()`.
    ///
    /// [loop-thread] Returns no earlier than `deadline` unless stopped (the wait rounds up to the next
    /// millisecond). A deadline already past returns at once without running a turn.
    /// - Throws: as `run()`.
    public func run(until deadline: MonotonicInstant) throws(ApplicationError) {
        try run(deadline: deadline.nanoseconds)
    }

    /// Runs the loop for `duration` (measured on the monotonic clock), or until `stop()`.
    ///
    /// [loop-thread]
    /// - Throws: as `run()`.
    public func run(for duration: Duration) throws(ApplicationError) {
        try run(deadline: Self.instant(after: duration).nanoseconds)
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
        return (try? turn(timeoutMS: 0, honoursStop: false)) ?? 0
    }

    /// The earliest deadline of an active timer, nil when there is none. [loop-thread]
    ///
    /// For a foreign loop nesting this one: wake no later than this (the fd also polls readable then).
    public var nextTimerDeadline: MonotonicInstant? {
        precondition(isOnLoopThread, "MainRunLoop.nextTimerDeadline must be read on the loop thread")
        dropCancelledTimersAtTop()
        return timers.first.map { MonotonicInstant(nanoseconds: $0.deadline) }
    }

    private func run(deadline: UInt64?) throws(ApplicationError) {
        guard isOnLoopThread else { throw Self.notOnLoopThread("run") }
        guard !isDispatching else { throw .actionInProgress("run", running: "a run-loop callback") }
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
            if hasCarriedWork { timeoutMS = 0 }
            try turn(timeoutMS: timeoutMS, honoursStop: true)
        }
    }

    // MARK: One turn

    @discardableResult
    private func turn(timeoutMS: Int32, honoursStop: Bool) throws(ApplicationError) -> Int {
        let count = lcs_epoll_wait(epollFD, eventTokens, eventMasks, Self.maxEvents, timeoutMS)
        if count < 0 {
            // EINTR: the caller loops and waits again with a recomputed timeout.
            if errno == EINTR { return 0 }
            throw .system("epoll_wait", errno: errno)
        }
        isDispatching = true
        defer {
            isDispatching = false
            rearmTimer()
        }
        var wake = hasCarriedWork
        var signalled = false
        for index in 0..<Int(count) {
            switch eventTokens[index] {
            case Self.wakeToken: wake = true
            case Self.timerToken:
                // Consume the expiry; the timerfd is disarmed now, so rearmTimer() must re-arm it.
                _ = lcs_timerfd_read(timerFD)
                armedDeadline = 0
            case Self.signalToken: signalled = true
            default: break
            }
        }
        // A stop that arrived while waiting: return before running anything (events stay pending).
        if stopping(honoursStop) {
            // The edge-triggered wake-up was consumed: raise it again, so that the queued work wakes
            // the next run (or a foreign poller) instead of waiting for the next post.
            if wake { _ = lcs_eventfd_signal(wakeFD) }
            return 0
        }
        var ran = 0
        if wake {
            ran += dispatchPosted(honoursStop)
            if stopping(honoursStop) { return ran }
        }
        ran += dispatchTimers(honoursStop)
        if stopping(honoursStop) { return ran }
        if signalled {
            ran += dispatchSignals(honoursStop)
            if stopping(honoursStop) { return ran }
        }
        // The token buffer is ours until the turn ends (reentrant turns are refused).
        for index in 0..<Int(count) where eventTokens[index] >= Self.firstSourceID {
            // A reader cancelled earlier in this turn is gone from the table: skip its stale event.
            guard let source = readers[eventTokens[index]], source.isActive,
                  case .plain(let callback)? = source.callback else { continue }
            callback()
            ran += 1
            if stopping(honoursStop) { return ran }
        }
        return ran
    }

    /// Whether the running `run` was asked to stop (checked between callbacks).
    @inline(__always)
    private func stopping(_ honoursStop: Bool) -> Bool {
        honoursStop && stopRequested.load(ordering: .relaxed)
    }

    /// Whether a batch interrupted by `stop()` still has items to run. [loop-thread]
    private var hasCarriedWork: Bool { batchIndex < batch.count }

    private func dispatchPosted(_ honoursStop: Bool) -> Int {
        // The wake-up event was consumed by epoll_wait, before the swap: a post that lands after the
        // swap finds the queue empty and writes again, so no wake-up is lost.
        var ran = 0
        if hasCarriedWork {
            ran += runBatch(honoursStop)
            if hasCarriedWork { return ran }
        }
        // Every item of the batch has been moved out: trade the empty buffer for the queue's.
        if batch.capacity > Self.maxSpareCapacity { batch.free(from: batch.count) }
        batch.count = 0
        batchIndex = 0
        queueLock.lock()
        swap(&queue.pointee, &batch)
        queueLock.unlock()
        ran += runBatch(honoursStop)
        return ran
    }

    /// Runs `batch` from `batchIndex` in order, moving each item out; on stop, the rest stays for the
    /// next turn.
    private func runBatch(_ honoursStop: Bool) -> Int {
        // Locals: callbacks cannot reach the batch (reentrant turns are refused; perform and stop
        // touch only the queue and the stop flag).
        guard let base = batch.base else { return 0 }
        let count = batch.count
        var index = batchIndex
        var ran = 0
        // The handler is loaded (and retained) once per run of posts, and reloaded only after a
        // callback has set a new one.
        outer: while index < count {
            let version = postHandlerVersion
            // Non-optional, so that each call borrows it instead of copying (retaining) it. Posts
            // dispatched while there is no handler are dropped.
            // (No `??`: its generic autoclosure would wrap the handler in a reabstraction thunk.)
            let handler: (PendingPost) -> Void
            let counted: Int
            if let current = postHandler {
                handler = current
                counted = 1
            } else {
                handler = { _ in }
                counted = 0
            }
            repeat {
                let item = (base + index).move()
                index += 1
                switch consume item {
                case .closure(let work):
                    work()
                    ran += 1
                case .post(let post):
                    handler(post)
                    ran += counted
                }
                if index < count, stopping(honoursStop) {
                    // Keep the epoll fd readable for a foreign poller while work is carried over.
                    _ = lcs_eventfd_signal(wakeFD)
                    break outer
                }
            } while index < count && version == postHandlerVersion
        }
        batchIndex = index
        return ran
    }

    private func dispatchTimers(_ honoursStop: Bool) -> Int {
        guard !timers.isEmpty else { return 0 }
        let now = lcs_monotonic_ns()
        // Timers created by these callbacks wait for the next turn, so a callback adding a zero-delay
        // timer cannot keep this turn going for ever.
        let createdBefore = nextSourceID
        var ran = 0
        while let top = timers.first, top.deadline <= now, top.id < createdBefore {
            timers.removeFirst()
            let source = top.source
            source.inHeap = false
            guard source.isActive else {
                cancelledTimers -= 1
                continue
            }
            guard case .plain(let callback)? = source.callback else { continue }
            let interval = source.interval
            if interval == nil { source.deactivate() }  // one-shot: done before its callback runs
            callback()
            ran += 1
            if let interval, source.isActive {
                var next = source.deadline.addingReportingOverflow(interval)
                if next.overflow { next.partialValue = .max }
                // Skip missed ticks instead of replaying them back to back.
                source.deadline = next.partialValue > now ? next.partialValue : now &+ Swift.min(interval, .max - now)
                source.inHeap = true
                timers.push(TimerHeap.Entry(deadline: source.deadline, id: source.id, source: source))
            }
            if stopping(honoursStop) { break }
        }
        return ran
    }

    private func dispatchSignals(_ honoursStop: Bool) -> Int {
        guard signalFD >= 0 else { return 0 }
        var ran = 0
        while true {
            var sender: Int32 = 0
            let signo = lcs_signalfd_read(signalFD, &sender)
            if signo <= 0 { break }  // 0: none left; -1: nothing readable we can use
            // A copy: callbacks may add or cancel sources of this signal.
            for source in signalSources[signo] ?? [] where source.isActive {
                guard case .signal(let callback)? = source.callback else { continue }
                callback(sender)
                ran += 1
            }
            if stopping(honoursStop) { break }
        }
        return ran
    }

    // MARK: Internals

    /// Detaches `source` now. [loop-thread] Called by `LoopSource.cancel()`.
    func detach(_ source: LoopSource) {
        switch source.kind {
        case .timer:
            source.deactivate()
            // Lazy removal from the heap; compact when cancelled entries dominate it.
            if source.inHeap {
                cancelledTimers += 1
                if cancelledTimers > 64, cancelledTimers * 2 > timers.count {
                    timers.removeAll { !$0.source.isActive }
                    cancelledTimers = 0
                }
            }
        case .reader(let fd):
            readers[source.id] = nil
            // ENOENT/EBADF when the fd was already closed: nothing left to remove.
            let epollFD = epollFD
            _ = Self.retryingEINTR { lcs_epoll_del(epollFD, fd) }
            source.deactivate()
        case .signal(let signo):
            source.deactivate()
            signalSources[signo]?.removeAll { $0 === source }
            if signalSources[signo]?.isEmpty == true {
                signalSources[signo] = nil
                // Stop taking the signal; it stays blocked in the thread (the caller's choice to undo).
                try? updateSignalMask(adding: nil)
            }
        }
    }

    private func makeSourceID() -> UInt64 {
        defer { nextSourceID += 1 }
        return nextSourceID
    }

    /// Points the signalfd at the watched signals (plus `signo`), creating it on first use.
    private func updateSignalMask(adding signo: Int32?) throws(ApplicationError) {
        var signals = Array(signalSources.keys)
        if let signo { signals.append(signo) }
        let fd = signals.withUnsafeBufferPointer { lcs_signalfd(signalFD, $0.baseAddress, Int32($0.count)) }
        guard fd >= 0 else { throw .system("signalfd", errno: errno) }
        if signalFD < 0 {
            let epollFD = epollFD
            guard Self.retryingEINTR({ lcs_epoll_add(epollFD, fd, UInt32(EPOLLIN.rawValue), Self.signalToken) }) == 0
            else {
                let code = errno
                _ = close(fd)
                throw .system("epoll_ctl(EPOLL_CTL_ADD, signalfd)", errno: code)
            }
            signalFD = fd
        }
    }

    private func dropCancelledTimersAtTop() {
        guard !timers.isEmpty else { return }
        while let top = timers.first, !top.source.isActive {
            timers.removeFirst()
            top.source.inHeap = false
            cancelledTimers -= 1
        }
    }

    /// The prepare step: arms the timerfd for the earliest active deadline.
    private func rearmTimer() {
        dropCancelledTimersAtTop()
        arm(timers.firstDeadline ?? 0)
    }

    private func arm(_ deadline: UInt64) {
        guard deadline != armedDeadline else { return }
        // Cannot fail for a valid timerfd and a normalised time; a past deadline fires at once.
        _ = lcs_timerfd_set_abs(timerFD, deadline, 0)
        armedDeadline = deadline
    }

    private static func instant(after delay: Duration) -> MonotonicInstant {
        let now = lcs_monotonic_ns()
        let delta = delay.nanosecondsClamped
        guard delta > 0 else { return MonotonicInstant(nanoseconds: now) }
        let (sum, overflow) = now.addingReportingOverflow(UInt64(delta))
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    private static func notOnLoopThread(_ call: String) -> ApplicationError {
        ApplicationError(.notOnLoopThread, "MainRunLoop.\(call) must be called on the loop's thread")
    }

    /// Calls `body` until it does not fail with EINTR; returns its last result (errno set on -1).
    private static func retryingEINTR(_ body: () -> Int32) -> Int32 {
        var result: Int32
        repeat { result = body() } while result < 0 && errno == EINTR
        return result
    }
}

/// A binary min-heap of timers ordered by (deadline, creation id). [loop-thread]
struct TimerHeap {
    struct Entry {
        var deadline: UInt64
        var id: UInt64
        var source: LoopSource

        func precedes(_ other: Entry) -> Bool {
            deadline != other.deadline ? deadline < other.deadline : id < other.id
        }
    }

    private(set) var entries: [Entry] = []

    var isEmpty: Bool { entries.isEmpty }
    var count: Int { entries.count }
    var first: Entry? { entries.first }
    /// The earliest deadline, without copying (retaining) the entry.
    var firstDeadline: UInt64? { entries.isEmpty ? nil : entries[0].deadline }

    mutating func push(_ entry: Entry) {
        entries.append(entry)
        var child = entries.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard entries[child].precedes(entries[parent]) else { break }
            entries.swapAt(child, parent)
            child = parent
        }
    }

    mutating func removeFirst() {
        guard !entries.isEmpty else { return }
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        siftDown(from: 0)
    }

    mutating func removeAll(where shouldRemove: (Entry) -> Bool) {
        entries.removeAll(where: shouldRemove)
        // Heapify bottom-up.
        var index = entries.count / 2
        while index > 0 {
            index -= 1
            siftDown(from: index)
        }
    }

    private mutating func siftDown(from start: Int) {
        var parent = start
        while true {
            let left = 2 * parent + 1
            guard left < entries.count else { return }
            var best = left
            let right = left + 1
            if right < entries.count, entries[right].precedes(entries[left]) { best = right }
            guard entries[best].precedes(entries[parent]) else { return }
            entries.swapAt(parent, best)
            parent = best
        }
    }
}
