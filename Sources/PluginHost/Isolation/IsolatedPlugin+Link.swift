import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC

// The host's end of the link to an isolated plugin's process: frames out (batched), frames in (from
// the loop's watch, or read while the host waits), deadlines.

extension IsolatedPlugin {
    /// The most the host buffers for one process before it waits for room (reading meanwhile).
    static let outputLimit = 1 << 20

    // MARK: Sending

    /// Sends a frame the plugin's process will run, numbered in the event log with its deadline:
    /// batched, unless `flush`. [loop-thread]
    /// - Returns: the frame's number (0 when nothing was sent: the plugin is not running).
    @discardableResult
    func sendEvent(_ kind: FrameKind, word: UInt64 = 0, _ what: EventLog.What, flush: Bool = false,
                   _ body: (inout FrameWriter) -> Void = { _ in }) -> UInt64
    {
        guard status == .running || status == .loading || status == .unloading, let process, let handle else { return 0 }
        let now = lcs_monotonic_ns()
        var budget = EventLog.Budget.call
        var deadline = now + settings.callBudgetNanoseconds
        if what == .initialise {
            budget = .initialise
            deadline = now + settings.initBudget.nanosecondCount
        } else if let phase = handle.app.budgetPhase {
            // The phase's budget, from the frame's start: the host's own clock for the phase stops
            // while it waits for isolated plugins, which are held to deadlines of their own.
            budget = .phase(phase.budget)
            deadline = now + budget.named(handle.app.configuration, settings).length.nanosecondCount
        }
        let channel = process.channel
        channel.out.begin(kind, word: word, state: UInt8(truncatingIfNeeded: handle.app.state.lcState))
        body(&channel.out)
        channel.out.end()
        let number = events.append(.init(what: what, budget: budget, deadline: deadline))
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
        return number
    }

    /// Sends the answer to request `request` at once (not an event: the process is waiting for it).
    func reply(_ request: UInt64, _ status: lc_status, value: UInt64 = 0, message: String = "") {
        guard let process else { return }
        process.channel.out.begin(.reply, word: request)
        process.channel.out.i32(status)
        process.channel.out.u64(value)
        process.channel.out.string(message)
        process.channel.out.end()
        flushNow()
    }

    /// Writes what it can; over `outputLimit` it waits for room (until the earliest deadline),
    /// otherwise the loop's watch writes the rest when the socket has room.
    func flushNow() {
        guard let process else { return }
        switch process.channel.writeSome() {
        case .done:
            setWatch(writable: false)
        case .wouldBlock:
            if process.channel.pendingOutput > Self.outputLimit {
                _ = waitForRoom()
            } else {
                setWatch(writable: true)
            }
        case .failed:
            ended()
        }
    }

    /// Waits until the buffer is written, reading the process's frames into `inbox` meanwhile (not
    /// running them: this may be the middle of a dispatch). False when the process failed.
    private func waitForRoom() -> Bool {
        guard let app = handle?.app else { return false }
        return app.withBudgetClockStopped { waitForRoomStopped() }
    }

    private func waitForRoomStopped() -> Bool {
        while let process, status != .failed {
            switch process.channel.writeSome() {
            case .done:
                setWatch(writable: false)
                if !inbox.isEmpty { handle?.loop.perform { [weak self] in self?.receive() } }
                return true
            case .failed:
                ended()
                return false
            case .wouldBlock:
                let revents = process.channel.poll(Int16(POLLIN | POLLOUT), until: events.earliest?.deadline)
                if revents == 0 {
                    checkDeadlines()
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

    /// Starts the loop's watch of the socket (once the plugin runs).
    func watch() {
        guard let process, let handle, source == nil else { return }
        source = try? handle.loop.addIO(fd: process.channel.fd, events: .readable) { [weak self] events in
            guard let self else { return }
            if events.contains(.writable) { flushNow() }
            if events.contains(.readable) || events.contains(.hangUp) || events.contains(.error) { receive() }
        }
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

    /// Runs the process's frames until `done` holds, waiting for them; past a frame's deadline the
    /// process is failed. The phase's budget clock is stopped meanwhile. - Returns: whether `done`
    /// held (false: the process failed or ended).
    func wait(until done: () -> Bool) -> Bool {
        guard let app = handle?.app else { return done() }
        return app.withBudgetClockStopped { waitStopped(until: done) }
    }

    /// `wait`: what is read is run first; then one blocking read until the earliest deadline
    /// (`FrameChannel.readWaiting`: a round trip costs the host a write and a read, as the C floor
    /// does), or, while output is still waiting for room, a poll for both directions.
    private func waitStopped(until done: () -> Bool) -> Bool {
        if process?.channel.pendingOutput ?? 0 > 0 { flushNow() }
        var count = 0
        while true {
            guard drain(count: &count) else { return done() }
            if done() { return true }
            guard let process, status != .failed else { return false }
            let deadline = events.earliest?.deadline ?? lcs_monotonic_ns() + settings.callBudgetNanoseconds
            if process.channel.pendingOutput == 0 {
                switch process.channel.readWaiting(until: deadline) {
                case nil: checkDeadlines()
                case .data?, .wouldBlock?: continue
                case .closed?, .failed?:
                    ended()
                    return done()
                }
                continue
            }
            let revents = process.channel.poll(Int16(POLLIN | POLLOUT), until: deadline)
            if revents == 0 {
                checkDeadlines()
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
        deadlineTimer = handle.loop.addTimer(at: MonotonicInstant(nanoseconds: deadline)) { [weak self] in
            guard let self else { return }
            deadlineArmed = 0
            deadlineTimer = nil
            checkDeadlines()
        }
    }

    /// Reads the process's progress and fails it if a frame is past its deadline; re-arms the timer
    /// for the next deadline. [loop-thread]
    func checkDeadlines() {
        guard status == .running || status == .loading || status == .unloading, let process else { return }
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
        events.finish(through: completed)
        return true
    }
}
