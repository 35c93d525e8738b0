import AppLifecycle
import LifecycleC

// An application's isolated plugins, and the engine's wait for them at the end of every action.

extension PluginSet {
    /// Keeps an isolated plugin's proxy; the first one makes the engine settle its isolated plugins
    /// at the end of every action (`Application.settleHandler`). [loop-thread]
    func adopt(_ proxy: IsolatedPlugin, in handle: AppHandle) {
        isolated.append(proxy)
        guard handle.app.settleHandler == nil else { return }
        handle.app.settleHandler = { [weak self] in self?.settle() }
        handle.app.stateChangeHandler = { [weak self, unowned handle] from, to in self?.stateChanged(from: from, to: to, in: handle) }
    }

    /// Suspended means frozen (docs/lifecycle.md): entering `.suspended`, every running isolated
    /// plugin's processes are frozen; on a resume (`.suspended` → `.background`, before anything is
    /// delivered) they are thawed; on a purge or termination of the suspended application they are
    /// killed, and each such plugin starts again in a new process at the next launch, before its first
    /// callback. The first freeze says in the trace which freezer, or once that none can be used.
    /// [loop-thread]
    func stateChanged(from: ApplicationState, to: ApplicationState, in handle: AppHandle) {
        switch (from, to) {
        case (_, .suspended):
            var used: FreezerMethod?
            var tried = false
            for proxy in isolated where proxy.status == .running {
                tried = true
                if let method = proxy.freeze() { used = used ?? method }
            }
            guard tried, !freezingSaid else { return }
            freezingSaid = true
            if let used {
                handle.app.record(.pluginFreezing(plugin: nil, .frozen(freezer: used.description)))
            } else {
                handle.app.record(.pluginFreezing(plugin: nil, .unavailable(reason: Self.noFreezerReason(isolated))))
            }
        case (.suspended, .notRunning):
            for proxy in isolated where proxy.isFrozen { proxy.killWithSuspendedApplication() }
        case (.suspended, _):
            for proxy in isolated { proxy.thaw() }
        case (.notRunning, _):
            for proxy in isolated where proxy.awaitsLaunch { proxy.startForLaunch() }
        default:
            break
        }
    }

    /// Why no isolated plugin could be frozen, for the trace.
    private static func noFreezerReason(_ proxies: [IsolatedPlugin]) -> String {
        if proxies.contains(where: { $0.settings.freezer == .none }) { return "the freezer is turned off (none)" }
        if let asked = proxies.first(where: { $0.settings.freezer != .auto })?.settings.freezer {
            return "the \(asked.rawValue) freezer cannot be used here"
        }
        return "the system refused every freezer"
    }

    /// Waits until every running isolated plugin has run what it was sent: all are asked first, so
    /// that they work at once, then each answer is awaited (each frame within its deadline).
    func settle() {
        let asked = isolated.filter { $0.beginSync() }
        for proxy in asked { proxy.endSync() }
    }
}

extension LoadedPlugin {
    /// Whether it runs in a process of its own.
    package var isIsolated: Bool { isolation != nil }

    /// How its process last failed (nil: it runs, or never failed).
    package var isolatedFailure: PluginFailure? { isolation?.failure }
}
