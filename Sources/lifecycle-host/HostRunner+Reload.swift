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
            let plugin = try handle.reloadPlugin(id: id, path: path, force: force, loading: options.pluginLoading,
                                                 vet: { scanner.check($0) })
            EmergencyExit.addPluginImage(id: plugin.id, ranges: plugin.imageRanges)
            hostLine("plugin", "reloaded", plugin: plugin.id, detail: "\(plugin.version) \(plugin.path)")
            if let pluginWatch, path != nil, let problem = pluginWatch.watch(plugin.path, id: plugin.id) {
                hostLine("error", "watch", plugin: plugin.id, detail: problem)
            }
            return nil
        } catch {
            return error.message
        }
    }

    /// `--watch`: watches every plugin file loaded; a change that settled is reloaded as `reload ID`
    /// from the origin `watch PATH changed`. A file that cannot be watched is an error line; the run
    /// goes on. [loop-thread]
    func watchPlugins(_ handle: AppHandle) {
        let watch = PluginWatch(loop: handle.loop) { [unowned self] id, path in
            perform(.reload(id: id, path: nil, force: false), origin: .watch(path: path))
        }
        pluginWatch = watch
        for plugin in handle.plugins {
            if let problem = watch.watch(plugin.path, id: plugin.id) { hostLine("error", "watch", plugin: plugin.id, detail: problem) }
        }
    }
}
