import AppLifecycle
import Logging
import CoreMetrics
import CLifecycleABI
import Glibc
import LifecycleC
import LifecycleRunLoop

/// Scanning plugins before they are loaded in the host's process, as GStreamer's plugin scanner does:
/// the plugin is opened and its init run in a process of its own (`IsolatedPlugin`), within a time
/// budget, then unloaded there. A plugin whose process crashed, exited or overran is remembered in the
/// registry (`PluginScanRegistry`) and refused without running again until its file changes (or
/// `--rescan`); one that scanned clean is remembered too, and not scanned again while its file is
/// unchanged.
package enum PluginScan {
    /// What scanning a plugin found.
    package enum Outcome: Sendable {
        /// It loaded and unloaded cleanly; its id.
        case clean(id: String)
        /// Its process failed while it was opened or initialised: the refusal's words (they name the
        /// signal, status or budget and what it was doing), and the plugin's id when its descriptor
        /// was read (a failure in init).
        case crashed(String, id: String?)
        /// Its process exited while it was opened or initialised — the plugin called `exit()` (or
        /// `_exit()`): the refusal's words (they name the status and what it was doing), and its id.
        case exited(String, id: String?)
        /// It was refused in words (a loader check, a failing init): not remembered, refused as ever.
        case refused(PluginRefusal)
    }

    /// Scans `path` in a process of its own, within `budget` for opening it and running its init.
    /// [loop-thread] of a throwaway application made here on the calling thread.
    package static func scan(_ path: String, budget: Duration, options: PluginLoadOptions = []) -> Outcome {
        switch inspect(path, budget: budget, options: options) {
        case .success(let id): return .clean(id: id)
        case .failure(let error):
            guard let cause = error.processFailure else { return .refused(error) }
            let why = error.reason.hasPrefix("isolated: ") ? String(error.reason.dropFirst(10)) : error.reason
            if case .exited = cause { return .exited(why, id: error.id) }
            return .crashed(why, id: error.id)
        }
    }

    /// Opens `path`, runs its init and unloads it, in a process of its own (the plugin runner), within
    /// `budget` for opening and init. - Returns: the plugin's id, or the refusal — its `stage` says
    /// whether opening or init failed, its `processFailure` how the process ended if it did.
    /// [loop-thread] of a throwaway application made here on the calling thread.
    package static func inspect(_ path: String, budget: Duration, options: PluginLoadOptions = []) -> Result<String, PluginRefusal> {
        let scratch: AppHandle
        // Silent, as its process is (`PluginLoadOptions.silent`): what the plugin logs through the host
        // in this init is seen once, from the load that follows.
        var configuration = Configuration()
        configuration.logger = Logger(label: "lifecycle.scan") { _ in SwiftLogNoOpLogHandler() }
        // Nor in the metrics: the scan is the host's probe, not the application's plugin (its series
        // would otherwise appear under the plugin's id, a failure series for one loaded in-process).
        configuration.metricsFactory = NOOPMetricsHandler.instance
        do { scratch = try AppHandle(configuration: configuration) } catch {
            return .failure(PluginRefusal(path: path, reason: "cannot scan: \(error.message)", status: lc_status(LC_ERR_SYSTEM)))
        }
        defer { scratch.shutdown() }
        var settings = IsolationSettings()
        settings.initBudget = budget
        settings.callBudget = budget
        settings.scanOnly = true
        settings.loadOptions = options.union(.silent)
        do {
            let plugin = try scratch.loadIsolatedPlugin(path: path, settings: settings)
            scratch.unload(plugin)
            return .success(plugin.id)
        } catch {
            return .failure(error)
        }
    }
}
