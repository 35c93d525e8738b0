// One turn of the run loop: wait, then dispatch posted work, timers, signals and readable fds.
import CLifecycleSystem
import Glibc
import Synchronization

extension MainRunLoop {
    // MARK: One turn

    @discardableResult
    func turn(timeoutMS: Int32, honoursStop: Bool) throws(RunLoopError) -> Int {
        let count: Int32
        do throws(SystemCallError) {
            // EINTR is not retried here: the caller loops and waits again with a recomputed timeout.
            count = try systemCall("epoll_wait", retryingEINTR: false) {
                lcs_epoll_wait(epollFD, eventTokens, eventMasks, Self.maxEvents, timeoutMS)
            }
        } catch {
            if error.errno == EINTR { return 0 }
            throw RunLoopError(error)
        }
        isDispatching = true
        defer {
            isDispatching = false
            rearmTimer()
        }
        var wake = hasPostedWork
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
        if !state.pointee.next.isEmpty {
            ran += dispatchNext(honoursStop)
            if stopping(honoursStop) { return ran }
        }
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
            guard let source = readers[eventTokens[index]], source.isActive, let callback = source.callback else { continue }
            switch callback {
            case .plain(let body): body()
            case .io(let body): body(IOEvents(epollMask: eventMasks[index]))
            case .signal: continue
            }
            ran += 1
            if stopping(honoursStop) { return ran }
        }
        return ran
    }

    /// Whether the running `run` was asked to stop (checked between callbacks).
    @inline(__always)
    func stopping(_ honoursStop: Bool) -> Bool {
        honoursStop && stopRequested.load(ordering: .relaxed)
    }

    /// Runs the `performNext` work there was when the turn began, in order; what it adds waits for
    /// the next turn. On stop, the rest stays, first, for the next turn.
    func dispatchNext(_ honoursStop: Bool) -> Int {
        let work = state.pointee.next
        state.pointee.next = []
        var ran = 0
        for index in work.indices {
            work[index]()
            ran += 1
            if stopping(honoursStop), index + 1 < work.count {
                state.pointee.next = Array(work[(index + 1)...]) + state.pointee.next
                break
            }
        }
        return ran
    }

    /// Whether a batch interrupted by `stop()` or by the end of its slice still has items to run.
    /// [loop-thread]
    var hasCarriedWork: Bool { batch != nil }

    /// Whether posted work may be waiting without a wake-up event: a carried batch, or a last take
    /// that found work (producers then do not signal; see `WorkQueue`). The next turn does not wait.
    /// [loop-thread]
    var hasPostedWork: Bool { batch != nil || state.pointee.takeFoundWork }

    func dispatchPosted(_ honoursStop: Bool) -> Int {
        // The wake-up event was consumed by epoll_wait, before the take: a post that lands after a
        // take that found the queue empty writes again, and after one that found work the next turn
        // takes without waiting, so no wake-up is lost.
        var ran = 0
        if hasCarriedWork {
            ran += runBatch(honoursStop)
            if hasCarriedWork { return ran }
        }
        // Every item of the batch has been moved out: take the queue's chunks, handing back the
        // drained ones.
        queueLock.lockSpinning()
        batch = queue.pointee.takeAll(recycling: state.pointee.drained)
        queueLock.unlock()
        state.pointee.takeFoundWork = batch != nil
        state.pointee.drained = nil
        batchIndex = 0
        ran += runBatch(honoursStop)
        return ran
    }

    /// Runs the batch from `batchIndex` in order, moving each item out, for at most `postedSlice`
    /// (checked every 64 items); on stop or at the slice's end, the rest stays for the next turn.
    func runBatch(_ honoursStop: Bool) -> Int {
        let sliceEnd = lcs_monotonic_ns() &+ Self.postedSliceNanoseconds
        // Locals: callbacks cannot reach the batch (reentrant turns are refused; perform and stop
        // touch only the queue and the stop flag).
        var ran = 0
        // A message's handler is looked up (under the queue lock, which guards the target table) once
        // per run of messages to one target, and again only after the table changed.
        var cachedTarget = LoopTarget.closure
        var cachedVersion = 0
        // `receiver` keeps the cached receiver alive; `unretained` calls it without a retain per message.
        var receiver: LoopMessageReceiver?
        var unretained: Unmanaged<LoopMessageReceiver>?
        var index = batchIndex
        while let chunk = batch {
            let items = chunk.pointee.items
            let count = chunk.pointee.count
            while index < count {
                let slot = items + index
                index += 1
                let target = slot.pointee.target
                if target == .closure {
                    let item = slot.move()
                    unsafeDowncast(item.payload!, to: PerformBox.self).work()
                    ran += 1
                } else {
                    let version = targetsVersion.load(ordering: .relaxed)
                    if target != cachedTarget || version != cachedVersion {
                        queueLock.lockSpinning()
                        receiver = targets.pointee.handler(for: target)
                        unretained = receiver.map { Unmanaged.passUnretained($0) }
                        cachedVersion = targetsVersion.load(ordering: .relaxed)
                        queueLock.unlock()
                        cachedTarget = target
                    }
                    let item = slot.move()
                    if let unretained {
                        unretained._withUnsafeGuaranteedRef { $0.receive(item) }
                        ran += 1
                    }
                }
                if index < count || chunk.pointee.next != nil,
                   stopping(honoursStop) || (ran & 63 == 0 && lcs_monotonic_ns() >= sliceEnd) {
                    // Keep the epoll fd readable for a foreign poller while work is carried over.
                    _ = lcs_eventfd_signal(wakeFD)
                    if index == count { finish(chunk) } else { batchIndex = index }
                    return ran
                }
            }
            finish(chunk)
            index = 0
        }
        withExtendedLifetime(receiver) {}
        return ran
    }

    /// Moves the batch past `chunk`, whose items have all been moved out, and keeps it for the pool.
    @inline(__always)
    private func finish(_ chunk: UnsafeMutablePointer<WorkChunk>) {
        batch = chunk.pointee.next
        batchIndex = 0
        chunk.pointee.count = 0
        chunk.pointee.next = state.pointee.drained
        state.pointee.drained = chunk
    }

    func dispatchTimers(_ honoursStop: Bool) -> Int {
        var ran = 0
        if !timers.isEmpty {
            let now = nowNanoseconds
            // Timers created by these callbacks wait for the next turn, so a callback adding a zero-delay
            // timer cannot keep this turn going for ever.
            let createdBefore = nextSourceID
            while let top = timers.first, top.deadline <= now, top.id < createdBefore {
                timers.removeFirst()
                switch fire(top, now: now) {
                case .cancelled: timers.tookCancelled()
                case .skipped: break
                case .fired(let again):
                    ran += 1
                    if let again { timers.push(again) }
                }
                if stopping(honoursStop) { return ran }
            }
        }
        if isManual, !state.pointee.realTimers.isEmpty { ran += dispatchRealTimeTimers(honoursStop) }
        return ran
    }

    /// On a manual clock, the real-time timers (`addRealTimeTimer`) due on the monotonic clock.
    private func dispatchRealTimeTimers(_ honoursStop: Bool) -> Int {
        let now = lcs_monotonic_ns()
        let createdBefore = nextSourceID
        var ran = 0
        while let top = state.pointee.realTimers.first, top.deadline <= now, top.id < createdBefore {
            state.pointee.realTimers.removeFirst()
            switch fire(top, now: now) {
            case .cancelled: state.pointee.realTimers.tookCancelled()
            case .skipped: break
            case .fired(let again):
                ran += 1
                if let again { state.pointee.realTimers.push(again) }
            }
            if stopping(honoursStop) { break }
        }
        return ran
    }

    private enum Firing {
        case cancelled
        /// Not a timer's callback: nothing ran.
        case skipped
        /// The callback ran; a repeating timer's next entry, to push back on its heap.
        case fired(TimerHeap.Entry?)
    }

    /// Runs the timer `top`, just taken off its heap at `now` (on the heap's clock).
    private func fire(_ top: TimerHeap.Entry, now: UInt64) -> Firing {
        let source = top.source
        source.inHeap = false
        guard source.isActive else { return .cancelled }
        guard case .plain(let callback)? = source.callback else { return .skipped }
        let interval = source.interval
        if interval == nil { source.deactivate() }  // one-shot: done before its callback runs
        callback()
        guard let interval, source.isActive else { return .fired(nil) }
        var next = source.deadline.addingReportingOverflow(interval)
        if next.overflow { next.partialValue = .max }
        // Skip missed ticks instead of replaying them back to back.
        source.deadline = next.partialValue > now ? next.partialValue : now &+ Swift.min(interval, .max - now)
        source.inHeap = true
        return .fired(TimerHeap.Entry(deadline: source.deadline, id: source.id, source: source))
    }

    func dispatchSignals(_ honoursStop: Bool) -> Int {
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
}
