import CLifecycleSystem
import Glibc

extension MainRunLoop {
    // MARK: Sources

    /// Adds a timer that fires at `deadline` on the loop's clock, then every `interval` if given.
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
        addTimer(at: Self.instant(nowNanoseconds, after: delay), repeating: interval, callback)
    }

    /// Adds a timer that fires `delay` from now on the monotonic clock — real time — whatever the
    /// loop's clock, then every `interval` if given.
    ///
    /// [loop-thread] For deadlines that belong to IO rather than to the application: a socket's line
    /// timeout, a keep-alive, a child process's deadline, a poll of a sysfs file. On a manual clock
    /// they still pass in real time (they arm the timerfd) while the application's timers wait for
    /// `advance(by:)`. On the monotonic clock this is `addTimer(after:repeating:_:)`. Otherwise the
    /// same guarantees; a turn runs the loop-clock timers due, then the real-time ones.
    @discardableResult
    public func addRealTimeTimer(after delay: Duration, repeating interval: Duration? = nil,
                                 _ callback: @escaping () -> Void) -> LoopSource
    {
        addRealTimeTimer(at: Self.instant(lcs_monotonic_ns(), after: delay), repeating: interval, callback)
    }

    /// Adds a timer that fires at `deadline` on the monotonic clock (`MonotonicInstant.now`'s) whatever
    /// the loop's clock, then every `interval` if given. [loop-thread] As `addRealTimeTimer(after:)`.
    @discardableResult
    public func addRealTimeTimer(at deadline: MonotonicInstant, repeating interval: Duration? = nil,
                                 _ callback: @escaping () -> Void) -> LoopSource
    {
        guard isManual else { return addTimer(at: deadline, repeating: interval, callback) }
        precondition(isOnLoopThread, "MainRunLoop.addRealTimeTimer must be called on the loop thread")
        let source = LoopSource(loop: self, id: makeSourceID(), kind: .realTimeTimer, callback: .plain(callback))
        source.deadline = Swift.max(deadline.nanoseconds, 1)
        if let interval { source.interval = UInt64(Swift.max(interval.nanosecondsClamped, 1)) }
        source.inHeap = true
        state.pointee.realTimers.push(TimerHeap.Entry(deadline: source.deadline, id: source.id, source: source))
        if armedDeadline == 0 || source.deadline < armedDeadline { armTimerFD(source.deadline) }
        return source
    }

    /// Watches `fd` for readability (level-triggered: `EPOLLIN`; hang-up and error also count).
    ///
    /// [loop-thread] The callback runs on every turn while the fd stays readable, so it should read
    /// until `EAGAIN` or cancel the source. The loop does not own `fd`: cancel the source before
    /// closing it.
    /// - Throws: `.notOnLoopThread`; `.invalidArgument` for a negative fd; `.system` when epoll refuses
    ///   the fd (`EEXIST`: already watched by this loop; `EPERM`: a regular file).
    public func addReader(fd: Int32, _ callback: @escaping () -> Void) throws(RunLoopError) -> LoopSource {
        try addReader(fd: fd, priority: false, callback)
    }

    /// Watches `fd` for readability, or with `priority` for urgent data (`EPOLLPRI`: PSI triggers,
    /// sysfs attributes). [loop-thread] Otherwise as `addReader(fd:_:)`.
    public func addReader(fd: Int32, priority: Bool, _ callback: @escaping () -> Void) throws(RunLoopError) -> LoopSource {
        try addIO(fd: fd, events: priority ? .priority : .readable, callback: .plain(callback), caller: "addReader")
    }

    /// Watches `fd` for the conditions in `events` (level-triggered), the sd-event / libuv IO source.
    ///
    /// [loop-thread] The callback runs on every turn while one of the conditions holds, with the ones
    /// that hold now (`.hangUp` and `.error` are always reported, even when not asked for). Change the
    /// interest at any time with `LoopSource.setIOEvents` (e.g. ask for `.writable` only while output
    /// is pending); an empty set keeps the source but stops its callbacks until the interest grows.
    /// The loop does not own `fd`: cancel the source before closing it.
    /// - Throws: `.notOnLoopThread`; `.invalidArgument` for a negative fd; `.system` when epoll refuses
    ///   the fd (`EEXIST`: already watched by this loop; `EPERM`: a regular file).
    public func addIO(fd: Int32, events: IOEvents, _ callback: @escaping (IOEvents) -> Void) throws(RunLoopError) -> LoopSource {
        try addIO(fd: fd, events: events, callback: .io(callback), caller: "addIO")
    }

    func addIO(fd: Int32, events: IOEvents, callback: LoopSource.Callback, caller: String) throws(RunLoopError) -> LoopSource {
        guard isOnLoopThread else { throw Self.notOnLoopThread(caller) }
        guard fd >= 0 else { throw RunLoopError(.invalidArgument, "\(caller): file descriptor \(fd) is negative") }
        let id = makeSourceID()
        let epollFD = epollFD
        do throws(SystemCallError) {
            _ = try systemCall("epoll_ctl") { lcs_epoll_add(epollFD, fd, events.epollMask, id) }
        } catch { throw RunLoopError(error, call: "epoll_ctl(EPOLL_CTL_ADD, fd \(fd))") }
        let source = LoopSource(loop: self, id: id, kind: .io(fd: fd), callback: callback)
        source.ioEvents = events
        readers[id] = source
        return source
    }

    /// Changes the conditions an IO source waits for. [loop-thread] Called by `LoopSource.setIOEvents`.
    func updateIO(_ source: LoopSource, fd: Int32, events: IOEvents) throws(RunLoopError) {
        guard isOnLoopThread else { throw Self.notOnLoopThread("setIOEvents") }
        guard source.isActive, source.ioEvents != events else { return }
        let epollFD = epollFD
        let id = source.id
        do throws(SystemCallError) {
            _ = try systemCall("epoll_ctl") { lcs_epoll_mod(epollFD, fd, events.epollMask, id) }
        } catch { throw RunLoopError(error, call: "epoll_ctl(EPOLL_CTL_MOD, fd \(fd))") }
        source.ioEvents = events
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
        throws(RunLoopError) -> LoopSource
    {
        guard isOnLoopThread else { throw Self.notOnLoopThread("addSignal") }
        guard signo >= 1, signo <= 64, signo != SIGKILL, signo != SIGSTOP else {
            throw RunLoopError(.invalidArgument, "addSignal: signal \(signo) cannot be caught")
        }
        guard lcs_block_signal(signo) == 0 else { throw .system("pthread_sigmask(SIG_BLOCK)", errno: errno) }
        if signalSources[signo] == nil { try updateSignalMask(adding: signo) }
        let source = LoopSource(loop: self, id: makeSourceID(), kind: .signal(signo), callback: .signal(callback))
        signalSources[signo, default: []].append(source)
        return source
    }

    // MARK: Internals

    /// Detaches `source` now. [loop-thread] Called by `LoopSource.cancel()`.
    func detach(_ source: LoopSource) {
        switch source.kind {
        case .timer:
            source.deactivate()
            // Lazy removal from the heap; compact when cancelled entries dominate it.
            if source.inHeap { timers.noteCancelled() }
        case .realTimeTimer:
            source.deactivate()
            if source.inHeap { state.pointee.realTimers.noteCancelled() }
        case .io(let fd):
            readers[source.id] = nil
            // ENOENT/EBADF when the fd was already closed: nothing left to remove.
            let epollFD = epollFD
            _ = try? systemCall("epoll_ctl") { lcs_epoll_del(epollFD, fd) }
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

    func makeSourceID() -> UInt64 {
        defer { nextSourceID += 1 }
        return nextSourceID
    }

    /// Points the signalfd at the watched signals (plus `signo`), creating it on first use.
    func updateSignalMask(adding signo: Int32?) throws(RunLoopError) {
        var signals = Array(signalSources.keys)
        if let signo { signals.append(signo) }
        let fd = signals.withUnsafeBufferPointer { lcs_signalfd(signalFD, $0.baseAddress, Int32($0.count)) }
        guard fd >= 0 else { throw .system("signalfd", errno: errno) }
        if signalFD < 0 {
            let epollFD = epollFD
            do throws(SystemCallError) {
                _ = try systemCall("epoll_ctl") { lcs_epoll_add(epollFD, fd, UInt32(EPOLLIN.rawValue), Self.signalToken) }
            } catch {
                _ = close(fd)
                throw RunLoopError(error, call: "epoll_ctl(EPOLL_CTL_ADD, signalfd)")
            }
            signalFD = fd
        }
    }

    func dropCancelledTimersAtTop() {
        guard !timers.isEmpty else { return }
        timers.dropCancelledAtTop()
    }

    /// The prepare step: arms the timerfd for the earliest active deadline (on a manual clock, the
    /// earliest real-time timer's, and a wake-up if a timer on the manual clock is due).
    func rearmTimer() {
        dropCancelledTimersAtTop()
        arm(timers.firstDeadline ?? 0)
        if isManual {
            state.pointee.realTimers.dropCancelledAtTop()
            armTimerFD(state.pointee.realTimers.firstDeadline ?? 0)
        }
    }

    /// Arms for a timer on the loop's clock due at `deadline` (0: none).
    func arm(_ deadline: UInt64) {
        if isManual { return armManual(deadline) }
        armTimerFD(deadline)
    }

    func armTimerFD(_ deadline: UInt64) {
        guard deadline != armedDeadline else { return }
        // Cannot fail for a valid timerfd and a normalised time; a past deadline fires at once.
        _ = lcs_timerfd_set_abs(timerFD, deadline, 0)
        armedDeadline = deadline
    }

    /// On a manual clock the timerfd stays disarmed: a timer already due makes the loop's fd readable
    /// (a wake-up on the eventfd), so the next turn runs it without waiting; a later one waits for
    /// `advance(by:)`.
    private func armManual(_ deadline: UInt64) {
        if deadline != 0, deadline <= manualNow.load(ordering: .relaxed) { _ = lcs_eventfd_signal(wakeFD) }
    }

    /// `delay` after `now` (nanoseconds), saturating; a delay ≤ 0 is `now`.
    static func instant(_ now: UInt64, after delay: Duration) -> MonotonicInstant {
        let delta = delay.nanosecondsClamped
        guard delta > 0 else { return MonotonicInstant(nanoseconds: now) }
        let (sum, overflow) = now.addingReportingOverflow(UInt64(delta))
        return MonotonicInstant(nanoseconds: overflow ? .max : sum)
    }

    static func notOnLoopThread(_ call: String) -> RunLoopError {
        RunLoopError(.notOnLoopThread, "MainRunLoop.\(call) must be called on the loop's thread")
    }
}
