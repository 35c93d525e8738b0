/// Background tasks: begin, end, the expiration warning and the watchdog at the end of the
/// background-task budget.
extension Application {
    /// Begins a background task: while any is open, the application stays in the background instead
    /// of being suspended, for at most the background-task budget counted from leaving the foreground.
    ///
    /// [loop-thread] The expiration handler runs on the loop thread `expirationWarning` before the time
    /// runs out; a task still open when it has run out goes to the watchdog policy.
    /// - Throws: `.illegalAction` unless the application is running.
    public func beginBackgroundTask(named name: String = "", owner: String = "",
                                    expirationHandler: (() -> Void)? = nil) throws(ApplicationError) -> BackgroundTaskID
    {
        try requireLoopThread("beginBackgroundTask")
        guard state.isRunning else {
            throw .illegalAction("beginBackgroundTask", in: state, "background tasks begin only while the application runs")
        }
        let id = BackgroundTaskID(rawValue: nextTaskID)
        nextTaskID += 1
        tasks.append(OpenTask(id: id, name: name, owner: owner, expirationHandler: expirationHandler))
        taskCounts[owner, default: 0] += 1
        trace(.backgroundTask(id: id, phase: .began, name: name, owner: owner))
        if state == .background, expirationTimer == nil { scheduleBackgroundTimers() }
        return id
    }

    /// Ends a background task; the application is suspended when nothing else holds it. [loop-thread]
    /// - Throws: `.unknownBackgroundTask` when no open task has that id.
    public func endBackgroundTask(_ id: BackgroundTaskID) throws(ApplicationError) {
        try requireLoopThread("endBackgroundTask")
        guard let task = tasks.remove(key: id) else {
            throw ApplicationError(.unknownBackgroundTask, "no open background task has id \(id)")
        }
        uncount(task.owner)
        trace(.backgroundTask(id: id, phase: .ended, name: task.name, owner: task.owner))
        if tasks.isEmpty { cancelBackgroundTimers() }
        suspendIfIdle()
    }

    /// Ends every open background task begun by `owner` (a plugin being unloaded). [loop-thread]
    /// - Returns: how many were ended.
    @discardableResult
    public func endBackgroundTasks(owner: String) -> Int {
        loop.preconditionOnLoopThread("Application.endBackgroundTasks(owner:)")
        let owned = tasks.filter { $0.owner == owner }
        for task in owned { try? endBackgroundTask(task.id) }
        return owned.count
    }

    /// Gives the open background tasks `owner` began to the owner `to` (a plugin being reloaded parks
    /// what its old instance holds while the new instance's `init` runs), counts included; their ids,
    /// names and expiration handlers stay. O(tasks). [loop-thread]
    public func moveBackgroundTasks(owner: String, to: String) {
        loop.preconditionOnLoopThread("Application.moveBackgroundTasks(owner:to:)")
        var moved = 0
        tasks.updateAll { task in
            guard task.owner == owner else { return }
            task.owner = to
            moved += 1
        }
        guard moved > 0 else { return }
        taskCounts[owner] = nil
        taskCounts[to, default: 0] += moved
    }

    /// How many open background tasks `owner` began (ended ones, by anyone, the watchdog included,
    /// no longer count). O(1). [loop-thread]
    public func backgroundTaskCount(owner: String) -> Int {
        loop.preconditionOnLoopThread("Application.backgroundTaskCount(owner:)")
        return taskCounts[owner] ?? 0
    }

    /// One task of `owner` ended.
    private func uncount(_ owner: String) {
        let left = (taskCounts[owner] ?? 1) - 1
        taskCounts[owner] = left > 0 ? left : nil
    }

    /// Every task is gone (the watchdog ended them, or the application stopped running).
    func forgetTasks() {
        tasks.removeAll()
        taskCounts.removeAll()
    }

    /// The open background tasks, oldest first.
    public var backgroundTasks: [BackgroundTaskInfo] {
        loop.preconditionOnLoopThread("Application.backgroundTasks")
        return tasks.map { BackgroundTaskInfo(id: $0.id, name: $0.name, owner: $0.owner, expirationHandlerCalled: $0.expirationCalled) }
    }

    /// Background time left (`backgroundTimeRemaining`): nil in the foreground (unlimited), zero when
    /// suspended or not running.
    public var backgroundTimeRemaining: Duration? {
        loop.preconditionOnLoopThread("Application.backgroundTimeRemaining")
        switch state {
        case .active, .inactive: return nil
        case .suspended, .notRunning: return .zero
        case .background:
            guard let since = backgroundSince else { return configuration.budgets.backgroundTask }
            let used = loop.now.duration(since: since)
            return used >= configuration.budgets.backgroundTask ? .zero : configuration.budgets.backgroundTask - used
        }
    }

    /// `backgroundTimeRemaining` in seconds as the C ABI gives it: negative for unlimited (the
    /// foreground). [loop-thread]
    public var backgroundTimeRemainingSeconds: Double { backgroundTimeRemaining.map(\.secondsDouble) ?? -1 }

    func scheduleBackgroundTimers() {
        cancelBackgroundTimers()
        guard state == .background, !tasks.isEmpty, let since = backgroundSince else { return }
        let budgets = configuration.budgets
        let warning = min(budgets.expirationWarning, budgets.backgroundTask)
        expirationTimer = loop.addTimer(at: since + (budgets.backgroundTask - warning)) { [weak self] in self?.expireTasks() }
        deadlineTimer = loop.addTimer(at: since + budgets.backgroundTask) { [weak self] in self?.backgroundTimeRanOut() }
    }

    func cancelBackgroundTimers() {
        expirationTimer?.cancel()
        deadlineTimer?.cancel()
        expirationTimer = nil
        deadlineTimer = nil
    }

    private func expireTasks() {
        expirationTimer = nil
        // Each task's handler in the order they began; one may end or begin tasks meanwhile.
        for id in tasks.map(\.id) {
            guard let task = tasks[id], !task.expirationCalled else { continue }
            tasks.update(key: id) { $0.expirationCalled = true }
            trace(.backgroundTask(id: id, phase: .expiring, name: task.name, owner: task.owner))
            if let handler = task.expirationHandler {
                runMarked("expiration handler", owner: task.owner, handler)
            }
        }
    }

    private func backgroundTimeRanOut() {
        deadlineTimer = nil
        guard !tasks.isEmpty, let since = backgroundSince else { return }
        let elapsed = loop.now.duration(since: since)
        for task in tasks {
            let report = WatchdogReport(observer: task.owner, event: "background task #\(task.id)" + (task.name.isEmpty ? "" : " '\(task.name)'"),
                                        budget: .backgroundTask, of: configuration.budgets.backgroundTask,
                                        elapsed: elapsed, policy: configuration.watchdogPolicy,
                                        subject: .backgroundTask(task.id, name: task.name))
            trace(.watchdogOverrun(report))
            killSwitch.overrun(report)
        }
        if configuration.watchdogPolicy == .terminate {
            goNotRunning(.killedByWatchdog)
        } else {
            for task in tasks {
                trace(.backgroundTask(id: task.id, phase: .endedByWatchdog, name: task.name, owner: task.owner))
            }
            forgetTasks()
            suspendIfIdle()
        }
    }
}
