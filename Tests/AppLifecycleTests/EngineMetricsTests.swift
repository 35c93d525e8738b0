import CoreMetrics
import Foundation
import MetricsTestKit
import XCTest
@testable import AppLifecycle

/// The engine's metrics (`LifecycleMetric`) through swift-metrics, with MetricsTestKit's factory as
/// the backend: what is counted, timed and sampled, and that nothing is held without a backend.
final class EngineMetricsTests: XCTestCase {
    private func harness(_ metrics: TestMetrics, _ configure: (inout Configuration) -> Void = { _ in }) throws -> Harness {
        try Harness({
            $0.metricsFactory = metrics
            configure(&$0)
        })
    }

    func testWithoutABackendTheApplicationHoldsNoMetrics() throws {
        // Nothing bootstrapped in this process: MetricsSystem.factory is swift-metrics' no-op.
        XCTAssertTrue(MetricsSystem.factory is NOOPMetricsHandler)
        let plain = try Harness()
        XCTAssertNil(plain.app.metrics)
        XCTAssertNil(plain.app.center.state.pointee.metrics)
        let noop = try Harness { $0.metricsFactory = NOOPMetricsHandler.instance }
        XCTAssertNil(noop.app.metrics)
        try plain.launch()
        plain.app.updateMetricGauges()  // does nothing, and does not fail
        XCTAssertNil(plain.app.center.observerWillRun, "no sampling hook without metrics")
    }

