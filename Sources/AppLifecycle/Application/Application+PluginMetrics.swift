/// What the engine's metrics learn of plugins from their loader: which plugin a loading is, and
/// which plugins are loaded (see `EngineMetrics`). Without a metrics backend each is the marking
/// alone (`runLoading`) or nothing.
extension Application {
    /// Runs a plugin's loading — opening the file at `path`, reading its descriptor, its `init` —
    /// marked as the callback `init` of `path`, as `runMarked("init", owner: path, body)` does: the
    /// hang budget watches it, and the watchdog, `runningCallbacks` and an intercepted `exit()` name
    /// the path (the id is not known before the descriptor is read). Its duration
    /// (`LifecycleMetric.callbackDuration`, kind `other`) is labelled with the plugin's id, told by
    /// the loader during `body` (`identifyLoading`), or `LifecycleMetric.unidentifiedPlugin` when it
    /// never was. [loop-thread]
    public func runLoading<R, E: Error>(path: String, _ body: () throws(E) -> R) throws(E) -> R {
        loop.preconditionOnLoopThread("Application.runLoading(path:_:)")
        let owner = center.ownerID(path)
        let outer = metrics?.loadingBegan(owner: owner)
        defer { metrics?.loadingEnded(restoring: outer) }
        return try center.runMarked(CallbackProbe.bits(.other, subject: center.probe.labelID("init")), owner: owner, body)
    }

    /// The plugin being loaded (`runLoading`) has the id `id`: its descriptor was read, and the id is
    /// its own (not one already loaded). Outside `runLoading`, or without metrics, nothing. [loop-thread]
    public func identifyLoading(_ id: String) {
        metrics?.loadingIdentified(id)
    }

    /// The plugin `id` is loaded (`isolated`: in a process of its own): its counters are exported at 0
    /// from now on (`EngineMetrics.pluginLoaded`). Without metrics, nothing. [loop-thread]
    public func pluginLoaded(_ id: String, isolated: Bool) {
        metrics?.pluginLoaded(id, isolated: isolated)
    }
}
