import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import Glibc
import Synchronization
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// Issue 18, hole 2, through the plugins module: each quota refuses the call past it with
/// LC_ERR_QUOTA and its own message, traces a typed `quotaRefused` event, and gives the slot back on
/// every way out (removal, firing, cancelling, ending, the watchdog, unloading); the quotas an
/// application sets reach an isolated plugin's process, which refuses there, and one that keeps
/// calling is cut off with a typed cause.
final class PluginQuotaTests: XCTestCase {
    static let source = """
        #include <stdio.h>
        static lc_plugin *me;
        static void on_note(const lc_notification_t *n, void *c) { (void)n, (void)c; }
        static void on_timer(void *c) { (void)c; }
        static lc_observer_token last_observer;
        static lc_source_id last_timer;
        static lc_task_id last_task;
        LC_EXPORT int q_observe(void) { return host->observe(me, "com.example.quota.note", NULL, on_note, NULL, &last_observer); }
        LC_EXPORT int q_observe_name(void) { return host->observe_name(me, LC_NAME_DID_BECOME_ACTIVE, NULL, on_note, NULL, &last_observer); }
        LC_EXPORT int q_remove_observer(void) { return host->remove_observer(me, last_observer); }
        LC_EXPORT int q_timer(double seconds) { return host->add_timer(me, seconds, on_timer, NULL, &last_timer); }
        LC_EXPORT int q_cancel_timer(void) { return host->cancel_timer(me, last_timer); }
        LC_EXPORT int q_task(void) { return host->begin_background_task(me, "q", NULL, NULL, &last_task); }
        LC_EXPORT int q_end_task(void) { return host->end_background_task(me, last_task); }
        LC_EXPORT int q_intern(const char *name) { lc_name id = 0; return host->name_intern(me, name, &id); }
        LC_EXPORT int q_post(const char *name) { return host->post(me, name, NULL, NULL); }
        """

