import CLifecycleSystem
import CoreMetrics

/// The engine's metrics hook: the counters, timers and gauges of `LifecycleMetric`, recorded through
/// swift-metrics' API with the application's factory.
///
/// An application has one only when a backend is there (`Configuration.metricsFactory`, else
/// `MetricsSystem.factory` unless it is swift-metrics' `NOOPMetricsHandler`); without one the engine
/// holds nil and every place that records tests that optional and nothing else.
///
/// What is recorded where, and what it costs:
/// - **Events** by kind: in `Application.trace`, once per trace event (not per post: a post is no
///   trace event).
/// - **Watchdog** reports and kills: in `KillSwitch`, on the thread that noticed (the counters are
///   made up front, one per budget, so that thread only reads this object).
/// - **Callback durations**: where the engine already stands at each callback. A marked callback
///   (`AppNotificationCenter.runMarked`: delegate methods, plugins' `init`, timers, posted work,
///   expiration handlers) gets two clock reads around it. Observers are timed in the center's
///   general dispatch loop, which a post takes when `observerWillRun` is set: for every lifecycle
///   notification the engine delivers, and for **sampled** posts — at most one outermost dispatch
///   per `sampleInterval` (the center's fast path, a post without userInfo to C observers, is not
///   touched: its cost is the same with metrics on or off, and a sample costs the general loop once).
///   Sampling needs no wake-up of an idle loop: the next sample is armed `sampleInterval` after the
///   last one was taken, and stays armed until a dispatch takes it.
/// - **Plugin failures and restarts**: from the trace events of isolated plugins.
/// - **Quota refusals**: from the `quota` trace events, each counted for the calls it stands for.
/// - **Coalesced deliveries** of isolated plugins that fell behind: from the `plugin-backlog` events.
/// - **Gauges** (queue figures, open background tasks, state): read when the embedder asks
///   (`Application.updateMetricGauges()`), before an export.
///
/// Series at 0 from the start, so that a dashboard tells "none yet" from "not exported": events of
/// every engine kind (`TraceEvent.Kind.engineKinds`) and watchdog reports and kills of every budget
/// when the application is made; a plugin's quota refusals of every kind — and, isolated, its
/// failures of every cause, its restarts and its coalesced deliveries — when it is loaded
/// (`pluginLoaded`). Per-plugin series are labelled with the plugin's id; a plugin's loading
/// (`Application.runLoading`) is timed under its id once the loader read it, else under
/// `LifecycleMetric.unidentifiedPlugin`.
///
/// [loop-thread] except the watchdog counters ([thread-safe]).
final class EngineMetrics: @unchecked Sendable {
    // @unchecked: the dictionaries and arrays are loop-thread state; the watchdog counters are
    // immutable after init and swift-metrics handlers are thread-safe.

    /// How often a post's observers are timed, at most.
    static let sampleInterval: Duration = .milliseconds(100)
    /// The sampled dispatch's per-observer hook: it lets every observer run (the timing is the center's).
    static func sampleHook(_ owner: String) -> Bool { true }

    let factory: MetricsFactory
    private unowned let center: AppNotificationCenter
    private let loop: MainRunLoop
    private let reports: [WatchdogReport.Budget: Counter]
    private let kills: [WatchdogReport.Budget: Counter]
    private var events: [String: Counter] = [:]
    private var failures: [String: Counter] = [:]
    private var restarts: [String: Counter] = [:]
    private var quotaRefusals: [String: Counter] = [:]
    private var coalesced: [String: Counter] = [:]
    /// By probe kind (observer, delegate, other), then by owner index in the center.
    private var timers: [[CoreMetrics.Timer?]] = [[], [], []]
    private let queueWaiting: Gauge
    private let queueDepthMax: Gauge
    private let queueRefused: Counter
    private var refusedSeen: UInt64 = 0
    private let backgroundTasks: Gauge
    private let states: [(ApplicationState, Gauge)]
    /// A sampled dispatch is armed: the center's `observerWillRun` is `sampleHook` until an outermost
    /// dispatch in the general loop ends (`sampleTaken`).
    var sampleArmed = false
    private var sampleTimer: LoopSource?
    /// A plugin's loading under way (`Application.runLoading`): the owner index of its path in the
    /// center, and its id once the loader read the descriptor (`loadingIdentified`).
    private var loading: (owner: UInt32, id: String?)?

    /// The metrics for an application of `configuration`, or nil when there is no backend.
    static func make(_ configuration: Configuration, center: AppNotificationCenter, loop: MainRunLoop) -> EngineMetrics? {
        let factory = configuration.metricsFactory ?? MetricsSystem.factory
        if factory is NOOPMetricsHandler { return nil }
        return EngineMetrics(factory: factory, center: center, loop: loop)
    }

