import AppLifecycle
import CLifecycleABI
import LifecycleC

/// Why a plugin was not reloaded; its old instance runs on (unless `oldInstanceGone`). [value]
package struct PluginReloadFailure: Error, Sendable, CustomStringConvertible {
    /// The id asked for.
    package let id: String
    /// Why, in words (the file and the loader's reason, the init's message, what is outstanding).
    package let reason: String
    /// `LC_ERR_NOT_FOUND` (no such plugin), `LC_ERR_INVALID_ARGUMENT` (a bad id or path),
    /// `LC_ERR_ILLEGAL_ACTION` (something outstanding, without force), `LC_ERR_PLUGIN_REFUSED` or
    /// `LC_ERR_VERSION` (the new file or its init refused), `LC_ERR_WRONG_THREAD`.
    package let status: lc_status

    package var message: String { "cannot reload '\(id)': \(reason)" }
    package var description: String { message }
}

/// The new instance of a plugin being reloaded, before its `init` (`AppHandle.reloadPlugin`): loaded
/// in this process (its file opened and checked) or in a new runner process (which described it).
struct ReloadCandidate {
    /// Its id, as its descriptor says.
    let id: String
    /// Runs its `init` (the old instance's registrations parked meanwhile); a refusal has removed
    /// what it registered and stopped whatever it started.
    let initialise: () throws(PluginRefusal) -> LoadedPlugin
    /// The delegate to register for the initialised instance; nil when it implements no method.
    let delegate: (LoadedPlugin) -> DelegateHandlers?
    /// Drops it, with the reason, when the reload stops before its `init`.
    let discard: (String) -> Void
}