    func testEveryTraceEventIsCountedByItsKind() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        try h.launch()
        try h.perform(.home)
        try h.perform(.foreground)
        var expected: [String: Int64] = [:]
        for event in h.fullTrace { expected[event.kind.rawValue, default: 0] += 1 }
        XCTAssertEqual(Set(expected.keys), ["action", "state", "delegate", "notification"])
        for (kind, count) in expected {
            XCTAssertEqual(metrics.counterTotal(label: "lifecycle_events_total", dimensions: [("kind", kind)]), count, kind)
        }
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_events_total"), Int64(h.fullTrace.count))
    }

    func testDelegateCallsAndLifecycleObserversAreTimedPerPlugin() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        h.hooks["a applicationDidBecomeActive:"] = { _ in usleep(30_000) }
        h.app.center.observe(.didBecomeActive, owner: "com.example.slow") { _ in usleep(20_000) }
        try h.launch()
        let delegate = try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "a"), ("kind", "delegate")])
        // willFinishLaunching, didFinishLaunching, didBecomeActive: one value each.
        XCTAssertEqual(delegate.values.count, 3)
        XCTAssertGreaterThanOrEqual(delegate.values.max() ?? 0, 30_000_000)
        let slow = try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "com.example.slow"), ("kind", "observer")])
        XCTAssertEqual(slow.values.count, 1)
        XCTAssertGreaterThanOrEqual(slow.values[0], 20_000_000)
        XCTAssertLessThan(slow.values[0], 2_000_000_000)
        // The harness's observer of every standard name: one value per lifecycle notification delivered.
        let delivered = h.fullTrace.filter { $0.kind == .notification }.count
        let observer = try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "observer"), ("kind", "observer")])
        XCTAssertEqual(observer.values.count, delivered)
        // The lifecycle delivery left no hook behind: the next post takes the fast path (until a sample).
        XCTAssertNil(h.app.center.observerWillRun)
    }

    func testCoalescedNotificationsOfAPluginThatFellBehindAreCounted() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        h.app.record(.pluginBacklog(plugin: "com.example.slow", .behind(waiting: 2 << 20, oldest: .milliseconds(3))))
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_plugin_coalesced_total"), 0, "nothing coalesced yet")
        h.app.record(.pluginBacklog(plugin: "com.example.slow", .caughtUp(held: 1_000, delivered: 3, lasted: .seconds(2))))
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_plugin_coalesced_total", dimensions: [("plugin", "com.example.slow")]), 997)
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_events_total", dimensions: [("kind", "plugin-backlog")]), 2)
    }

    func testMarkedCallbacksAreTimedAsOther() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        h.app.runMarked("init", owner: "/p/libx.so") { _ = usleep(10_000) }
        let timer = try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "/p/libx.so"), ("kind", "other")])
        XCTAssertEqual(timer.values.count, 1)
        XCTAssertGreaterThanOrEqual(timer.values[0], 10_000_000)
    }

    /// A plugin's loading is marked under its path (the watchdog names it) and timed under the id the
    /// loader tells, or `unknown` when it told none; a loading nested in another leaves the outer one's.
    func testALoadingIsTimedUnderTheIdTheLoaderTold() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        h.app.runLoading(path: "/p/liba.so") {
            XCTAssertEqual(h.app.runningCallbacks?.innermost.owner, "/p/liba.so")
            h.app.runLoading(path: "/p/libb.so") {}
            h.app.identifyLoading("com.example.a")
        }
        h.app.runLoading(path: "/p/libc.so") {}
        XCTAssertEqual(try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "com.example.a"), ("kind", "other")]).values.count, 1)
        XCTAssertEqual(try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "unknown"), ("kind", "other")]).values.count, 2,
                       "libb (nested, never identified) and libc")
        XCTAssertThrowsError(try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "/p/liba.so"), ("kind", "other")]))
        h.app.identifyLoading("com.example.late")  // outside a loading: nothing
        XCTAssertThrowsError(try metrics.expectTimer("lifecycle_callback_duration_seconds", [("plugin", "com.example.late"), ("kind", "other")]))
    }

    /// Counters are there at 0 before anything is counted: events of every engine kind at once, a
    /// plugin's quota refusals when it is loaded, and an isolated one's failures, restarts and
    /// coalesced deliveries.
    func testCountersAreThereAtZeroFromTheStart() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        for kind in TraceEvent.Kind.engineKinds {
            XCTAssertEqual(try metrics.expectCounter("lifecycle_events_total", [("kind", kind.rawValue)]).totalValue, 0, kind.rawValue)
        }
        h.app.pluginLoaded("com.example.here", isolated: false)
        h.app.pluginLoaded("com.example.away", isolated: true)
        for kind in QuotaKind.allCases {
            for plugin in ["com.example.here", "com.example.away"] {
                XCTAssertEqual(try metrics.expectCounter("lifecycle_plugin_quota_refusals_total", [("plugin", plugin), ("kind", kind.rawValue)]).totalValue, 0)
            }
        }
        for cause in EngineMetrics.causeLabels {
            XCTAssertEqual(try metrics.expectCounter("lifecycle_plugin_failures_total", [("plugin", "com.example.away"), ("cause", cause)]).totalValue, 0)
            XCTAssertThrowsError(try metrics.expectCounter("lifecycle_plugin_failures_total", [("plugin", "com.example.here"), ("cause", cause)]))
        }
        XCTAssertEqual(try metrics.expectCounter("lifecycle_plugin_restarts_total", [("plugin", "com.example.away")]).totalValue, 0)
        XCTAssertEqual(try metrics.expectCounter("lifecycle_plugin_coalesced_total", [("plugin", "com.example.away")]).totalValue, 0)
        // Every cause the label function gives is one of them.
        let causes: [PluginFailure.Cause] = [.signal(11), .exited(1), .overran(budgetName: "hang", budget: .seconds(1)), .protocolViolation("x"),
                                             .startFailed("x"), .quotaExceeded(.timers, limit: 1, refusals: 1, window: .seconds(1))]
        XCTAssertEqual(causes.map(EngineMetrics.causeLabel), EngineMetrics.causeLabels)
    }

    func testPostedNotificationsAreSampledAtMostOnceAnInterval() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        try h.launch()
        let name = try NotificationName("com.example.tick")
        var calls = 0
        h.app.center.observe(name, owner: "com.example.ticker") { _ in calls += 1 }
        func timed() -> Int {
            metrics.timers(label: "lifecycle_callback_duration_seconds", dimensions: [("plugin", "com.example.ticker"), ("kind", "observer")])
                .first?.values.count ?? 0
        }
        // Before the first interval has passed nothing is armed: posts are not timed.
        h.app.center.post(name)
        XCTAssertEqual(timed(), 0)
        try h.loop.run(for: EngineMetrics.sampleInterval + .milliseconds(50))
        XCTAssertNotNil(h.app.center.observerWillRun, "a sample is armed")
        for _ in 0..<5 { h.app.center.post(name) }
        XCTAssertEqual(calls, 6)
        XCTAssertEqual(timed(), 1, "one dispatch of the five was sampled")
        XCTAssertNil(h.app.center.observerWillRun, "back on the fast path after the sample")
        try h.loop.run(for: EngineMetrics.sampleInterval + .milliseconds(50))
        h.app.center.post(name)
        h.app.center.post(name)
        XCTAssertEqual(timed(), 2)
        // A lifecycle delivery while a sample is armed: its dispatch (the general loop's anyway) takes the sample.
        try h.loop.run(for: EngineMetrics.sampleInterval + .milliseconds(50))
        XCTAssertTrue(h.app.metrics?.sampleArmed == true)
        try h.perform(.memoryWarning(.warning))
        XCTAssertNil(h.app.center.observerWillRun)
        XCTAssertEqual(h.app.metrics?.sampleArmed, false)
        try h.loop.run(for: EngineMetrics.sampleInterval + .milliseconds(50))
        XCTAssertTrue(h.app.metrics?.sampleArmed == true, "sampling goes on")
    }

    func testALifecycleDeliveryWithoutObserversLeavesTheSampleArmed() throws {
        let metrics = TestMetrics()
        let h = try Harness({ $0.metricsFactory = metrics }, delegates: [], observe: false)
        try h.launch()
        try h.loop.run(for: EngineMetrics.sampleInterval + .milliseconds(50))
        XCTAssertTrue(h.app.metrics?.sampleArmed == true)
        try h.perform(.memoryWarning(.warning))  // nobody observes it: no dispatch ran
        XCTAssertTrue(h.app.metrics?.sampleArmed == true)
        XCTAssertNotNil(h.app.center.observerWillRun, "the sample's hook is back after the delivery")
        let name = try NotificationName("com.example.later")
        h.app.center.observe(name, owner: "com.example.late") { _ in }
        h.app.center.post(name)
        XCTAssertEqual(metrics.timers(label: "lifecycle_callback_duration_seconds", dimensions: [("plugin", "com.example.late"), ("kind", "observer")])
            .first?.values.count, 1)
        XCTAssertNil(h.app.center.observerWillRun)
    }

    func testWatchdogReportsAndKillsAreCountedByBudget() throws {
        let reportOnly = TestMetrics()
        let h = try harness(reportOnly) {
            $0.budgets.launch = .milliseconds(40)
            $0.watchdogPolicy = .report
        }
        h.hooks["a application:willFinishLaunchingWithOptions:"] = { _ in usleep(100_000) }
        try h.launch()
        XCTAssertEqual(reportOnly.counterTotal(label: "lifecycle_watchdog_reports_total", dimensions: [("budget", "launch")]), 1)
        XCTAssertEqual(reportOnly.counterTotal(label: "lifecycle_watchdog_kills_total"), 0)

        let killing = TestMetrics()
        let k = try harness(killing) { $0.budgets.launch = .milliseconds(40) }
        k.hooks["a application:willFinishLaunchingWithOptions:"] = { _ in usleep(100_000) }
        try? k.launch()
        XCTAssertEqual(killing.counterTotal(label: "lifecycle_watchdog_reports_total", dimensions: [("budget", "launch")]), 1)
        XCTAssertEqual(killing.counterTotal(label: "lifecycle_watchdog_kills_total", dimensions: [("budget", "launch")]), 1)
        XCTAssertEqual(killing.counterTotal(label: "lifecycle_watchdog_kills_total", dimensions: [("budget", "hang")]), 0)
    }

    func testIsolatedPluginFailuresAndRestartsAreCountedByPluginAndCause() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        h.app.record(.pluginFailed(PluginFailure(plugin: "com.example.crash", cause: .signal(SIGSEGV), event: "didBecomeActive",
                                                 restart: .scheduled(attempt: 1, limit: 3, delay: .milliseconds(100)))))
        h.app.record(.pluginRestarted(plugin: "com.example.crash", attempt: 1, limit: 3))
        h.app.record(.pluginFailed(PluginFailure(plugin: "com.example.crash", cause: .overran(budgetName: "isolated", budget: .seconds(5)),
                                                 event: nil, restart: .gaveUp(limit: 3))))
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_plugin_failures_total", dimensions: [("plugin", "com.example.crash"), ("cause", "signal")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_plugin_failures_total", dimensions: [("plugin", "com.example.crash"), ("cause", "overran")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_plugin_restarts_total", dimensions: [("plugin", "com.example.crash")]), 1)
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_events_total", dimensions: [("kind", "plugin-failed")]), 2)
    }

    func testGaugesReadTheQueueTheTasksAndTheState() throws {
        let metrics = TestMetrics()
        let h = try harness(metrics)
        try h.launch()
        let loop = h.loop
        // Another thread fills its share of the queue, and one more is refused.
        let finished = DispatchSemaphore(value: 0)
        Thread {
            for _ in 0..<MainRunLoop.maxQueuedPerThread { XCTAssertTrue(loop.tryPerform {}) }
            XCTAssertFalse(loop.tryPerform {})
            finished.signal()
        }.start()
        finished.wait()
        h.app.updateMetricGauges()
        XCTAssertEqual(try metrics.expectGauge("lifecycle_queue_messages_waiting").lastValue, Double(MainRunLoop.maxQueuedPerThread))
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_queue_refused_total"), 1)
        XCTAssertEqual(try metrics.expectGauge("lifecycle_application_state", [("state", "active")]).lastValue, 1)
        XCTAssertEqual(try metrics.expectGauge("lifecycle_application_state", [("state", "background")]).lastValue, 0)
        XCTAssertEqual(try metrics.expectGauge("lifecycle_background_tasks_open").lastValue, 0)
        h.loop.dispatchPending()
        _ = try h.app.beginBackgroundTask(named: "upload", owner: "com.example.up")
        try h.perform(.home)
        h.app.updateMetricGauges()
        XCTAssertEqual(try metrics.expectGauge("lifecycle_queue_messages_waiting").lastValue, 0)
        XCTAssertGreaterThanOrEqual(try metrics.expectGauge("lifecycle_queue_depth_max").lastValue ?? 0, Double(MainRunLoop.maxQueuedPerThread))
        XCTAssertEqual(try metrics.expectGauge("lifecycle_background_tasks_open").lastValue, 1)
        XCTAssertEqual(try metrics.expectGauge("lifecycle_application_state", [("state", "background")]).lastValue, 1)
        XCTAssertEqual(metrics.counterTotal(label: "lifecycle_queue_refused_total"), 1, "counted once, not again at the next update")
    }
}
