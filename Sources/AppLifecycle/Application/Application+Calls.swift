import Synchronization

/// Calling out: delegate calls and lifecycle posts under the watchdog, budgets, and the trace.
extension Application {
    /// Calls one delegate method, traced, watched, and checked for a watchdog kill afterwards.
    /// `scene`: the scene the call is about (`configurationForConnecting`, `didDiscardSceneSessions`).
    func call<R>(_ method: DelegateMethod, _ slot: DelegateSlot, scene: String? = nil, _ body: () -> R) throws(Killed) -> R {
        announce(method, slot, scene: scene)
        let result = marked(method, owner: slot.owner, body)
        try checkKilled()
        return result
    }

    /// Calls a void method on every delegate implementing it, in registration order. A delegate
    /// removed by an earlier one is not called. `implements` tells whether a delegate has the method;
    /// `invoke` calls it in place (the handler is read where it is stored, never copied out: a copy
    /// retained and released its context at every delegate).
    ///
    /// The slots are read unretained from a snapshot of `slots` that this call keeps alive until it
    /// returns (a delegate that adds or removes delegates replaces `slots`, not the snapshot): a
    /// retain and a release a delegate fewer, ~40 instructions (the unsafe ledger).
    @inline(__always)
    func callDelegates(_ method: DelegateMethod, _ implements: (DelegateHandlers) -> Bool,
                       _ invoke: (DelegateHandlers, Application) -> Void) throws(Killed)
    {
        let snapshot = slots
        defer { withExtendedLifetime(snapshot) {} }
        for index in snapshot.indices {
            let called = Unmanaged.passUnretained(snapshot[index])._withUnsafeGuaranteedRef { slot -> Bool in
                guard implements(slot.handlers), isRegistered(slot) else { return false }
                announce(method, slot)
                marked(method, owner: slot.owner, passing: self) { invoke(slot.handlers, $0) }
                return true
            }
            if called { try checkKilled() }
        }
    }

    /// Before a delegate call: traced, and named to the watchdog inside a budget.
    @inline(__always)
    private func announce(_ method: DelegateMethod, _ slot: DelegateSlot, scene: String? = nil) {
        trace(scene.map { .inScene($0, .delegateCalled(method: method, delegate: slot.id)) }
            ?? .delegateCalled(method: method, delegate: slot.id))
        if inBudget { watchdog.setCurrent(event: method.selector, observer: slot.id) }
    }

    /// Asks every implementing delegate; true only if all answered true; nil when none implements it.
    func askAll<H>(_ method: DelegateMethod, _ handler: (DelegateHandlers) -> H?,
                           _ invoke: (H) -> Bool) throws(Killed) -> Bool?
    {
        var answer: Bool?
        for slot in slots {
            guard let body = handler(slot.handlers), isRegistered(slot) else { continue }
            let yes = try call(method, slot) { invoke(body) }
            answer = (answer ?? true) && yes
        }
        return answer
    }

    /// Whether `slot` is still registered (not removed since the loop over `slots` began): its flag,
    /// O(1) — no search of `slots` per call.
    @inline(__always)
    func isRegistered(_ slot: DelegateSlot) -> Bool { !slot.removed.load(ordering: .relaxed) }

    /// Posts a lifecycle notification to observers now (the engine's own posts are never held).
    func postLifecycle(_ name: NotificationName, userInfo: UserInfo? = nil, sender: UInt? = nil,
                               queuedCount: Int? = nil) throws(Killed)
    {
        trace(.notificationDelivered(name: name, userInfo: userInfo.flatMap { $0.isEmpty ? nil : $0 }, queuedCount: queuedCount))
        try deliver(name, userInfo: userInfo, sender: sender ?? self.sender.rawValue)
    }