extension AppHandle {
    /// Replaces the loaded plugin `id` with a new instance loaded from `path` (nil: the file the old
    /// instance was loaded from, read again), in place, without stopping the application. [loop-thread]
    ///
    /// In order, traced between `plugin-reload begin [id] (path)` and `plugin-reload end [id] (path)`:
    /// 1. Refused while one of its callbacks runs (a call from inside it, at any depth); unless `force`,
    ///    refused while the plugin has a background task open, a completion handler
    ///    pending or (in this process) `perform_async` work queued.
    /// 2. The new instance is prepared. In this process: `vet`, when given, is asked about the file
    ///    (the host scans it in a process of its own, as it scans every file it loads in its process: a
    ///    new build that crashes in init is refused, not the host's end); then the file is opened and
    ///    checked as any load (`OpenedPlugin.open`), from a private copy of its bytes
    ///    (`PluginLoadOptions.privateCopy`). Isolated: a new runner process is started on the file,
    ///    with the old one's settings, and describes the plugin. Either way its id must be `id`.
    /// 3. The old instance's state is asked for through its state-preservation delegates
    ///    (`Application.preserveForReload`, in memory; traced as delegate calls).
    /// 4. The old instance's observers, timers and background tasks are parked under a name no plugin
    ///    can have, and the new instance's `init` runs under the id. If it fails, what it registered is removed (an
    ///    isolated one's process is stopped), the old instance's registrations are given back,
    ///    and the old instance runs on as before.
    /// 5. The old instance is unloaded (its observers, delegate and timers removed, its `deinit` run;
    ///    an isolated one's runner stops); the new instance's delegate is registered, after the other
    ///    plugins'.
    /// 6. The new instance is handed the state (`Application.restoreAfterReload`).
    ///
    /// Every other plugin sees only the trace lines. The old `lc_plugin *` becomes stale (calls with it
    /// are refused as an unloaded plugin's, `PluginHandles`); the new instance has its own, and owns
    /// only what it registers. Images stay mapped (RTLD_NODELETE): each reload in this process maps one
    /// more. Costs: one file copy or one process start, the plugin's own calls, O(timers) and
    /// O(delegates) searches.
    /// - Throws: `PluginReloadFailure`, traced as `plugin-reload failed [id] (reason; the old instance
    ///   runs on)` once `begin` was traced; an unknown or invalid id is refused before any trace.
    ///
    /// `force` (the host's `reload ID --force`) reloads even with something outstanding: its background
    /// tasks are ended first; a pending completion handler stays pending (the new instance never had
    /// it; its budget ends it if nothing calls it); queued work still runs, in the old image, its host
    /// calls refused as an unloaded plugin's.
    package func reloadPlugin(id: String, path newPath: String? = nil, force: Bool = false,
                              loading: PluginLoadOptions = [], vet: ((String) -> PluginRefusal?)? = nil)
        throws(PluginReloadFailure) -> LoadedPlugin
    {
        func refuse(_ reason: String, _ status: Int) -> PluginReloadFailure {
            PluginReloadFailure(id: id, reason: reason, status: lc_status(status))
        }
        guard loop.isOnLoopThread else { throw refuse("plugins are reloaded on the main run loop's thread", LC_ERR_WRONG_THREAD) }
        if let problem = Self.idProblem(id) { throw refuse("invalid id: \(problem)", LC_ERR_INVALID_ARGUMENT) }
        guard let old = plugin(id: id) else { throw refuse("no plugin with that id is loaded", LC_ERR_NOT_FOUND) }
        if let newPath, newPath.utf8.first != UInt8(ascii: "/") {
            throw refuse("the path is relative; plugins are loaded from absolute paths only", LC_ERR_INVALID_ARGUMENT)
        }
        let path = newPath ?? old.path
        app.traceReload(id, .began(path: path))
        func fail(_ reason: String, _ status: Int) -> PluginReloadFailure {
            app.traceReload(id, .failed(reason: reason))
            return refuse(reason, status)
        }
        // Never from inside one of its own callbacks (an embedder's observer of a post it made): its
        // code is on the stack, and its deinit would free what that code is using. Force or not.
        if app.center.probe.isRunning(owner: app.center.ownerID(id)) {
            throw fail("one of its callbacks is running (a plugin is reloaded from outside its own callbacks)", LC_ERR_ILLEGAL_ACTION)
        }
        if let busy = outstanding(of: old) {
            guard force else { throw fail("\(busy) (reload it with --force to go ahead anyway)", LC_ERR_ILLEGAL_ACTION) }
            old.endAllBackgroundTasks(in: self)
        }
        let candidate: ReloadCandidate
        do throws(PluginRefusal) {
            if let proxy = old.isolation {
                candidate = try isolatedCandidate(replacing: proxy, path: path)
            } else {
                candidate = try inProcessCandidate(path: path, loading: loading, vet: vet)
            }
        } catch {
            throw fail(error.message, Int(error.status))
        }
        guard candidate.id == id else {
            let reason = "\(path) is the plugin '\(candidate.id)', not '\(id)'"
            candidate.discard(reason)
            throw fail(reason, LC_ERR_PLUGIN_REFUSED)
        }

        var preserved: UserInfo?
        if let token = old.delegateToken {
            do { preserved = try app.preserveForReload(token) } catch {
                candidate.discard("the reload stopped")
                throw fail(error.message, LC_ERR_ILLEGAL_ACTION)
            }
        }
        let new: LoadedPlugin
        do throws(PluginRefusal) {
            new = try initialiseBeside(old, candidate)
        } catch {
            throw fail(error.message, Int(error.status))
        }
        let handlers = candidate.delegate(new)

        _ = pluginSet.remove(old)
        pluginSet.removeSceneDelegate(old, in: self)
        old.deactivate(in: self, owner: Self.parkedOwner(id))
        if let handlers {
            do {
                new.delegateToken = try app.addDelegate(handlers, id: id)
            } catch {
                // Not expected: the old instance's delegate was removed just before.
                new.deactivate(in: self)
                throw fail("its delegate functions were refused: \(error.message); the plugin is unloaded", LC_ERR_PLUGIN_REFUSED)
            }
        }
        pluginSet.register(new)
        if let proxy = new.isolation { pluginSet.adopt(proxy, in: self) }
        if let preserved, let token = new.delegateToken {
            // A watchdog kill here is traced by the engine; the new instance stays loaded.
            try? app.restoreAfterReload(token, preserved)
        }
        app.traceReload(id, .ended(path: path))
        return new
    }

