import AppLifecycle
import CLifecycleABI
import CLifecycleSystem
import Glibc
import LifecycleC

extension AppHandle {
    /// Loads a plugin isolated in a process of its own (see `IsolatedPlugin`): the same checks as
    /// `loadPlugin(path:)` (made by the plugin's process, with the loader's own code), the id checked
    /// here, then `init` there, within `settings.initBudget`. [loop-thread]
    /// - Throws: `PluginRefusal` — the loader's refusals in the same words, a failing init's message,
    ///   or what ended the process (a signal, an exit, the init budget); the application and the other
    ///   plugins are unaffected.
    package func loadIsolatedPlugin(path: String, settings: IsolationSettings) throws(PluginRefusal) -> LoadedPlugin {
        // Without a condition, it is loaded or refused.
        try loadIsolatedPlugin(path: path, settings: settings, onlyIf: { _ in true })!
    }

    /// `loadIsolatedPlugin(path:settings:)` for the plugin only if its id satisfies `onlyIf`: its
    /// process reads the descriptor, and ends before init when the id does not qualify (nil is
    /// returned: load it in this process if it is wanted here). [loop-thread]
    package func loadIsolatedPlugin(path: String, settings: IsolationSettings,
                                    onlyIf: (String) -> Bool) throws(PluginRefusal) -> LoadedPlugin?
    {
        guard loop.isOnLoopThread else {
            throw PluginRefusal(path: path, reason: "plugins are loaded on the main run loop's thread", status: lc_status(LC_ERR_WRONG_THREAD))
        }
        guard path.utf8.first == UInt8(ascii: "/") else {
            throw PluginRefusal(path: path, reason: "the path is relative; plugins are loaded from absolute paths only",
                                status: lc_status(LC_ERR_PLUGIN_REFUSED))
        }
        let started = try IsolatedPlugin.launch(path: path, settings: settings, prestarted: pluginSet.prestarted.removeValue(forKey: path))
        func dismiss(_ reason: String) {
            started.process.channel.out.begin(.refuse)
            started.process.channel.out.string(reason)
            started.process.channel.out.end()
            _ = started.process.channel.writeSome()
            started.process.reap(within: .seconds(1))
        }
        guard onlyIf(started.id) else {
            dismiss("not isolated")
            return nil
        }
        do {
            try checkUnique(started.id, path: path)
        } catch {
            dismiss(error.reason)
            throw error
        }
        let plugin = LoadedPlugin(isolated: started.id, version: started.version, summary: started.summary, path: path,
                                  abiMajor: started.abiMajor, abiMinor: started.abiMinor, owner: self)
        let proxy = IsolatedPlugin(plugin: plugin, handle: self, settings: settings, process: started.process)
        plugin.isolation = proxy
        if let refusal = proxy.initialise() {
            pluginSet.retire(plugin)
            throw refusal
        }
        pluginSet.register(plugin)
        pluginSet.adopt(proxy, in: self)
        return plugin
    }
}

extension AppHandle {
    /// Starts a runner for each of `paths` at once and sends each its hello, so that the processes
    /// start (exec, the Swift runtime, the loader's checks, `dlopen`) side by side instead of one
    /// after another; the isolated loads of those paths then take them (`loadIsolatedPlugin`), in
    /// the caller's order: every plugin's `init` still runs alone and in order. A path that cannot be
    /// started here is started again by its load, which reports why. Call `discardPrestarted` once
    /// the loads are done: a runner whose load never came is dismissed (it ran no plugin code but its
    /// constructors, in its own process). [loop-thread]
    ///
    /// At most `prestartLimit` (32) runners are started ahead: a folder of a thousand plugins starts
    /// the first 32 at once and the rest one by one as their loads come, instead of a thousand
    /// processes in one burst.
    package func prestartIsolated(paths: [String], settings: IsolationSettings) {
        guard loop.isOnLoopThread, let runner = try? IsolationRunner.resolve() else { return }
        let set = pluginSet
        var wanted: [String] = []
        for path in paths where path.utf8.first == UInt8(ascii: "/") && set.prestarted[path] == nil && !wanted.contains(path) {
            guard set.prestarted.count + wanted.count < Self.prestartLimit else { break }
            wanted.append(path)
        }
        // Asked of the runners' server back to back, each hello queued on its socket before.
        let processes = RunnerProcess.startSeveral(runner: runner, count: wanted.count, cgroups: settings.cgroups,
                                                     freezer: settings.freezer) { index, channel in
            IsolatedPlugin.queueHello(on: channel, path: wanted[index], settings: settings)
        }
        for (path, process) in zip(wanted, processes) {
            if let process { set.prestarted[path] = process }
        }
    }