    /// Dispatches a notification to observers now, under the watchdog when in a budget (not traced).
    func deliver(_ name: NotificationName, userInfo: UserInfo?, sender: UInt) throws(Killed) {
        if inBudget {
            let watchdog = self.watchdog
            let killed = killSwitch
            let event = name.rawValue
            center.observerWillRun = { owner in
                // A killed application runs nothing more, not even the rest of this observer list.
                if killed.killed.load(ordering: .relaxed) { return false }
                watchdog.setCurrent(event: event, observer: owner)
                return true
            }
        } else if metrics != nil {
            // The general loop, so that the center times each observer of the lifecycle notification.
            center.observerWillRun = EngineMetrics.sampleHook
        }
        center.dispatch(name, sender: sender, userInfo: userInfo)
        // A sample armed before this delivery stays armed (or was taken by it: see `EngineMetrics`).
        center.observerWillRun = metrics?.idleHook
        try checkKilled()
    }

    func withBudget(_ name: WatchdogReport.Budget, _ budget: Duration, _ body: () throws(Killed) -> Void) throws(Killed) {
        watchdog.begin(name, budget: budget)
        inBudget = true
        budgetPhase = name
        var failure: Killed?
        do { try body() } catch { failure = error }
        // Callbacks run elsewhere (isolated plugins) are done within the phase too.
        if failure == nil { settleHandler?() }
        inBudget = false
        budgetPhase = nil
        if let report = watchdog.end() {
            trace(.watchdogOverrun(report))
        }
        try checkKilled()
        if let failure { throw failure }
    }

    /// Runs `body` with the budgeted phase's clock and the hang budget stopped: time spent waiting for
    /// callbacks that are policed by deadlines of their own (an isolated plugin's, in another process)
    /// counts neither against the application's budget nor as a hang of the main thread. Nested calls
    /// stop them once. [loop-thread]
    package func withBudgetClockStopped<R>(_ body: () -> R) -> R {
        budgetClockStops += 1
        if budgetClockStops == 1 { watchdog.pause() }
        defer {
            budgetClockStops -= 1
            if budgetClockStops == 0 { watchdog.resume() }
        }
        return body()
    }

    /// After a callback: traces a hang the watchdog reported meanwhile, and unwinds a killed application.
    func checkKilled() throws(Killed) {
        if killSwitch.hangPending.load(ordering: .relaxed) { traceHangReports() }
        if killSwitch.killed.load(ordering: .relaxed) { throw Killed() }
    }

    /// `what` is built only for the error (an autoclosure: `perform` names its action, ~850
    /// instructions of string building a call when it was an argument).
    func requireLoopThread(_ what: @autoclosure () -> String) throws(ApplicationError) {
        guard loop.isOnLoopThread else {
            throw ApplicationError(.notOnLoopThread, "\(what()) must be called on the thread that runs the application's main run loop")
        }
    }

    // MARK: Trace

    /// Adds an event that happened outside the engine (an isolated plugin's process failed) to the
    /// trace, numbered in order with the engine's own. [loop-thread]
    package func record(_ payload: TraceEvent.Payload) { trace(payload) }

    /// Numbers the event and, when someone listens, hands it over with its words rendered. The payload
    /// is made only then: with no listener an event costs an increment.
    @inline(__always)
    func trace(_ payload: @autoclosure () -> TraceEvent.Payload) {
        sequenceNumber += 1
        guard isTracing || metrics != nil else { return }
        deliverTrace(payload())
    }

    @inline(never)
    private func deliverTrace(_ payload: TraceEvent.Payload) {
        let time = traceOrigin.map { loop.now.duration(since: $0) } ?? .zero
        let event = TraceEvent(seq: sequenceNumber, time: time, payload: payload, state: state)
        metrics?.traced(event)
        traceHandler?(event)
    }

    /// Sets the metrics' gauges from what they measure now: the cross-thread queue's figures
    /// (`MainRunLoop.queueFigures`), the open background tasks, the state (see `LifecycleMetric`).
    /// Counters and timers are recorded as things happen; gauges are read, so call this before an
    /// export. Does nothing without a metrics backend. [loop-thread]
    public func updateMetricGauges() {
        loop.preconditionOnLoopThread("Application.updateMetricGauges()")
        metrics?.updateGauges(self)
    }
}