    /// The name a reloaded plugin's registrations are parked under while its new instance's
    /// `init` runs: a space cannot appear in a plugin id, so no plugin can have it.
    static func parkedOwner(_ id: String) -> String { "\(id) (reloading)" }

    /// A new instance in this process: the file vetted, then opened and checked from a private copy.
    private func inProcessCandidate(path: String, loading: PluginLoadOptions, vet: ((String) -> PluginRefusal?)?)
        throws(PluginRefusal) -> ReloadCandidate
    {
        if let vet, let refusal = vet(path) { throw refusal }
        let opened = try app.runLoading(path: path) { () throws(PluginRefusal) in
            try OpenedPlugin.open(path, options: loading.union(.privateCopy))
        }
        return ReloadCandidate(
            id: opened.id,
            initialise: { () throws(PluginRefusal) in
                try self.app.runLoading(path: opened.path) { () throws(PluginRefusal) in
                    self.app.identifyLoading(opened.id)
                    return try self.initialise(opened, hostTable: nil)
                }
            },
            delegate: { new in
                let (handlers, rows) = new.bindDelegates()
                new.implementedRows = rows
                return rows.isEmpty ? nil : handlers
            },
            discard: { _ in })  // nothing of it ran but its entry function: its image stays mapped, unused
    }

    /// Runs the new instance's `init` beside the old one (`reloadPlugin` step 4): the old instance's
    /// observers, timers and background tasks (one it began while encoding its state) parked meanwhile,
    /// given back if the init fails; unloading it then removes what is parked. [loop-thread]
    private func initialiseBeside(_ old: LoadedPlugin, _ candidate: ReloadCandidate) throws(PluginRefusal) -> LoadedPlugin {
        let parked = Self.parkedOwner(old.id)
        // Its callbacks are still checked as its own (they are named by the owner index they had).
        old.rememberCallerIndices(in: self)
        let center = app.center
        let hadObservers = center.moveOwner(old.id, to: parked)
        moveTimers(owner: old.id, to: parked)
        app.moveBackgroundTasks(owner: old.id, to: parked)
        do {
            return try candidate.initialise()
        } catch {
            if hadObservers { _ = center.moveOwner(parked, to: old.id) }
            moveTimers(owner: parked, to: old.id)
            app.moveBackgroundTasks(owner: parked, to: old.id)
            throw error
        }
    }

    /// What the plugin has outstanding that its reload would cut short, in words; nil for nothing.
    private func outstanding(of plugin: LoadedPlugin) -> String? {
        var what: [String] = []
        let tasks = app.backgroundTaskCount(owner: plugin.id)
        if tasks > 0 { what.append("\(tasks) background task\(tasks == 1 ? "" : "s") open") }
        if app.hasPendingCompletion(delegate: plugin.id) { what.append("a completion handler pending") }
        let work = plugin.workOwner.queuedWork
        if work > 0 { what.append("\(work) perform_async callback\(work == 1 ? "" : "s") queued") }
        return what.isEmpty ? nil : "it has " + what.joined(separator: ", ")
    }
}

extension LoadedPlugin {
    /// Ends every background task it began (a forced reload). [loop-thread]
    func endAllBackgroundTasks(in handle: AppHandle) {
        handle.app.endBackgroundTasks(owner: id)
        tasksForgotten()
    }

    /// Interns its owner indices now, under its id, if not yet done (`callerMismatch`). [loop-thread]
    func rememberCallerIndices(in handle: AppHandle) {
        if callerIndices == nil { callerIndices = (handle.app.center.ownerID(id), handle.app.center.ownerID(path)) }
    }
}
