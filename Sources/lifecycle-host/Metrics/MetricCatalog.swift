import AppLifecycle

/// Every metric the host exports, with its `# HELP` text: the engine's (`LifecycleMetric`), the
/// host's own, and the standard process metrics (`ProcessMetrics`, named and described as Prometheus'
/// client libraries do). docs/host.md, Metrics, lists the same names with their types, labels and
/// units; a test keeps the two in step.
enum MetricCatalog {
    /// Counter: responses of the metrics port, by `code` (`200`, `400`, `404`, `405`, `408`, `431`, `503`).
    static let httpResponses = "lifecycle_metrics_http_responses_total"
    /// Counter: plugins refused at load, by nothing (the trace says which and why).
    static let pluginsRefused = "lifecycle_plugins_refused_total"
    /// Gauge: plugins loaded now (isolated ones included).
    static let pluginsLoaded = "lifecycle_plugins_loaded"
    /// Gauge: seconds since the host started.
    static let uptime = "lifecycle_uptime_seconds"

    /// Counter: user and system CPU time of the process, seconds.
    static let processCPUSeconds = "process_cpu_seconds_total"
    /// Gauge: resident memory, bytes.
    static let processResidentBytes = "process_resident_memory_bytes"
    /// Gauge: virtual memory, bytes.
    static let processVirtualBytes = "process_virtual_memory_bytes"
    /// Gauge: file descriptors open now.
    static let processOpenFDs = "process_open_fds"
    /// Gauge: the soft limit of open file descriptors (RLIMIT_NOFILE).
    static let processMaxFDs = "process_max_fds"
    /// Gauge: when the process started, seconds since the Unix epoch.
    static let processStartTime = "process_start_time_seconds"

    /// The `code`s of `httpResponses`, each exported from the start (at 0) when the port is open.
    static let httpCodes = ["200", "400", "404", "405", "408", "431", "503"]
    /// The kinds of the host's own trace lines (`LifecycleMetric.events`), each exported from the start.
    static let hostLineKinds = ["plugin", "input", "post", "socket", "error", "warning", "metrics"]

    static let help: [String: String] = [
        LifecycleMetric.events: "Trace lines by kind: the engine's events and the host's own lines (plugin, input, post, socket, error, warning, metrics).",
        LifecycleMetric.watchdogReports: "Watchdog overrun reports by budget (launch, didEnterBackground, willTerminate, completionHandler, backgroundTask, hang, terminate).",
        LifecycleMetric.watchdogKills: "Applications killed by the watchdog under policy terminate, by budget; the process exits right after (see --metrics-file).",
        LifecycleMetric.callbackDuration: "Duration of one callback into a plugin, by plugin id (unknown: a file refused before its id was read) and kind (observer, delegate, other: loading and init among them); observers of posted notifications are sampled.",
        LifecycleMetric.pluginFailures: "Isolated plugins' processes that failed, by plugin and cause (signal, exit, overran, protocol-violation, start-failed, quota).",
        LifecycleMetric.pluginRestarts: "Isolated plugins started again after a failure, by plugin.",
        LifecycleMetric.pluginQuotaRefusals: "Plugins' calls refused at a quota (LC_ERR_QUOTA), by plugin and kind (observers, timers, background-tasks, custom-names).",
        LifecycleMetric.pluginCoalesced: "Notifications an isolated plugin's process fell behind on and that were coalesced away (a later one of the same observer and name delivered instead), by plugin.",
        LifecycleMetric.queueWaiting: "Messages posted from other threads that the main run loop has not taken yet.",
        LifecycleMetric.queueDepthMax: "The most messages one turn of the main run loop took from its cross-thread queue since the start.",
        LifecycleMetric.queueRefused: "Posts from other threads refused at the queue's bound (LC_ERR_QUEUE_FULL).",
        LifecycleMetric.backgroundTasks: "Background tasks open now.",
        LifecycleMetric.state: "1 for the application's state now, 0 for the others, by state.",
        httpResponses: "Responses of the metrics port by status code.",
        pluginsRefused: "Plugins refused when loaded.",
        pluginsLoaded: "Plugins loaded now, isolated ones included.",
        uptime: "Seconds since the host started.",
        // The texts of Prometheus' client libraries (Go's process collector, Python's ProcessCollector).
        processCPUSeconds: "Total user and system CPU time spent in seconds.",
        processResidentBytes: "Resident memory size in bytes.",
        processVirtualBytes: "Virtual memory size in bytes.",
        processOpenFDs: "Number of open file descriptors.",
        processMaxFDs: "Maximum number of open file descriptors.",
        processStartTime: "Start time of the process since unix epoch in seconds.",
    ]
}