    private init(factory: MetricsFactory, center: AppNotificationCenter, loop: MainRunLoop) {
        self.factory = factory
        self.center = center
        self.loop = loop
        var reports: [WatchdogReport.Budget: Counter] = [:]
        var kills: [WatchdogReport.Budget: Counter] = [:]
        for budget in WatchdogReport.Budget.allCases {
            reports[budget] = Counter(label: LifecycleMetric.watchdogReports, dimensions: [("budget", budget.rawValue)], factory: factory)
            kills[budget] = Counter(label: LifecycleMetric.watchdogKills, dimensions: [("budget", budget.rawValue)], factory: factory)
        }
        self.reports = reports
        self.kills = kills
        queueWaiting = Gauge(label: LifecycleMetric.queueWaiting, factory: factory)
        queueDepthMax = Gauge(label: LifecycleMetric.queueDepthMax, factory: factory)
        queueRefused = Counter(label: LifecycleMetric.queueRefused, factory: factory)
        backgroundTasks = Gauge(label: LifecycleMetric.backgroundTasks, factory: factory)
        states = ApplicationState.allCases.map { ($0, Gauge(label: LifecycleMetric.state, dimensions: [("state", $0.rawValue)], factory: factory)) }
        for kind in TraceEvent.Kind.engineKinds { _ = counter(&events, kind.rawValue, LifecycleMetric.events, [("kind", kind.rawValue)]) }
        scheduleSample()
    }

    /// Stops sampling (the application goes). [loop-thread]
    func stop() {
        sampleTimer?.cancel()
        sampleTimer = nil
    }

    // MARK: Recording

    /// One trace event. [loop-thread]
    func traced(_ event: TraceEvent) {
        counter(&events, event.kind.rawValue, LifecycleMetric.events, [("kind", event.kind.rawValue)]).increment()
        switch event.payload {
        case .pluginFailed(let failure):
            let cause = Self.causeLabel(failure.cause)
            counter(&failures, failure.plugin + "\u{0}" + cause, LifecycleMetric.pluginFailures,
                    [("plugin", failure.plugin), ("cause", cause)]).increment()
        case .pluginRestarted(let plugin, _, _):
            counter(&restarts, plugin, LifecycleMetric.pluginRestarts, [("plugin", plugin)]).increment()
        case .quotaRefused(let refusal):
            // One event may stand for many refused calls (`QuotaRefusal.refused`): each is counted.
            counter(&quotaRefusals, refusal.plugin + "\u{0}" + refusal.kind.rawValue, LifecycleMetric.pluginQuotaRefusals,
                    [("plugin", refusal.plugin), ("kind", refusal.kind.rawValue)]).increment(by: Int64(refusal.refused))
        case .pluginBacklog(let plugin, let backlog):
            // Counted when it caught up, for every notification coalesced away meanwhile.
            guard backlog.coalesced > 0 else { break }
            counter(&coalesced, plugin, LifecycleMetric.pluginCoalesced, [("plugin", plugin)]).increment(by: Int64(backlog.coalesced))
        default:
            break
        }
    }

    /// The plugin `id` was loaded (`isolated`: in a process of its own): its counters are exported at
    /// 0 from now on — quota refusals of every kind; isolated, failures of every cause, restarts and
    /// coalesced deliveries (only an isolated plugin has those). Idempotent. [loop-thread]
    func pluginLoaded(_ id: String, isolated: Bool) {
        for kind in QuotaKind.allCases {
            _ = counter(&quotaRefusals, id + "\u{0}" + kind.rawValue, LifecycleMetric.pluginQuotaRefusals, [("plugin", id), ("kind", kind.rawValue)])
        }
        guard isolated else { return }
        for cause in Self.causeLabels {
            _ = counter(&failures, id + "\u{0}" + cause, LifecycleMetric.pluginFailures, [("plugin", id), ("cause", cause)])
        }
        _ = counter(&restarts, id, LifecycleMetric.pluginRestarts, [("plugin", id)])
        _ = counter(&coalesced, id, LifecycleMetric.pluginCoalesced, [("plugin", id)])
    }

    /// A plugin's loading begins, marked as a callback of the owner at `owner` (its path); returns the
    /// loading it is nested in, if any, for `loadingEnded`. [loop-thread]
    func loadingBegan(owner: UInt32) -> (owner: UInt32, id: String?)? {
        defer { loading = (owner, nil) }
        return loading
    }

