import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC

// The host's end of the link to an isolated plugin's process: frames out (batched), frames in (from
// the loop's watch, or read while the host waits), deadlines, the process's end.
//
// The progress page is the process's own word. It can make a frame end sooner (the host stops waiting
// for nothing), never later: a frame the host waits for the answer of keeps its own deadline until
// the answer comes (`awaited`), whatever the page says; waiting for room to write has a deadline too.
// The page only says which callback was running when the process died or overran.

extension IsolatedPlugin {
    /// The most the host buffers for one process before it holds the notifications for it (`Backlog`).
    static let outputLimit = 1 << 20
    /// The most the host buffers for one process before it waits for room (reading meanwhile): past the
    /// largest frame and twice `outputLimit`, only frames that are never held (replies) are there.
    static let stuckLimit = 2 * outputLimit + Int(IsolationProtocol.maximumFrame)
    /// How often a wait looks whether the process has ended (monotonic nanoseconds): a child of the
    /// plugin may keep the socket open after its process died, so no end of file says it.
    static let exitCheckInterval: UInt64 = 100_000_000
    /// A frame whose budget is this long or longer (1 s) takes its start from the coarse monotonic
    /// clock (`CLOCK_MONOTONIC_COARSE`: the last tick, at most one tick — 4 ms at 250 Hz — before the
    /// precise time, and read in 3 ns instead of 21 ns here): its deadline comes at most that
    /// much early, under 0.4% of its budget. Shorter budgets read the precise clock.
    static let coarseClockBudget: UInt64 = 1_000_000_000

    // MARK: Sending

    /// Sends a frame the plugin's process will run, numbered in the event log with its deadline:
    /// batched, unless `flush`. [loop-thread]
    /// - Returns: the frame's number (0 when nothing was sent: the plugin is not running).
    @discardableResult
    func sendEvent(_ kind: FrameKind, word: UInt64 = 0, _ what: EventLog.What, flush: Bool = false, state: UInt8? = nil,
                   _ body: (inout FrameWriter) -> Void = { _ in }) -> UInt64
    {
        sendFrame(kind, word: word, what, flush: flush, state: state, body)?.number ?? 0
    }

    /// `sendEvent`, with the frame's entry (its deadline) as sent: what `wait(for:until:)` holds the
    /// answer to. nil when nothing was sent. [loop-thread]
    /// `state`: the application's state the frame carries (nil: now's; a held notification carries
    /// the state it was posted in).
    func sendFrame(_ kind: FrameKind, word: UInt64 = 0, _ what: EventLog.What, flush: Bool = false, state: UInt8? = nil,
                   _ body: (inout FrameWriter) -> Void = { _ in }) -> (number: UInt64, entry: EventLog.Entry)?
    {
        withApplication { sendFrame(kind, word: word, what, flush: flush, state: state, in: $0, body) }
    }

    /// `sendFrame` with the application in hand (borrowed, not retained: see `application`).
    @discardableResult
    ///
    /// `plainNotification`: a `notify` frame with no scene and no dictionary, written whole in one step
    /// (`FrameWriter.plainNotificationFrame`) instead of `body` when the process knows its name by id.
    /// `context`: the application's frame context when the caller has just read it (nil: read now).
    func sendFrame(_ kind: FrameKind, word: UInt64 = 0, _ what: EventLog.What, flush: Bool = false, state: UInt8? = nil,
                   plainNotification: (nameID: UInt32, sender: UInt64)? = nil, context: Application.FrameContext? = nil,
                   in handle: AppHandle, _ body: (inout FrameWriter) -> Void = { _ in }) -> (number: UInt64, entry: EventLog.Entry)?
    {
        // The channel alone is held for the call (the process is only looked through): one retain.
        guard status == .running || status == .loading || status == .unloading, let channel = process?.channel else { return nil }
        // Held notifications go first: any other frame keeps its place after them.
        if backlog != nil, kind != .notify { sendHeld() }
        let context = context ?? handle.app.frameContext
        var budget = EventLog.Budget.call
        var length = settings.callBudgetNanoseconds
        if what == .initialise {
            budget = .initialise
            length = settings.initBudget.nanosecondCount
        } else if let phase = context.budgetPhase {
            // The phase's budget, from the frame's start: the host's own clock for the phase stops
            // while it waits for isolated plugins, which are held to deadlines of their own.
            budget = .phase(phase)
            length = budget.named(handle.app.configuration, settings).length.nanosecondCount
        }
        let now = length >= Self.coarseClockBudget ? lcs_monotonic_coarse_ns() : lcs_monotonic_ns()
        let deadline = now + length
        let frameState = state ?? IsolationProtocol.stateByte(context)
        var written = false
        if let plain = plainNotification {
            written = channel.out.plainNotificationFrame(word: word, state: frameState, nameID: plain.nameID, sender: plain.sender)
        }
        if !written, !channel.out.frame(kind, word: word, state: frameState, body) { return notSent(what, why: channel.out.refusal) }
        let entry = EventLog.Entry(what: what, budget: budget, deadline: deadline, sentAt: now)
        let number = events.append(entry)
        if deadlineArmed == 0 || deadline < deadlineArmed { armDeadline(deadline) }
        if flush || channel.pendingOutput >= 64 << 10 {
            flushNow()
        } else if !flushScheduled {
            flushScheduled = true
            handle.loop.perform { [weak self] in
                self?.flushScheduled = false
                self?.flushNow()
            }
        }
        return (number, entry)
    }

