/// The names of the metrics the engine records through swift-metrics (`CoreMetrics`), as a backend
/// receives them in `label`; their dimensions are listed with each. docs/host.md, Metrics, gives
/// their types and units as the host exports them (Prometheus).
///
/// Recorded only when the application has a metrics backend (`Configuration.metricsFactory`, or
/// swift-metrics' `MetricsSystem` bootstrapped with anything but its no-op): see `EngineMetrics`.
public enum LifecycleMetric {
    /// Counter: engine events by `kind` (the trace's kinds: `delegate`, `notification`, `state`, …).
    public static let events = "lifecycle_events_total"
    /// Counter: watchdog overrun reports by `budget` (`launch`, …, `hang`, `terminate`).
    public static let watchdogReports = "lifecycle_watchdog_reports_total"
    /// Counter: applications killed by the watchdog (policy terminate) by `budget`.
    public static let watchdogKills = "lifecycle_watchdog_kills_total"
    /// Timer: how long one callback into a plugin took, by `plugin` (the owner's plugin id — its
    /// loading and `init` too (`Application.runLoading`) —, `unidentifiedPlugin` for a file refused
    /// before its id was read, empty for the host's own) and `kind` (`observer`, `delegate`, `other`:
    /// loading and init, timers, posted work, expiration handlers).
    public static let callbackDuration = "lifecycle_callback_duration_seconds"
    /// Counter: isolated plugins' processes that failed, by `plugin` and `cause` (`signal`, `exit`,
    /// `overran`, `protocol-violation`, `start-failed`, `quota`).
    public static let pluginFailures = "lifecycle_plugin_failures_total"
    /// Counter: isolated plugins started again after a failure, by `plugin`.
    public static let pluginRestarts = "lifecycle_plugin_restarts_total"
    /// Counter: plugins' calls refused at a quota (`LC_ERR_QUOTA`), by `plugin` and `kind` (`observers`,
    /// `timers`, `background-tasks`, `custom-names`).
    public static let pluginQuotaRefusals = "lifecycle_plugin_quota_refusals_total"
    /// Counter: notifications an isolated plugin's process was behind on and that were coalesced away
    /// (a later one of the same observer and name delivered instead), by `plugin`.
    public static let pluginCoalesced = "lifecycle_plugin_coalesced_total"
    /// Gauge: messages posted from other threads waiting for the loop (`MainRunLoop.queueFigures`).
    public static let queueWaiting = "lifecycle_queue_messages_waiting"
    /// Gauge: the most messages one loop turn took from the cross-thread queue.
    public static let queueDepthMax = "lifecycle_queue_depth_max"
    /// Counter: posts from other threads refused at the queue's bound (`LC_ERR_QUEUE_FULL`).
    public static let queueRefused = "lifecycle_queue_refused_total"
    /// Gauge: background tasks open now.
    public static let backgroundTasks = "lifecycle_background_tasks_open"
    /// Gauge: 1 for the application's state now, 0 for the others, by `state`.
    public static let state = "lifecycle_application_state"

    /// The `plugin` label of the loading of a file whose plugin id was never read: refused before its
    /// descriptor was (not a plugin, unsafe permissions, a failing `dlopen`, a bad descriptor), or
    /// whose id is another plugin's. No valid plugin id is a single word, so it names none.
    public static let unidentifiedPlugin = "unknown"
}
