/// What the engine does for a plugin replaced in place by a new build of it (docs/host.md,
/// "Reloading a plugin"; docs/lifecycle.md, decision 59): the old delegate's state is handed to the
/// new one through the state-preservation delegates, in memory.
///
/// A reload is not an iOS event, so it does not wait for a moment at which iOS would save: the gates
/// are asked in whatever state the application is in, the archive is never written to
/// `archiveDirectory` (nor needs one), and the archive file of the last real save is left as it was.
/// A delegate takes part only with both gates, as in a real save (`preserveState`).
extension Application {
    /// Traces a step of a plugin's reload. [loop-thread]
    public func traceReload(_ plugin: String, _ step: PluginReloadStep) {
        loop.preconditionOnLoopThread("Application.traceReload(_:_:)")
        trace(.pluginReload(plugin: plugin, step))
    }

    /// Asks the delegate `token` for its state, as a save would: `shouldSaveApplicationState` with an
    /// empty archive, then, if it said yes, `willEncodeRestorableState`; each call traced and watched
    /// as any delegate call. [loop-thread]
    /// - Returns: what the archive holds then; nil when the delegate is not registered, does not
    ///   implement both gates (traced as skipped), says no, or its encoding failed (traced as
    ///   `archiveKept`: nothing is handed over).
    /// - Throws: `.illegalAction` when the watchdog killed the application during a call (the
    ///   application is then not running, as after any kill).
    public func preserveForReload(_ token: DelegateToken) throws(ApplicationError) -> UserInfo? {
        try requireLoopThread("preserveForReload")
        guard let slot = slot(token),
              let shouldSave = slot.handlers.shouldSaveApplicationState else { return nil }
        guard slot.handlers.shouldRestoreApplicationState != nil else {
            trace(.delegateSkipped(method: .shouldSaveApplicationState, reason: .preservationNeedsBoth(delegate: slot.id)))
            return nil
        }
        let archive = StateArchive()
        return try whileReloading("shouldSaveApplicationState") { () throws(Killed) -> UserInfo? in
            let saving = try call(.shouldSaveApplicationState, slot) { shouldSave(self, archive) }
            guard encodingHeld(archive, after: .shouldSaveApplicationState, slot), saving else { return nil }
            if let encode = slot.handlers.willEncodeRestorableState {
                try call(.willEncodeRestorableState, slot) { encode(self, archive) }
                guard encodingHeld(archive, after: .willEncodeRestorableState, slot) else { return nil }
            }
            return archive.values
        }
    }

    /// Hands `values` (from `preserveForReload`) to the delegate `token`, as a launch's restoration
    /// would: `shouldRestoreApplicationState` with the archive, then, if it said yes,
    /// `didDecodeRestorableState`; each call traced and watched. Nothing when the delegate is not
    /// registered or lacks either gate (traced as skipped). [loop-thread]
    /// - Throws: `.illegalAction` when the watchdog killed the application during a call.
    public func restoreAfterReload(_ token: DelegateToken, _ values: UserInfo) throws(ApplicationError) {
        try requireLoopThread("restoreAfterReload")
        guard let slot = slot(token),
              let shouldRestore = slot.handlers.shouldRestoreApplicationState else { return }
        guard slot.handlers.shouldSaveApplicationState != nil else {
            trace(.delegateSkipped(method: .shouldRestoreApplicationState, reason: .preservationNeedsBoth(delegate: slot.id)))
            return
        }
        let archive = StateArchive(values: values)
        try whileReloading("shouldRestoreApplicationState") { () throws(Killed) in
            guard try call(.shouldRestoreApplicationState, slot, { shouldRestore(self, archive) }) else { return }
            if let decode = slot.handlers.didDecodeRestorableState {
                try call(.didDecodeRestorableState, slot) { decode(self, archive) }
            }
        }
    }

    /// Whether a completion handler the engine handed to the delegate `id` is still waiting to be
    /// called (a fetch, a remote notification, a URL session's events). O(requests). [loop-thread]
    public func hasPendingCompletion(delegate id: String) -> Bool {
        loop.preconditionOnLoopThread("Application.hasPendingCompletion(delegate:)")
        return requests.contains { $0.observer == id }
    }

    /// Runs delegate calls outside an action: a watchdog kill ends the application as `perform` does,
    /// and is thrown as `.illegalAction` naming `what`.
    private func whileReloading<R>(_ what: String, _ body: () throws(Killed) -> R) throws(ApplicationError) -> R {
        do {
            return try body()
        } catch {
            traceHangReports()
            goNotRunning(.killedByWatchdog)
            throw ApplicationError(.illegalAction, "the watchdog killed the application during \(what) of the reload")
        }
    }
}