    /// Sends the answer to request `request` at once (not an event: the process is waiting for it).
    func reply(_ request: UInt64, _ status: lc_status, value: UInt64 = 0, message: String = "", dictionary: UserInfo?? = nil) {
        guard let process else { return }
        process.channel.out.begin(.reply, word: request)
        process.channel.out.i32(status)
        process.channel.out.u64(value)
        process.channel.out.text(message)
        if let dictionary { process.channel.out.dictionary(dictionary) }  // a reply that carries one (nil: none sent)
        process.channel.out.end()
        flushNow()
    }

    /// Writes what it can; the loop's watch writes the rest when the socket has room. Then looks
    /// whether the process fell behind or caught up (`checkBacklog`): a slow process has its
    /// notifications held, it never makes the loop wait. Only over `stuckLimit` — a process that takes
    /// nothing while frames that cannot be held pile up (replies to its own requests) — does the host
    /// wait for room, until the earliest deadline.
    func flushNow() {
        guard let process else { return }
        // The process's word for what it has run lets the log drop those frames now: a long one-way
        // stream keeps at most what is in flight (the socket's buffers, `outputLimit`), not every frame
        // sent since the last deadline check (+40 bytes a notification, until a budget's timer fired).
        if events.hasPending, isActive, !catchUp(process) { return }
        switch process.channel.writeSome() {
        case .done:
            setWatch(writable: false)
        case .wouldBlock:
            if process.channel.pendingOutput > Self.stuckLimit {
                _ = waitForRoom()
            } else {
                setWatch(writable: true)
            }
        case .failed:
            ended()
            return
        }
        checkBacklog()
    }

    /// Waits until the buffer is written, reading the process's frames into `inbox` meanwhile (not
    /// running them: this may be the middle of a dispatch). False when the process failed.
    ///
    /// Bounded: by the deadlines of the frames sent (what is queued counts: the page cannot say it ran
    /// what it never read); when there is none (only replies wait), a process that takes nothing for
    /// `settings.callBudget` is failed as an overrun of the isolated-call budget.
    private func waitForRoom() -> Bool {
        guard let app = handle?.app else { return false }
        return app.withBudgetClockStopped { waitForRoomStopped() }
    }

    private func waitForRoomStopped() -> Bool {
        var fallback = lcs_monotonic_ns() + settings.callBudgetNanoseconds
        while let process, status != .failed {
            let pending = process.channel.pendingOutput
            let outcome = process.channel.writeSome()
            // It took something: the fallback counts from now.
            if process.channel.pendingOutput < pending { fallback = lcs_monotonic_ns() + settings.callBudgetNanoseconds }
            switch outcome {
            case .done:
                setWatch(writable: false)
                if !inbox.isEmpty { handle?.loop.perform { [weak self] in self?.receive() } }
                return true
            case .failed:
                ended()
                return false
            case .wouldBlock:
                // The frames' own deadlines (checked by `checkDeadlines`); the awaited frame's is not
                // checked here (its answer may be in `inbox`, not run yet).
                let earliest = events.earliest?.deadline
                let bounded = earliest != nil
                let deadline = earliest ?? fallback
                let revents = process.channel.poll(Int16(POLLIN | POLLOUT), until: min(deadline, lcs_monotonic_ns() + Self.exitCheckInterval))
                if revents == 0 {
                    sliceEnded(awaitedToo: false)
                    if !bounded, isActive, lcs_monotonic_ns() >= fallback {
                        fail(.overran(budgetName: "isolated-call", budget: settings.callBudget))
                    }
                    continue
                }
                if revents & Int16(POLLIN) != 0 {
                    if !readIntoInbox() { return false }
                }
            }
        }
        return false
    }

