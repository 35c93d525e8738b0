import AppLifecycle
import LifecycleC
import PluginHost

extension HostRunner {
    /// `reload ID [PATH] [--force]`: replaces the plugin in place (`AppHandle.reloadPlugin`); on
    /// success a `plugin reloaded [id] (version path)` line follows the engine's `plugin-reload end`.
    /// The new file is scanned first (`PluginScanner`, the registry consulted), as every file the host
    /// loads in its process. [loop-thread]
    /// - Returns: why it failed (the old instance runs on), or nil.
    func reload(_ id: String, path: String?, force: Bool, in handle: AppHandle) -> String? {
        var scanner = PluginScanner(rescan: false, budget: options.scanBudget, options: options.pluginLoading)
        defer { if let problem = scanner.save() { hostLine("error", "plugin registry", detail: problem) } }
        do throws(PluginReloadFailure) {
            let plugin = try handle.reloadPlugin(id: id, path: path, options: force ? PluginReloadOptions.force : [], loading: options.pluginLoading,
                                                 vet: { scanner.check($0) })
            EmergencyExit.addPluginImage(id: plugin.id, ranges: plugin.imageRanges)
            hostLine("plugin", "reloaded", plugin: plugin.id, detail: "\(plugin.version) \(plugin.path)")
            return nil
        } catch {
            return error.message
        }
    }
}
