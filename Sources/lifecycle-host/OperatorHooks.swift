import AppLifecycle
import LifecycleC

/// What `run` does for the people who operate it, in one place: the metrics (`HostMetrics`:
/// `--metrics`, `--metrics-file`) and systemd's notifications (`SystemdNotifier`, when
/// `NOTIFY_SOCKET` is set). The runner calls these at its few moments; each is a no-op for what
/// was not asked. [loop-thread]
final class OperatorHooks {
    let metrics: HostMetrics?
    let systemd: SystemdNotifier?

    /// Reads the environment (`NOTIFY_SOCKET`, …) and makes the metrics backend. Call before the
    /// application exists: the engine gets the backend through `configuration`.
    init(settings: MetricsSettings, configuration: inout Configuration, problem: (String) -> Void) {
        systemd = SystemdNotifier.fromEnvironment(problem: problem)
        metrics = settings.isEnabled ? HostMetrics(settings: settings) : nil
        if let metrics { configuration.metricsFactory = metrics.registry }
    }

    /// The loop runs: the port opens, the file's timer and the watchdog keep-alive start.
    func started(_ handle: AppHandle, log: @escaping (_ kind: String, _ name: String, _ detail: String) -> Void) {
        systemd?.start(loop: handle.loop)
        metrics?.start(loop: handle.loop, update: { [unowned handle, unowned self] in
            handle.app.updateMetricGauges()
            metrics?.pluginsLoaded(handle.plugins.count)
        }, log: log)
    }

    /// After each command: `READY=1` once the application runs.
    func performed(_ state: ApplicationState) { systemd?.applicationRan(state) }

    /// A host line of the trace (counted by kind).
    func hostLine(kind: String) { metrics?.hostLine(kind: kind) }

    func pluginRefused() { metrics?.pluginRefused() }

    /// The run begins to end (SIGTERM, or the end of the run).
    func stopping() { systemd?.stopping() }

    /// The run has ended: `STOPPING=1` (if not sent yet), the metrics file written, the port closed.
    /// Returns a problem in words, if the file could not be written.
    func finish() -> String? {
        systemd?.stopping()
        return metrics?.finish()
    }
}
