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
