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

extension AppHandle {
    /// Waits until every isolated plugin has run what it was sent (what the engine does at the end of
    /// each action and budgeted phase). [loop-thread]
    package func settleIsolatedPlugins() { (attachment as? PluginSet)?.settle() }
}

extension LoadedPlugin {
    /// The delegate handlers the engine calls for an isolated plugin (each call crosses to its
    /// process), for measuring a call without a whole action around it; nil in-process.
    package var isolatedDelegateHandlers: DelegateHandlers? {
        guard let isolation, isolation.status == .running else { return nil }
        return isolation.makeHandlers(implementedRows)
    }
}

extension LoadedPlugin {
    /// The delegate handlers of a plugin in the host's process, bound anew (for measuring a call); nil
    /// for an isolated one.
    package var inProcessDelegateHandlers: DelegateHandlers? {
        guard isolation == nil, isActive else { return nil }
        return bindDelegates().handlers
    }
}