    final class Image: @unchecked Sendable {
        let handle: UnsafeMutableRawPointer
        init(_ path: String) throws { handle = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD)) }
        func fn<T>(_ name: String, _ type: T.Type) -> T { unsafeBitCast(dlsym(handle, name)!, to: type) }
        func call(_ name: String) -> Int32 { fn(name, (@convention(c) () -> Int32).self)() }
        func timer(_ seconds: Double) -> Int32 { fn("q_timer", (@convention(c) (Double) -> Int32).self)(seconds) }
        func named(_ function: String, _ name: String) -> Int32 {
            name.withCString { fn(function, (@convention(c) (UnsafePointer<CChar>) -> Int32).self)($0) }
        }
    }

    /// Trace payloads, kept as they come.
    final class Events: @unchecked Sendable {
        var all: [TraceEvent.Payload] = []
        var refusals: [QuotaRefusal] { all.compactMap { if case .quotaRefused(let r) = $0 { return r } else { return nil } } }
        var failures: [PluginFailure] { all.compactMap { if case .pluginFailed(let f) = $0 { return f } else { return nil } } }
    }

    let id = "com.example.quota"
    var folder = ""

    override func setUpWithError() throws {
        folder = try CBuild.temporaryFolder("quota")
        IsolationRunner.executable = CBuild.products + "/lifecycle-plugin-runner"
    }

    override func tearDown() { try? FileManager.default.removeItem(atPath: folder) }

    var lastMessage: String { String(cString: lc_last_error_message()) }

    func makeApp(quotas: PluginQuotas, _ configure: (inout Configuration) -> Void = { _ in }) throws -> (AppHandle, Events) {
        var configuration = Configuration()
        configure(&configuration)
        let handle = try AppHandle(configuration: configuration)
        let events = Events()
        handle.swiftTraceHandler = { events.all.append($0.payload) }
        handle.pluginQuotas = quotas
        return (handle, events)
    }

    func loadInProcess(_ handle: AppHandle, name: String) throws -> (LoadedPlugin, Image) {
        let path = try CBuild.sharedObject(CBuild.plugin(id: id, initBody: "me = plugin; return LC_OK;", extra: Self.source),
                                           named: name, in: folder)
        let plugin = try handle.loadPlugin(path: path)
        return (plugin, try Image(path))
    }

    static func small(observers: Int = 3, timers: Int = 2, tasks: Int = 2, names: Int = 2) -> PluginQuotas {
        var quotas = PluginQuotas()
        quotas.observers = observers
        quotas.timers = timers
        quotas.backgroundTasks = tasks
        quotas.customNames = names
        return quotas
    }

    func testTheDefaultsAreTheDocumentedNumbers() {
        let quotas = PluginQuotas()
        XCTAssertEqual([quotas.observers, quotas.timers, quotas.backgroundTasks, quotas.customNames], [100_000, 10_000, 1_000, 10_000])
        XCTAssertEqual(PluginQuotas.cutOffRefusals, 1_000)
        XCTAssertEqual(PluginQuotas.cutOffWindow, .seconds(10))
        XCTAssertEqual(String(cString: lc_status_name(lc_status(LC_ERR_QUOTA))), "LC_ERR_QUOTA")
        XCTAssertEqual(String(cString: lc_status_message(lc_status(LC_ERR_QUOTA))), "the plugin is at one of its quotas; nothing changed")
    }

    // MARK: In the host's process

    func testEachQuotaRefusesWithLCErrQuotaItsMessageAndATypedTraceEvent() throws {
        let (handle, events) = try makeApp(quotas: Self.small(names: 3))
        defer { handle.shutdown() }
        let (plugin, image) = try loadInProcess(handle, name: "each")
        try handle.app.perform(.launch())
        let quota = lc_status(LC_ERR_QUOTA)

        for _ in 0..<3 { XCTAssertEqual(image.call("q_observe"), lc_status(LC_OK)) }
        XCTAssertEqual(image.call("q_observe"), quota)
        XCTAssertEqual(lastMessage, "observe: plugin 'com.example.quota' is at its quota of 3 observers; refused, nothing changed")
        XCTAssertEqual(image.call("q_observe_name"), quota)
        XCTAssertEqual(lastMessage, "observe_name: plugin 'com.example.quota' is at its quota of 3 observers; refused, nothing changed")
        XCTAssertEqual(handle.app.center.observerCount(owner: id), 3, "nothing registered past it")

        XCTAssertEqual(image.timer(60), lc_status(LC_OK))
        XCTAssertEqual(image.timer(60), lc_status(LC_OK))
        XCTAssertEqual(image.timer(60), quota)
        XCTAssertEqual(lastMessage, "add_timer: plugin 'com.example.quota' is at its quota of 2 timers; refused, nothing changed")
        XCTAssertEqual(image.timer(-1), lc_status(LC_ERR_INVALID_ARGUMENT), "its arguments are checked first")

        XCTAssertEqual(image.call("q_task"), lc_status(LC_OK))
        XCTAssertEqual(image.call("q_task"), lc_status(LC_OK))
        XCTAssertEqual(image.call("q_task"), quota)
        XCTAssertEqual(lastMessage,
                       "begin_background_task: plugin 'com.example.quota' is at its quota of 2 open background tasks; refused, nothing changed")

        // The observers' name, com.example.quota.note, was the first custom name it used.
        XCTAssertEqual(image.named("q_intern", "com.example.quota.each.n0"), lc_status(LC_OK))
        XCTAssertEqual(image.named("q_post", "com.example.quota.each.n1"), lc_status(LC_OK))
        XCTAssertEqual(image.named("q_intern", "com.example.quota.each.n2"), quota)
        XCTAssertEqual(lastMessage,
                       "name_intern: plugin 'com.example.quota' is at its quota of 3 custom notification names; refused, nothing changed")
        XCTAssertNil(NotificationName(existing: "com.example.quota.each.n2"), "not interned")
        XCTAssertEqual(image.named("q_post", "com.example.quota.each.n3"), quota)
        XCTAssertEqual(lastMessage, "post: plugin 'com.example.quota' is at its quota of 3 custom notification names; refused, nothing changed")
        XCTAssertEqual(image.named("q_post", "com.example.quota.each.n0"), lc_status(LC_OK), "a name it has costs nothing")
        XCTAssertEqual(image.named("q_intern", "didBecomeActive"), lc_status(LC_OK), "nor a standard one")
        XCTAssertEqual(image.named("q_intern", "com.example.quota.note"), lc_status(LC_OK), "nor one interned before")
        XCTAssertEqual(plugin.quota.customNamesCharged, 3)

        // The first refusal of each kind at once; the second observer refusal (within the second) waits.
        XCTAssertEqual(events.refusals, [
            QuotaRefusal(plugin: id, kind: .observers, limit: 3, refused: 1),
            QuotaRefusal(plugin: id, kind: .timers, limit: 2, refused: 1),
            QuotaRefusal(plugin: id, kind: .backgroundTasks, limit: 2, refused: 1),
            QuotaRefusal(plugin: id, kind: .customNames, limit: 3, refused: 1),
        ])
        try handle.loop.run(for: .milliseconds(1100))
        XCTAssertEqual(Array(events.refusals.dropFirst(4)), [
            QuotaRefusal(plugin: id, kind: .observers, limit: 3, refused: 1),
            QuotaRefusal(plugin: id, kind: .customNames, limit: 3, refused: 1),
        ], "traced when the second ended")
    }

    func testEveryWayOutGivesTheSlotBack() throws {
        let (handle, _) = try makeApp(quotas: Self.small(observers: 1, timers: 1, tasks: 1)) {
            $0.watchdogPolicy = .report
            $0.budgets.backgroundTask = .milliseconds(200)
            $0.budgets.expirationWarning = .milliseconds(100)
        }
        defer { handle.shutdown() }
        let (plugin, image) = try loadInProcess(handle, name: "ways")
        try handle.app.perform(.launch())
        let ok = lc_status(LC_OK), quota = lc_status(LC_ERR_QUOTA)

        // Observers: removal.
        XCTAssertEqual(image.call("q_observe"), ok)
        XCTAssertEqual(image.call("q_observe"), quota)
        XCTAssertEqual(image.call("q_remove_observer"), ok)
        XCTAssertEqual(handle.app.center.observerCount(owner: id), 0)
        XCTAssertEqual(image.call("q_observe"), ok)

        // Timers: cancelling, then firing.
        XCTAssertEqual(image.timer(60), ok)
        XCTAssertEqual(image.timer(60), quota)
        XCTAssertEqual(image.call("q_cancel_timer"), ok)
        XCTAssertEqual(image.timer(0.01), ok)
        XCTAssertEqual(image.timer(60), quota)
        try handle.loop.run(for: .milliseconds(50))
        XCTAssertEqual(handle.timerCount(owner: id), 0, "fired")
        XCTAssertEqual(image.timer(60), ok)

        // Background tasks: ending, then the watchdog at the end of the background budget.
        XCTAssertEqual(image.call("q_task"), ok)
        XCTAssertEqual(image.call("q_task"), quota)
        XCTAssertEqual(image.call("q_end_task"), ok)
        XCTAssertEqual(handle.app.backgroundTaskCount(owner: id), 0)
        XCTAssertEqual(image.call("q_task"), ok)
        try handle.app.perform(.home)
        try handle.loop.run(for: .milliseconds(400))
        XCTAssertEqual(handle.app.backgroundTaskCount(owner: id), 0, "ended by the watchdog")
        try handle.app.perform(.foreground)
        XCTAssertEqual(image.call("q_task"), ok)

        // Unloading gives everything back.
        handle.unload(plugin)
        XCTAssertEqual(handle.app.center.observerCount(owner: id), 0)
        XCTAssertEqual(handle.timerCount(owner: id), 0)
        XCTAssertEqual(handle.app.backgroundTaskCount(owner: id), 0)
    }

    /// A plugin's own thread posting new custom names: refused there at once; the refusals reach the
    /// trace through the loop, in one event.
    func testACustomNameRefusedOnAPluginThreadIsTracedOnTheLoop() throws {
        let (handle, events) = try makeApp(quotas: Self.small(names: 2))
        defer { handle.shutdown() }
        let (_, image) = try loadInProcess(handle, name: "thread")
        let statuses = Mutex<[Int32]>([])
        let done = DispatchSemaphore(value: 0)
        Thread {
            for n in 0..<5 { statuses.withLock { $0.append(image.named("q_post", "com.example.quota.thread.n\(n)")) } }
            done.signal()
        }.start()
        done.wait()
        XCTAssertEqual(statuses.withLock { $0 }, [0, 0, -18, -18, -18])
        XCTAssertTrue(events.refusals.isEmpty, "not traced off the loop")
        try handle.loop.run(for: .milliseconds(50))
        XCTAssertEqual(events.refusals, [QuotaRefusal(plugin: id, kind: .customNames, limit: 2, refused: 3)])
    }

    // MARK: Isolated

    /// The application's quotas travel to the plugin's process, which refuses past them with the
    /// same status (the plugin's init checks each one and fails the load otherwise); the host traces
    /// the refusals it is told of, and counts the registrations itself.
    func testAnIsolatedPluginIsRefusedInItsProcessAtTheApplicationsQuotas() throws {
        let (handle, events) = try makeApp(quotas: Self.small(observers: 2, timers: 2, names: 1))
        defer { handle.shutdown() }
        let path = try IsolationFixtures.build("""
            #include "lifecycle.h"
            static void on_note(const lc_notification_t *n, void *c) { (void)n, (void)c; }
            static void on_timer(void *c) { (void)c; }
            static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                (void)state;
                for (int i = 0; i < 2; i++) if (host->observe(plugin, "didBecomeActive", NULL, on_note, NULL, NULL) != LC_OK) return LC_ERR_INTERNAL;
                if (host->observe(plugin, "didBecomeActive", NULL, on_note, NULL, NULL) != LC_ERR_QUOTA) return LC_ERR_INTERNAL;
                for (int i = 0; i < 2; i++) if (host->add_timer(plugin, 60, on_timer, NULL, NULL) != LC_OK) return LC_ERR_INTERNAL;
                if (host->add_timer(plugin, 60, on_timer, NULL, NULL) != LC_ERR_QUOTA) return LC_ERR_INTERNAL;
                if (host->post(plugin, "com.example.quota.isolated.a", NULL, NULL) != LC_OK) return LC_ERR_INTERNAL;
                if (host->post(plugin, "com.example.quota.isolated.b", NULL, NULL) != LC_ERR_QUOTA) return LC_ERR_INTERNAL;
                return LC_OK;
            }
            \(IsolationFixtures.descriptorSource(id))
            """, named: "isolated")
        _ = try handle.loadIsolatedPlugin(path: path, settings: IsolationSettings())
        XCTAssertEqual(handle.app.center.observerCount(owner: id), 2)
        XCTAssertEqual(handle.timerCount(owner: id), 2)
        XCTAssertEqual(events.refusals, [
            QuotaRefusal(plugin: id, kind: .observers, limit: 2, refused: 1),
            QuotaRefusal(plugin: id, kind: .timers, limit: 2, refused: 1),
            QuotaRefusal(plugin: id, kind: .customNames, limit: 1, refused: 1),
        ])
        XCTAssertTrue(events.failures.isEmpty)
    }

    /// One that keeps calling past a quota is cut off at the thousandth refusal: a typed cause.
    func testAnIsolatedPluginThatKeepsCallingIsCutOffWithATypedCause() throws {
        let (handle, events) = try makeApp(quotas: Self.small(timers: 5))
        defer { handle.shutdown() }
        let path = try IsolationFixtures.build(IsolationFixtures.observer(id: id, name: "didBecomeActive", body: """
            for (int i = 0; i < 100000; i++) host->add_timer(me, 60, on_timer, NULL, NULL);
            """, extra: "static void on_timer(void *c) { (void)c; }"), named: "keeps")
        let plugin = try handle.loadIsolatedPlugin(path: path, settings: IsolationSettings())
        try handle.app.perform(.launch())
        XCTAssertEqual(IsolatedPluginTests.failures(events.all), [
            PluginFailure(plugin: id, cause: .quotaExceeded(.timers, limit: 5, refusals: 1000, window: .seconds(10)),
                          event: "didBecomeActive", restart: .none),
        ])
        XCTAssertEqual(events.refusals.map(\.refused).reduce(0, +), 1000, "every refusal it was told of, traced before the failure")
        XCTAssertFalse(plugin.isActive)
        XCTAssertEqual(handle.timerCount(owner: id), 0, "its timers cancelled")
    }
}