    /// The most runners `prestartIsolated` keeps started ahead.
    package static let prestartLimit = 32

    /// Dismisses the runners started ahead that no load took (`prestartIsolated`). [loop-thread]
    package func discardPrestarted() {
        guard let set = attachment as? PluginSet, !set.prestarted.isEmpty else { return }
        let left = set.prestarted.values
        set.prestarted.removeAll()
        for process in left {
            process.channel.out.begin(.refuse)
            process.channel.out.string("not loaded")
            process.channel.out.end()
            _ = process.channel.writeSome()
        }
        for process in left { process.reap(within: .seconds(1)) }
    }
}

extension IsolatedPlugin {
    /// Runs init in the process (`proceed`), serving what it asks meanwhile, then registers the
    /// plugin's delegate with the rows it implements. [loop-thread]
    /// - Returns: the refusal, nil when the plugin runs (`status` is then `.running`).
    func initialise() -> PluginRefusal? {
        guard let handle else { return nil }
        status = .loading
        loadAnswer = nil
        plugin.isActive = true
        let sent = sendFrame(.proceed, .initialise, flush: true) { [plugin] out in plugin.quota.limits.write(to: &out) }
        let answered = wait(for: sent) { loadAnswer != nil }
        func refuse(_ reason: String) -> PluginRefusal {
            plugin.removeRegistrations(in: handle)
            forgetRegistrations()
            plugin.isActive = false
            if status != .failed {
                status = .failed
                process?.kill()
            }
            process?.reap(within: .seconds(1))
            stopWatching()
            return PluginRefusal(path: plugin.path, reason: reason, status: lc_status(LC_ERR_PLUGIN_REFUSED), processFailure: failure?.cause,
                                 stage: .initialising, id: plugin.id)
        }
        guard answered, case .initDone(let initStatus, let reason, let bits, let sceneBits)? = loadAnswer else {
            if case .loadFailed(_, let reason)? = loadAnswer { return refuse(reason) }
            return refuse("isolated: " + (failure.map { Self.refusalWords($0) } ?? "the plugin's process ended during init"))
        }
        guard initStatus == LC_OK else { return refuse(reason) }
        if settings.scanOnly {
            status = .running
            return nil
        }
        let rows = FFIDelegates.Rows(reported: bits, scene: false)
        plugin.implementedRows = rows
        plugin.isolatedSceneRows = FFIDelegates.Rows(reported: sceneBits, scene: true)
        if !rows.isEmpty {
            do {
                plugin.delegateToken = try handle.app.addDelegate(makeHandlers(rows), id: plugin.id)
            } catch {
                unload()
                return refuse(error.message)
            }
        }
        status = .running
        failure = nil
        watch()
        return nil
    }

    /// Unloads the plugin: its process runs deinit (within the call budget) and exits. The host's
    /// registrations are the caller's (`LoadedPlugin.deactivate` removes them first). [loop-thread]
    func unload() {
        guard status == .running || status == .loading, process != nil else { return }
        // Unloading is the host's, not the life cycle's: a frozen process runs its deinit.
        if frozenAt != nil { thaw() }
        status = .unloading
        unloadedSeen = false
        let sent = sendFrame(.unload, .unload, flush: true)
        _ = wait(for: sent) { unloadedSeen }
        if status == .unloading { status = .unloaded }
        process?.reap(within: .milliseconds(500))
        forgetRegistrations()
        stopWatching()
        completeOpenRequests()
    }