    private func readIntoInbox() -> Bool {
        guard let process else { return false }
        switch process.channel.readSome() {
        case .closed, .failed:
            ended()
            return false
        case .data, .wouldBlock:
            do {
                while let frame = try process.channel.nextFrame(acceptFromHost: false) { inbox.append(frame) }
            } catch {
                fail(.protocolViolation(error.message))
                return false
            }
            return true
        }
    }

    private func setWatch(writable: Bool) {
        guard writable != watchingWritable, let source, source.isActive else { return }
        try? source.setIOEvents(writable ? [.readable, .writable] : .readable)
        watchingWritable = writable
    }

    /// Starts the loop's watch of the socket, and of the process's end (once the plugin runs).
    func watch() {
        guard let process, let handle, source == nil else { return }
        source = try? handle.loop.addIO(fd: process.channel.fd, events: .readable) { [weak self] events in
            guard let self else { return }
            if events.contains(.writable) { flushNow() }
            if events.contains(.readable) || events.contains(.hangUp) || events.contains(.error) { receive() }
        }
        if process.exitWatch >= 0 {
            exitSource = try? handle.loop.addIO(fd: process.exitWatch, events: .readable) { [weak self] _ in self?.processExited() }
        }
    }

    /// Whether the process is one the host still serves (loading, running or unloading).
    var isActive: Bool { status == .running || status == .loading || status == .unloading }

    /// The process has ended (its exit watch fired, or a wait saw it): runs what it sent before it
    /// died, then reports its end (`ended`) — at once, even when a child of the plugin keeps the
    /// socket open, so that no end of file comes. [loop-thread]
    func processExited() {
        guard isActive else {
            exitSource?.cancel()
            exitSource = nil
            return
        }
        _ = receive(limit: 4096)
        if isActive { ended() }
    }

    // MARK: Receiving

    /// Runs what the process sent: what is already read (the inbox first), then what can be read now
    /// (at most `limit` frames a call; the loop comes back while the socket stays readable).
    /// - Returns: false when the process failed meanwhile.
    @discardableResult
    func receive(limit: Int = 1024) -> Bool {
        var count = 0
        while status != .failed, status != .unloaded {
            guard drain(limit: limit, count: &count) else { return false }
            if count >= limit {
                handle?.loop.perform { [weak self] in self?.receive() }
                return true
            }
            guard let process else { return false }
            switch process.channel.readSome() {
            case .data: continue
            case .wouldBlock: return status != .failed
            case .closed, .failed:
                ended()
                return false
            }
        }
        return false
    }

    /// Runs the frames already read, without a system call. - Returns: false when the process failed.
    private func drain(limit: Int = .max, count: inout Int) -> Bool {
        while count < limit, status != .failed, status != .unloaded {
            if var frame = inbox.next() {
                count += 1
                run(&frame)
                continue
            }
            guard let process else { return false }
            let next: FrameReader?
            do { next = try process.channel.nextFrame(acceptFromHost: false) } catch {
                fail(.protocolViolation(error.message))
                return false
            }
            guard var frame = next else { return true }
            count += 1
            run(&frame)
        }
        return status != .failed && status != .unloaded
    }

    /// Runs the process's frames until `done` holds — the answer to `frame`, a frame just sent —
    /// waiting for them. Past `frame`'s deadline (kept whatever the progress page says), or past the
    /// deadline of a frame before it that the page says is unfinished, the process is failed; a process
    /// that ends is reported within `exitCheckInterval`, even if its socket stays open. The phase's
    /// budget clock is stopped meanwhile. - Returns: whether `done` held (false: the process failed or
    /// ended, or `frame` is nil: nothing was sent).
    func wait(for frame: (number: UInt64, entry: EventLog.Entry)?, until done: () -> Bool) -> Bool {
        guard let frame, let app = handle?.app else { return done() }
        // A frozen process must run to answer (the engine thaws before its callbacks; this is the net).
        if frozenAt != nil { thaw() }
        // Waits nest (a frame run meanwhile may ask again): the earliest deadline of them all holds.
        let outer = awaited
        if outer.map({ frame.entry.deadline < $0.deadline }) ?? true { awaited = frame.entry }
        defer { awaited = outer }
        return app.withBudgetClockStopped { waitStopped(until: done) }
    }

    /// The earliest deadline a wait is held to: the awaited frame's, and the page's unfinished ones'.
    private var waitDeadline: UInt64 {
        let earliest = events.earliest?.deadline
        switch (earliest, awaited?.deadline) {
        case (let page?, let own?): return min(page, own)
        case (let page?, nil): return page
        case (nil, let own?): return own
        case (nil, nil): return lcs_monotonic_ns() + settings.callBudgetNanoseconds
        }
    }

