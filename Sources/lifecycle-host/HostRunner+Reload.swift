import AppLifecycle
import LifecycleC
import PluginHost

extension HostRunner {
    /// `reload ID [PATH] [--force]`: replaces the plugin in place (`AppHandle.reloadPlugin`); on
    /// success a `plugin reloaded [id] (version path)` line follows the engine's `plugin-reload end`.
    /// [loop-thread]
    /// - Returns: why it failed (the old instance runs on), or nil.
    func reload(_ id: String, path: String?, force: Bool, in handle: AppHandle) -> String? {
        do throws(PluginReloadFailure) {
            let plugin = try handle.reloadPlugin(id: id, path: path, options: force ? PluginReloadOptions.force : [], loading: options.pluginLoading)
            EmergencyExit.addPluginImage(id: plugin.id, ranges: plugin.imageRanges)
            hostLine("plugin", "reloaded", plugin: plugin.id, detail: "\(plugin.version) \(plugin.path)")
            return nil
        } catch {
            return error.message
        }
    }
}