    /// The process ended (end of file, a failed write, its exit seen): a failure, unless it was
    /// unloading and had said its deinit returned (`unloaded`). One that ends in its deinit — a crash,
    /// an `exit()` — is reported like any other failure (never restarted).
    func ended() {
        guard let process else { return }
        if status == .unloading, unloadedSeen {
            status = .unloaded
            process.reap(within: .milliseconds(500))
            stopWatching()
            return
        }
        let exit = process.reap(within: .seconds(1))
        fail(Self.cause(of: exit), killed: false)
    }

    /// Takes the plugin out after its process failed, reports it, and applies the restart policy (not
    /// to a failure while unloading). Its process is killed with everything it started (unless
    /// `killed` is false: it has ended and was reaped). [loop-thread] Safe from inside a dispatch or
    /// a delegate call of the plugin's.
    ///
    /// A failure while the plugin is first loaded is not reported here: the load's refusal says it.
    func fail(_ cause: PluginFailure.Cause, killed: Bool = true, during known: String? = nil) {
        guard status == .running || status == .loading || status == .unloading, let handle, let process else { return }
        let wasRunning = status != .loading
        let unloading = status == .unloading
        // What it was running: the frame its page says it was handling, if that is one not finished;
        // else the frame the host was waiting for.
        if process.completed <= events.sent { events.finish(through: process.completed, at: lcs_monotonic_ns()) }
        let event = known ?? (events.entry(process.handling)?.what ?? awaited?.what)?.description
        status = .failed
        if killed {
            // Reaped on a later turn: a callback waiting for this plugin goes on at once.
            process.kill()
            handle.loop.perform { process.reap(within: .seconds(1)) }
        }
        takeOut(handle, unregister: wasRunning)
        failure = PluginFailure(plugin: plugin.id, cause: cause, event: event, restart: .none)
        if wasRunning || isRestarting { report(cause, event: event, restartable: !unloading) }
    }

    /// Records the failure in the trace with what the restart policy makes of it (and schedules the
    /// restart, when `restartable`).
    private func report(_ cause: PluginFailure.Cause, event: String?, restartable: Bool = true) {
        guard let handle else { return }
        var restart = PluginFailure.Restart.none
        if case .onFailure(let limit) = settings.restart {
            if !restartable {
                restart = .unloading
            } else if restarts < limit {
                restarts += 1
                let delay = settings.delay(before: restarts)
                restart = .scheduled(attempt: restarts, limit: limit, delay: delay)
                handle.loop.addRealTimeTimer(after: delay) { [weak self] in self?.restart() }
            } else {
                restart = .gaveUp(limit: limit)
            }
        }
        let report = PluginFailure(plugin: plugin.id, cause: cause, event: event, restart: restart)
        failure = report
        handle.app.record(.pluginFailed(report))
    }

    /// Starts the plugin again in a new process (restart policy `on-failure`): as a first load, with
    /// the same id required.
    private func restart() {
        guard status == .failed, let handle, startAgain() else { return }
        handle.app.record(.pluginRestarted(plugin: plugin.id, attempt: restarts, limit: restartLimit))
    }

    /// Starts the plugin, taken out (`status` `.failed`), in a new process: as a first load, with the
    /// same id required. A failure is reported (`report`). - Returns: whether it runs.
    func startAgain() -> Bool {
        guard status == .failed, let handle else { return false }
        isRestarting = true
        defer { isRestarting = false }
        let started: (process: RunnerProcess, id: String, version: String, summary: String, abiMajor: UInt32, abiMinor: UInt32)
        do { started = try Self.launch(path: plugin.path, settings: settings) } catch {
            report(.startFailed(error.reason), event: nil)
            return false
        }
        do throws(PluginRefusal) {
            guard started.id == plugin.id else {
                throw PluginRefusal(path: plugin.path, reason: "the file now holds plugin '\(started.id)', not '\(plugin.id)'",
                                    status: lc_status(LC_ERR_PLUGIN_REFUSED))
            }
            try handle.checkUnique(plugin.id, path: plugin.path)
        } catch {
            started.process.kill()
            started.process.reap(within: .seconds(1))
            report(.startFailed(error.reason), event: nil)
            return false
        }
        process = started.process
        events.reset()  // the new process's channel has a writer of its own: no names sent yet
        names.removeAll()
        failure = nil
        if let refusal = initialise() {
            // A process that failed in init was reported by `fail`; a refusal in words is reported here.
            if failure == nil { report(.startFailed(refusal.reason), event: "init") }
            return false
        }
        handle.pluginSet.register(plugin)
        return true
    }

