import AppLifecycle
import Glibc
import LifecycleC

// A plugin's scene delegate functions (ABI 1.2): bound through the C layer's one bridge from the same
// source as its application delegate functions — the 1.1 table its init registered (its 1.2 fields), or
// its exported `scene…` symbols — and registered as a scene delegate under the plugin's id when the
// plugin is registered (after its application delegate), removed when it is unloaded.

extension PluginSet {
    /// Binds and registers `plugin`'s scene delegate functions, if it has any. [loop-thread]
    func registerSceneDelegate(_ plugin: LoadedPlugin, in handle: AppHandle) {
        guard let bound = plugin.bindSceneDelegates(), !bound.rows.isEmpty else { return }
        do {
            try handle.app.addSceneDelegate(bound.handlers, id: plugin.id)
            sceneRows[plugin.id] = bound.rows
        } catch {
            // Only a scene delegate the host program added under the plugin's id can be in the way.
            handle.app.configuration.logger.warning("plugin '\(plugin.id)': its scene delegate functions are not registered: \(error.message)")
        }
    }

    /// Removes `plugin`'s scene delegate, if it registered one. [loop-thread]
    func removeSceneDelegate(_ plugin: LoadedPlugin, in handle: AppHandle) {
        guard sceneRows.removeValue(forKey: plugin.id) != nil else { return }
        handle.app.removeSceneDelegate(id: plugin.id)
    }
}

extension LoadedPlugin {
    /// Binds the plugin's scene delegate functions: its 1.1 table's 1.2 fields, else its exported
    /// `scene…` symbols; for an isolated plugin, handlers that cross to its process (the rows it
    /// reported). Returns immediately; nothing is called. Nil when it has none (no handler table is built).
    func bindSceneDelegates() -> (handlers: SceneDelegateHandlers, rows: FFIDelegates.Rows)? {
        if let isolation {
            guard !isolatedSceneRows.isEmpty else { return nil }
            return (isolation.makeSceneHandlers(isolatedSceneRows), isolatedSceneRows)
        }
        if let table = delegateTable {
            return table.withUnsafeBufferPointer { FFIDelegates.bindScenes(addresses: $0, convention: .pluginTable(self)) }
        }
        guard let image else { return nil }
        return FFIDelegates.bindScenes(symbols: { image.symbol($0, length: $1) }, app: owner?.opaque, owner: self, id: id)
    }

    /// The scene delegate methods the plugin implements (ABI 1.2), in `DelegateMethod.sceneMethods` order.
    package var implementedSceneMethods: [DelegateMethod] {
        guard isActive, let set = owner?.attachment as? PluginSet else { return [] }
        return set.sceneRows[id]?.methods ?? []
    }
}