    /// A wait's slice ran out with nothing read: reports the process's end if it has ended, else
    /// fails it past a deadline (`checkDeadlines`, then, when `awaitedToo`, the awaited frame's own).
    private func sliceEnded(awaitedToo: Bool = true) {
        guard isActive, let process else { return }
        if process.hasExited { return processExited() }
        checkDeadlines()
        guard awaitedToo, isActive, let awaited, awaited.deadline <= lcs_monotonic_ns() else { return }
        let budget = awaited.budget.named(handle?.app.configuration ?? Configuration(), settings)
        fail(.overran(budgetName: budget.name, budget: budget.length))
    }

    /// What the process has sent and the host not read yet (without waiting), run — at most 4,096
    /// frames: an answer that came before a deadline was looked at counts (the host may have been
    /// waiting for another plugin). - Returns: whether `done` holds now.
    private func readWithoutWaiting(until done: () -> Bool) -> Bool {
        var count = 0
        while let process, isActive, count < 4096 {
            switch process.channel.readSome() {
            case .data:
                guard drain(limit: 4096, count: &count) else { return done() }
                if done() { return true }
            case .wouldBlock: return done()
            case .closed, .failed:
                ended()
                return done()
            }
        }
        return done()
    }

    /// `wait`: what is read is run first; then one blocking read until the earliest deadline, in slices
    /// of `exitCheckInterval` (`FrameChannel.readWaiting`: a round trip costs the host a write and a
    /// read, as the C floor does), or, while output is still waiting for room, a poll for both directions.
    private func waitStopped(until done: () -> Bool) -> Bool {
        if process?.channel.pendingOutput ?? 0 > 0 { flushNow() }
        var count = 0
        while true {
            guard drain(count: &count) else { return done() }
            if done() { return true }
            guard let process, status != .failed else { return false }
            let deadline = waitDeadline
            if deadline <= lcs_monotonic_ns(), readWithoutWaiting(until: done) { return true }
            let until = min(deadline, lcs_monotonic_ns() + Self.exitCheckInterval)
            if process.channel.pendingOutput == 0 {
                switch process.channel.readWaiting(until: until) {
                case nil: sliceEnded()
                case .data?, .wouldBlock?: continue
                case .closed?, .failed?:
                    ended()
                    return done()
                }
                continue
            }
            let revents = process.channel.poll(Int16(POLLIN | POLLOUT), until: until)
            if revents == 0 {
                sliceEnded()
                continue
            }
            if revents & Int16(POLLOUT) != 0 { flushNow() }
            if revents & Int16(POLLIN | POLLHUP | POLLERR) != 0 {
                switch process.channel.readSome() {
                case .data, .wouldBlock: continue
                case .closed, .failed:
                    ended()
                    return done()
                }
            }
        }
    }

    // MARK: Deadlines

    private func armDeadline(_ deadline: UInt64) {
        guard let handle else { return }
        deadlineTimer?.cancel()
        deadlineArmed = deadline
        deadlineTimer = handle.loop.addRealTimeTimer(at: MonotonicInstant(nanoseconds: deadline)) { [weak self] in
            guard let self else { return }
            deadlineArmed = 0
            deadlineTimer = nil
            checkDeadlines()
        }
    }

    /// Reads the process's progress and fails it if a frame is past its deadline; re-arms the timer
    /// for the next deadline. A process that has ended meanwhile is reported as such, not as an
    /// overrun. [loop-thread]
    func checkDeadlines() {
        // A frozen process runs nothing: its deadlines wait for the thaw, which moves them on.
        guard isActive, frozenAt == nil, let process else { return }
        if let earliest = events.earliest, earliest.deadline <= lcs_monotonic_ns(), process.hasExited { return processExited() }
        guard catchUp(process) else { return }
        guard let earliest = events.earliest else { return }
        if earliest.deadline <= lcs_monotonic_ns() {
            let running = events.entry(process.handling) ?? events.entry(earliest.number)!
            let budget = running.budget.named(handle?.app.configuration ?? Configuration(), settings)
            fail(.overran(budgetName: budget.name, budget: budget.length))
        } else if deadlineArmed == 0 || earliest.deadline < deadlineArmed || deadlineTimer == nil {
            armDeadline(earliest.deadline)
        }
    }

    /// Takes the process's word for how far it got, checked: never beyond what was sent.
    /// - Returns: false when the word was impossible (the process was failed).
    func catchUp(_ process: RunnerProcess) -> Bool {
        let completed = process.completed
        guard completed <= events.sent else {
            fail(.protocolViolation("its progress page claims \(completed) frames run of \(events.sent) sent"))
            return false
        }
        events.finish(through: completed, at: lcs_monotonic_ns())
        return true
    }
}
