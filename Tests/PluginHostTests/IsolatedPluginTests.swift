import AppLifecycle
import Foundation
import LifecycleC
import PluginHost
import TestSupport
import XCTest

/// Isolated plugins through the Swift API of the plugins module: the typed failure events (read from
/// the payload, never the words), and what the application sees of a plugin in another process.
final class IsolatedPluginTests: XCTestCase {
    override func setUp() {
        IsolationRunner.executable = CBuild.products + "/lifecycle-plugin-runner"
    }

    func makeApp(_ configure: (inout Configuration) -> Void = { _ in }) throws -> (AppHandle, () -> [TraceEvent.Payload]) {
        var configuration = Configuration()
        configure(&configuration)
        let handle = try AppHandle(configuration: configuration)
        final class Box: @unchecked Sendable { var events: [TraceEvent.Payload] = [] }
        let box = Box()
        handle.swiftTraceHandler = { box.events.append($0.payload) }
        return (handle, { box.events })
    }

    static func failures(_ events: [TraceEvent.Payload]) -> [PluginFailure] {
        events.compactMap { if case .pluginFailed(let failure) = $0 { return failure } else { return nil } }
    }

    func testACrashIsATypedEventNamingThePluginTheSignalAndTheCallback() throws {
        let segv = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.typed.segv", name: "didEnterBackground", body: "raise(SIGSEGV);"), named: "typedsegv")
        let (handle, events) = try makeApp()
        defer { handle.shutdown() }
        let plugin = try handle.loadIsolatedPlugin(path: segv, settings: IsolationSettings())
        XCTAssertTrue(plugin.isIsolated)
        XCTAssertEqual(plugin.observedNames, [.didEnterBackground])
        try handle.app.perform(.launch())
        try handle.app.perform(.home)
        XCTAssertEqual(Self.failures(events()), [PluginFailure(plugin: "com.example.typed.segv", cause: .signal(SIGSEGV),
                                                               event: "didEnterBackground", restart: .none)])
        XCTAssertNil(handle.plugin(id: "com.example.typed.segv"), "taken out of the application")
        XCTAssertEqual(plugin.isolatedFailure?.cause, .signal(SIGSEGV))
        XCTAssertFalse(plugin.isActive)
        XCTAssertEqual(handle.app.center.observerCount(for: .didEnterBackground), 0, "its observers removed")
        XCTAssertEqual(handle.app.state, .suspended, "the application went on")
    }

    func testAnOverrunIsATypedEventWithItsBudgetAndTheCallWaitingAnswersTheDefault() throws {
        let hang = try IsolationFixtures.build(IsolationFixtures.exporter(id: "com.example.typed.hang", functions: """
            bool application_willFinishLaunchingWithOptions(lc_app *a, const lc_dict *o) { (void)a, (void)o; for (;;) {} return false; }
            void applicationDidBecomeActive(lc_app *a) { (void)a; }
            """), named: "typedhang")
        let (handle, events) = try makeApp { $0.budgets.launch = .milliseconds(300) }
        defer { handle.shutdown() }
        let plugin = try handle.loadIsolatedPlugin(path: hang, settings: IsolationSettings())
        XCTAssertEqual(plugin.implementedMethods, [.willFinishLaunching, .didBecomeActive])
        try handle.app.perform(.launch())
        XCTAssertEqual(Self.failures(events()), [PluginFailure(plugin: "com.example.typed.hang",
                                                               cause: .overran(budgetName: "launch", budget: .milliseconds(300)),
                                                               event: "application:willFinishLaunchingWithOptions:", restart: .none)])
        XCTAssertEqual(handle.app.state, .active, "the launch went on: a failed plugin answers as an unimplemented method")
        XCTAssertFalse(events().contains { if case .watchdogOverrun = $0 { return true } else { return false } },
                       "the application's own budget clock stopped while it waited")
        XCTAssertFalse(handle.app.delegateIDs.contains("com.example.typed.hang"))
    }

    func testARestartIsReportedAndTheSamePluginObjectServesAgain() throws {
        let flaky = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.typed.flaky", name: "didReceiveMemoryWarning", body: "abort();"), named: "typedflaky")
        let (handle, events) = try makeApp()
        defer { handle.shutdown() }
        var settings = IsolationSettings()
        settings.restart = .onFailure(limit: 1)
        settings.backoff = .milliseconds(10)
        let plugin = try handle.loadIsolatedPlugin(path: flaky, settings: settings)
        try handle.app.perform(.launch())
        try handle.app.perform(.memoryWarning(.warning))
        try handle.loop.run(for: .milliseconds(300))
        XCTAssertTrue(handle.plugin(id: "com.example.typed.flaky") === plugin, "the same lc_plugin * serves again")
        try handle.app.perform(.memoryWarning(.warning))
        try handle.loop.run(for: .milliseconds(100))
        let restarts = events().compactMap { payload -> String? in
            switch payload {
            case .pluginFailed(let failure): return "failed \(failure.restart)"
            case .pluginRestarted(let plugin, let attempt, let limit): return "restarted \(plugin) \(attempt)/\(limit)"
            default: return nil
            }
        }
        XCTAssertEqual(restarts, ["failed scheduled(attempt: 1, limit: 1, delay: 0.01 seconds)",
                                  "restarted com.example.typed.flaky 1/1",
                                  "failed gaveUp(limit: 1)"])
        XCTAssertEqual(Self.failures(events()).map(\.cause), [.signal(SIGABRT), .signal(SIGABRT)])
        XCTAssertNil(handle.plugin(id: "com.example.typed.flaky"))
    }

    func testUnloadingRunsDeinitInThePluginsProcessAndEndsIt() throws {
        let folder = try CBuild.temporaryFolder("isolated-deinit")
        let marker = folder + "/deinit-ran"
        let source = IsolationFixtures.initialiser(id: "com.example.typed.deinit", body: "return LC_OK;")
            .replacingOccurrences(of: ".init = fixture_init,", with: ".init = fixture_init, .deinit = fixture_deinit,")
            .replacingOccurrences(of: "static const lc_plugin_descriptor_t descriptor", with: """
                #include <stdio.h>
                static void fixture_deinit(void *state) { (void)state; FILE *f = fopen("\(marker)", "w"); if (f) { fputs("bye", f); fclose(f); } }
                static const lc_plugin_descriptor_t descriptor
                """)
        let path = try CBuild.sharedObject(source, named: "deinit", in: folder)
        let (handle, events) = try makeApp()
        let plugin = try handle.loadIsolatedPlugin(path: path, settings: IsolationSettings())
        handle.unload(plugin)
        XCTAssertEqual(try String(contentsOfFile: marker, encoding: .utf8), "bye")
        XCTAssertFalse(plugin.isActive)
        XCTAssertTrue(Self.failures(events()).isEmpty, "an unload is not a failure")
        handle.shutdown()
    }
}