    /// The suspended application was purged or terminated: its frozen processes are killed, with no
    /// callback (a suspended app runs none, and iOS kills its process), and the plugin is taken out
    /// until the next launch starts it again in a new process (`startForLaunch`). Not a failure: no
    /// deinit runs, and an unload meanwhile has nothing to end. [loop-thread]
    func killWithSuspendedApplication() {
        guard status == .running, let handle, let process else { return }
        frozenAt = nil
        process.kill()
        process.reap(within: .seconds(1))
        status = .failed
        awaitsLaunch = true
        takeOut(handle, unregister: true)
        handle.app.record(.pluginFreezing(plugin: plugin.id, .killed))
    }

    /// Takes out a plugin whose process is gone or going: the loop stops watching it, its open
    /// requests complete with `.failed`, what it registered is forgotten and (`unregister`) the
    /// application's registrations of it removed.
    private func takeOut(_ handle: AppHandle, unregister: Bool) {
        stopWatching()
        completeOpenRequests()
        forgetRegistrations()
        if unregister { handle.unloadFailed(plugin) }
    }

    /// Starts the plugin killed with the suspended application again, in a new process, as the
    /// application launches (before the launch's first callback): its init runs again. A start that
    /// fails is reported as a failure. [loop-thread]
    func startForLaunch() {
        guard awaitsLaunch, let handle else { return }
        awaitsLaunch = false
        guard startAgain() else { return }
        handle.app.record(.pluginFreezing(plugin: plugin.id, .restarted))
    }

    private var restartLimit: Int {
        if case .onFailure(let limit) = settings.restart { return limit }
        return 0
    }

    // MARK: Waiting for the plugins at the end of an action

    /// Asks the process to say when it has run everything sent so far (nothing when it has). [loop-thread]
    func beginSync() -> Bool {
        // A frozen process runs nothing until the thaw: the action does not wait for it.
        guard status == .running, frozenAt == nil, let process, catchUp(process), events.hasPending else { return false }
        waitingSync &+= 1
        synced = false
        syncFrame = sendFrame(.sync, word: waitingSync, .sync, flush: true)
        return true
    }

    /// Waits for the answer to `beginSync` (each frame within its deadline, the sync's own whatever
    /// the progress page says). [loop-thread]
    func endSync() {
        defer { syncFrame = nil }
        _ = wait(for: syncFrame) { synced }
    }

    // MARK: Tidying

    /// Calls the open completion handlers of requests sent to the plugin with `.failed`: nothing will
    /// call them now, and the application must not wait for them.
    private func completeOpenRequests() {
        let open = completions.values.filter { !$0.wasCalled && !$0.requestEnded }
        completions.removeAll()
        for handler in open { handler(.failed) }
    }

    /// Forgets what the process registered (the center's and the loop's entries are removed by owner).
    private func forgetRegistrations() {
        observers.removeAll()
        timers.removeAll()
    }

    private func stopWatching() {
        source?.cancel()
        source = nil
        exitSource?.cancel()
        exitSource = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        deadlineArmed = 0
        inbox.removeAll()
        endBacklog(caughtUp: false)
    }
}

extension AppHandle {
    /// Takes out a plugin whose process failed: its registrations removed, no deinit (its process is gone).
    func unloadFailed(_ plugin: LoadedPlugin) {
        guard pluginSet.remove(plugin) else { return }
        pluginSet.removeSceneDelegate(plugin, in: self)
        plugin.removeRegistrations(in: self)
        plugin.isActive = false
        pluginSet.retire(plugin)
    }
}