    /// The plugin being loaded has id `id` (its descriptor was read; the id is not another's). [loop-thread]
    func loadingIdentified(_ id: String) { loading?.id = id }

    /// The loading ended (loaded or refused): the one it was nested in, if any, goes on. [loop-thread]
    func loadingEnded(restoring outer: (owner: UInt32, id: String?)??) { loading = outer ?? nil }

    /// A watchdog overrun report; `killed`: the policy kills the application. [thread-safe]
    func watchdog(_ report: WatchdogReport, killed: Bool) {
        reports[report.budgetKind]?.increment()
        if killed { kills[report.budgetKind]?.increment() }
    }

    /// A callback marked `bits` (`CallbackProbe.bits`) of the owner at `owner` in the center ran from
    /// `start` (`lcs_monotonic_ns`) until now. [loop-thread]
    func callbackEnded(_ bits: UInt64, owner: UInt32, since start: UInt64) {
        let elapsed = lcs_monotonic_ns() &- start
        let kind = min(Int((bits >> 60) & 3), 2)
        if let loading, loading.owner == owner {
            // A plugin's loading: its path is the probe's owner, its id (if read by now) the label.
            let plugin = loading.id ?? LifecycleMetric.unidentifiedPlugin
            return CoreMetrics.Timer(label: LifecycleMetric.callbackDuration, dimensions: [("plugin", plugin), ("kind", Self.kindNames[kind])],
                                     factory: factory).recordNanoseconds(Int64(clamping: elapsed))
        }
        timer(kind: kind, owner: owner).recordNanoseconds(Int64(clamping: elapsed))
    }

    /// Sets the gauges from what they measure now. [loop-thread]
    func updateGauges(_ application: Application) {
        let figures = loop.queueFigures()
        queueWaiting.record(figures.waiting)
        queueDepthMax.record(figures.largestTake)
        if figures.refused > refusedSeen {
            queueRefused.increment(by: Int64(clamping: figures.refused - refusedSeen))
            refusedSeen = figures.refused
        }
        backgroundTasks.record(application.tasks.count)
        for (state, gauge) in states { gauge.record(state == application.state ? 1 : 0) }
    }

    // MARK: Sampling posts

    /// Arms a sampled dispatch `sampleInterval` from now. [loop-thread]
    func scheduleSample() {
        sampleTimer = loop.addRealTimeTimer(after: Self.sampleInterval) { [weak self] in self?.armSample() }
    }

    private func armSample() {
        sampleTimer = nil
        // A lifecycle delivery under way has its own hook (and times its observers): try later.
        guard center.observerWillRun == nil else { return scheduleSample() }
        sampleArmed = true
        center.observerWillRun = Self.sampleHook
    }

    /// The hook the center keeps between dispatches: the sample's while one is armed, else none.
    var idleHook: ((String) -> Bool)? {
        guard sampleArmed else { return nil }
        return Self.sampleHook
    }

    // MARK: Handles

    private func counter(_ table: inout [String: Counter], _ key: String, _ label: String, _ dimensions: [(String, String)]) -> Counter {
        if let counter = table[key] { return counter }
        let counter = Counter(label: label, dimensions: dimensions, factory: factory)
        table[key] = counter
        return counter
    }

    private func timer(kind: Int, owner: UInt32) -> CoreMetrics.Timer {
        let index = Int(owner)
        if index < timers[kind].count, let timer = timers[kind][index] { return timer }
        if index >= timers[kind].count { timers[kind] += Array(repeating: nil, count: index + 1 - timers[kind].count) }
        let name = center.ownerName(owner)
        let timer = CoreMetrics.Timer(label: LifecycleMetric.callbackDuration, dimensions: [("plugin", name), ("kind", Self.kindNames[kind])],
                                      factory: factory)
        timers[kind][index] = timer
        return timer
    }

    /// The `kind` dimension of a callback's duration, by probe kind.
    static let kindNames = ["observer", "delegate", "other"]

    /// Every `cause` dimension `causeLabel` gives, in the order of `PluginFailure.Cause`.
    static let causeLabels = ["signal", "exit", "overran", "protocol-violation", "start-failed", "quota"]

    /// The `cause` dimension of a failure: one word a kind, never the words of the failure.
    static func causeLabel(_ cause: PluginFailure.Cause) -> String {
        switch cause {
        case .signal: "signal"
        case .exited: "exit"
        case .overran: "overran"
        case .protocolViolation: "protocol-violation"
        case .startFailed: "start-failed"
        case .quotaExceeded: "quota"
        }
    }
}
