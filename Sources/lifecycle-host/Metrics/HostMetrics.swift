import AppLifecycle
import CoreMetrics
import HostInput
@preconcurrency import Glibc
import Synchronization

/// `--metrics`, `--metrics-file`, `--metrics-interval` as checked values.
struct MetricsSettings: Equatable {
    /// The default interval between writes of the metrics file.
    static let defaultInterval: Duration = .seconds(10)

    /// Where the HTTP port listens; nil: no port.
    var address: MetricsAddress?
    /// The file written at the end of the run and every `interval`; nil: none.
    var file: String?
    var interval: Duration = Self.defaultInterval

    /// Metrics are recorded only when asked for.
    var isEnabled: Bool { address != nil || file != nil }
}

/// The host's metrics: the Prometheus backend the engine records into (handed to it as
/// `Configuration.metricsFactory`, and bootstrapped as swift-metrics' `MetricsSystem` for the
/// process), the host's own counters, the process metrics (`ProcessMetrics`), and the exports — the
/// HTTP port and the file. Every counter of the host's is exported from the start, at 0: trace lines
/// of each host kind, refused plugins, and — once the port is open — responses of each code.
///
/// **The file** is written whole to a temporary file beside it and renamed over it (a reader never
/// sees half a file): every `interval` while the run lasts, when the run ends, and — best effort,
/// from the exiting thread — when the process ends from the watchdog or an intercepted `exit()`
/// (statuses 4–6), so that a watchdog kill is in it. SIGUSR1 is not used: it is the host's memory
/// warning.
///
/// [loop-thread] except `lastWrite` (any thread).
final class HostMetrics {
    /// The process's backend: swift-metrics' `MetricsSystem` may be bootstrapped once only.
    private static let bootstrapped = Mutex(false)

    let registry = PrometheusRegistry()
    let settings: MetricsSettings
    private var server: MetricsServer?
    private var fileTimer: LoopSource?
    private var updateGauges: () -> Void = {}
    private var lines: [String: Counter] = [:]
    private var responses: [String: Counter] = [:]
    private let refused: Counter
    private let loaded: Gauge
    private let uptime: Gauge
    private let started = MonotonicInstant.now
    private let process: ProcessMetrics

    init(settings: MetricsSettings) {
        self.settings = settings
        refused = Counter(label: MetricCatalog.pluginsRefused, factory: registry)
        loaded = Gauge(label: MetricCatalog.pluginsLoaded, factory: registry)
        uptime = Gauge(label: MetricCatalog.uptime, factory: registry)
        process = ProcessMetrics(registry: registry)
        for kind in MetricCatalog.hostLineKinds {
            lines[kind] = Counter(label: LifecycleMetric.events, dimensions: [("kind", kind)], factory: registry)
        }
        let registry = self.registry
        let first = Self.bootstrapped.withLock { done in
            defer { done = true }
            return !done
        }
        if first { MetricsSystem.bootstrap(registry) }
    }

    /// Opens the port, starts the file's timer. `update` sets the gauges read on demand (the engine's
    /// and the plugin count) before each export; `log` writes a host line (`metrics`, `error`).
    /// [loop-thread]
    func start(loop: MainRunLoop, update: @escaping () -> Void, log: @escaping (_ kind: String, _ name: String, _ detail: String) -> Void) {
        updateGauges = update
        if let address = settings.address {
            do {
                let server = try MetricsServer(address: address, loop: loop, render: { [unowned self] in exposition() },
                                               answered: { [unowned self] code in responded(code) })
                self.server = server
                for code in MetricCatalog.httpCodes {
                    responses[code] = Counter(label: MetricCatalog.httpResponses, dimensions: [("code", code)], factory: registry)
                }
                log("metrics", "http://\(server.address)/metrics", "Prometheus text exposition (GET /metrics)")
            } catch {
                log("error", "metrics", error.message)
            }
        }
        if let file = settings.file {
            let registry = registry
            EmergencyExit.setLastWrite { _ = Self.write(registry.render(), to: file) }
            fileTimer = loop.addRealTimeTimer(after: settings.interval, repeating: settings.interval) { [unowned self] in
                if let problem = writeFile() { log("error", "metrics", problem) }
            }
            log("metrics", file, "written every \(formatDuration(settings.interval)) and at the end")
        }
    }

    /// The run ends: the last file, the port closed. Returns the file's problem, if any. [loop-thread]
    func finish() -> String? {
        fileTimer?.cancel()
        fileTimer = nil
        server?.close()
        server = nil
        guard settings.file != nil else { return nil }
        EmergencyExit.setLastWrite(nil)
        return writeFile()
    }

    /// The exposition now, the gauges and the process metrics read first. [loop-thread]
    func exposition() -> String {
        updateGauges()
        process.update()
        uptime.record(MonotonicInstant.now.duration(since: started).secondsDouble)
        return registry.render()
    }

    /// A line of the host's own trace, counted by kind with the engine's events.
    func hostLine(kind: String) {
        if let counter = lines[kind] { return counter.increment() }
        let counter = Counter(label: LifecycleMetric.events, dimensions: [("kind", kind)], factory: registry)
        lines[kind] = counter
        counter.increment()
    }

    func pluginRefused() { refused.increment() }

    func pluginsLoaded(_ count: Int) { loaded.record(count) }

    private func responded(_ code: String) {
        if let counter = responses[code] { return counter.increment() }
        let counter = Counter(label: MetricCatalog.httpResponses, dimensions: [("code", code)], factory: registry)
        responses[code] = counter
        counter.increment()
    }

    /// Writes the file now; the problem in words, or nil.
    private func writeFile() -> String? {
        guard let file = settings.file else { return nil }
        return Self.write(exposition(), to: file) ? nil : "cannot write \(file): \(String(cString: strerror(errno)))"
    }

    /// `text` to `path` through a temporary file in the same folder, renamed over it. [thread-safe]
    static func write(_ text: String, to path: String) -> Bool {
        let temporary = "\(path).tmp-\(getpid())"
        guard lifecycle_host.writeFile(temporary, text) else {
            let code = errno
            _ = unlink(temporary)
            errno = code
            return false
        }
        guard rename(temporary, path) == 0 else {
            let code = errno
            _ = unlink(temporary)
            errno = code
            return false
        }
        return true
    }
}
