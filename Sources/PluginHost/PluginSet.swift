import AppLifecycle
import LifecycleC

/// An application's plugins: what the plugins module attaches to an `AppHandle` (its `attachment`),
/// so that the C layer holds them without knowing their type. [loop-thread]
final class PluginSet: AppHandleAttachment {
    /// Loaded plugins in load order (ascending `loadNumber`: found by halving).
    private(set) var loaded: [LoadedPlugin] = []
    private var loads: UInt64 = 0
    /// Unloaded plugins, kept so that a stale `lc_plugin *` is answered, not dereferenced freed.
    private var retired: [LoadedPlugin] = []
    /// The loaded plugins sorted by id (ids are unique among loaded plugins), searched by halving: the
    /// duplicate check of each load stays cheap with a thousand plugins. (A dictionary would do as
    /// well later, but instantiating its type costs the first load of a process more than a search.)
    private var byID: [LoadedPlugin] = []
    /// The scene delegate rows of the plugins registered as scene delegates, by id (ABI 1.2).
    var sceneRows: [String: FFIDelegates.Rows] = [:]
    /// The isolated plugins' proxies, loaded or failed, in load order (`PluginSet+Isolation`).
    var isolated: [IsolatedPlugin] = []
    /// Whether the trace has said how isolated plugins are frozen (once a run).
    var freezingSaid = false
    /// The quotas of the plugins loaded from now on (`AppHandle.pluginQuotas`).
    var quotas = PluginQuotas()
    /// Runners started ahead, by plugin path, each sent its hello (`AppHandle.prestartIsolated`):
    /// taken by the next isolated load of that path.
    var prestarted: [String: RunnerProcess] = [:]

    /// Where `id` is, or would be inserted, in `byID`.
    private func sortedIndex(of id: String) -> (index: Int, found: Bool) { byID.sortedPosition(of: id) { $0.id } }

    func plugin(id: String) -> LoadedPlugin? {
        let position = sortedIndex(of: id)
        return position.found ? byID[position.index] : nil
    }

    func register(_ plugin: LoadedPlugin) {
        loads += 1
        plugin.loadNumber = loads
        loaded.append(plugin)
        byID.insert(plugin, at: sortedIndex(of: plugin.id).index)
        if let handle = plugin.owner {
            registerSceneDelegate(plugin, in: handle)
            handle.app.pluginLoaded(plugin.id, isolated: plugin.isIsolated)
        }
    }

    /// Takes `plugin` out of the loaded ones; false when it is not loaded.
    func remove(_ plugin: LoadedPlugin) -> Bool {
        let inLoadOrder = loaded.sortedPosition(of: plugin.loadNumber) { $0.loadNumber }
        guard inLoadOrder.found, loaded[inLoadOrder.index] === plugin else { return false }
        loaded.remove(at: inLoadOrder.index)
        let position = sortedIndex(of: plugin.id)
        if position.found, byID[position.index] === plugin { byID.remove(at: position.index) }
        return true
    }

    /// Keeps an unloaded plugin object alive until the application goes (stale handles stay safe).
    func retire(_ plugin: LoadedPlugin) { retired.append(plugin) }

    /// Unloads the plugins, newest first, before the application goes.
    func shutdown(_ handle: AppHandle) {
        handle.discardPrestarted()
        for plugin in loaded.reversed() { handle.unload(plugin) }
    }
}

extension AppHandle {
    /// This application's plugins, attached on first use.
    var pluginSet: PluginSet {
        if let set = attachment as? PluginSet { return set }
        precondition(attachment == nil, "the application's attachment is not the plugins module's")
        let set = PluginSet()
        attachment = set
        return set
    }

    /// Loaded plugins in load order.
    package var plugins: [LoadedPlugin] { (attachment as? PluginSet)?.loaded ?? [] }

    /// The quotas of the plugins this application loads from now on (in its process and isolated);
    /// a plugin keeps those it was loaded with. [loop-thread]
    package var pluginQuotas: PluginQuotas {
        get { pluginSet.quotas }
        set { pluginSet.quotas = newValue }
    }

    package func plugin(id: String) -> LoadedPlugin? { (attachment as? PluginSet)?.plugin(id: id) }

    /// Deactivates a plugin: its observers, delegate functions, timers and background tasks are
    /// removed, then its deinit runs. The image stays mapped (RTLD_NODELETE).
    package func unload(_ plugin: LoadedPlugin) {
        guard pluginSet.remove(plugin) else { return }
        pluginSet.removeSceneDelegate(plugin, in: self)
        plugin.deactivate(in: self)
    }
}
