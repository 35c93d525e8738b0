import AppLifecycle
import CLifecycleABI
import LifecycleC

extension AppHandle {
    /// The new instance of an isolated plugin being reloaded (`reloadPlugin`): a new runner process
    /// started on `path` with the old one's settings, which has described the plugin; its `init` runs
    /// there, and registers here, when the candidate is initialised; the old runner is stopped only
    /// after that, when the old instance is unloaded. [loop-thread]
    func isolatedCandidate(replacing old: IsolatedPlugin, path: String) throws(PluginRefusal) -> ReloadCandidate {
        let settings = old.settings
        let started = try IsolatedPlugin.launch(path: path, settings: settings)
        return ReloadCandidate(
            id: started.id,
            initialise: { () throws(PluginRefusal) in
                let plugin = LoadedPlugin(isolated: started.id, version: started.version, summary: started.summary, path: path,
                                          abiMajor: started.abiMajor, abiMinor: started.abiMinor, owner: self)
                let proxy = IsolatedPlugin(plugin: plugin, handle: self, settings: settings, process: started.process)
                plugin.isolation = proxy
                if let refusal = proxy.initialise(registeringDelegate: false) {
                    self.pluginSet.retire(plugin)
                    throw refusal
                }
                return plugin
            },
            delegate: { new in
                guard let proxy = new.isolation, !new.implementedRows.isEmpty else { return nil }
                return proxy.makeHandlers(new.implementedRows)
            },
            discard: { reason in IsolatedPlugin.dismiss(started.process, reason) })
    }
}
