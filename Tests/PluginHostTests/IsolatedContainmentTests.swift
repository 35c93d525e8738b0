import AppLifecycle
import Foundation
import LifecycleC
import PluginHost
import TestSupport
import XCTest

/// Every process an isolated plugin starts is ended with its own: when it fails (a crash, an
/// overrun) and when it is unloaded, whether it stayed in the plugin's process group or left it
/// (`setsid()`, a double fork). Checked at once, in the host's process, through the Swift API.
final class IsolatedContainmentTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        IsolationRunner.executable = CBuild.products + "/lifecycle-plugin-runner"
        folder = try CBuild.temporaryFolder("contained")
    }

    override func tearDown() {
        StrayProcesses.killAll(in: folder)
        try? FileManager.default.removeItem(atPath: folder)
        super.tearDown()
    }

    /// A plugin whose init starts a child in its process group and a daemon out of it, and whose
    /// memory-warning observer runs `body`.
    private func forker(_ name: String, body: String) throws -> String {
        try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.contained.\(name)", name: "didReceiveMemoryWarning", body: body, extra: StrayProcesses.source(folder: folder),
            extraInit: "start_stray(0); start_stray(1);"), named: "contained\(name)")
    }

    private func load(_ path: String, _ settings: IsolationSettings, file: StaticString = #filePath, line: UInt = #line) throws
        -> (AppHandle, LoadedPlugin, () -> [PluginFailure])
    {
        let handle = try AppHandle(configuration: Configuration())
        final class Box: @unchecked Sendable { var failures: [PluginFailure] = [] }
        let box = Box()
        handle.swiftTraceHandler = { if case .pluginFailed(let failure) = $0.payload { box.failures.append(failure) } }
        let plugin = try handle.loadIsolatedPlugin(path: path, settings: settings)
        let strays = StrayProcesses.recorded(in: folder)
        XCTAssertEqual(strays.count, 2, file: file, line: line)
        XCTAssertEqual(StrayProcesses.running(in: folder, grace: 0).count, 2, "both strays run while the plugin does", file: file, line: line)
        if !settings.cgroups {
            XCTAssertEqual(strays.filter(Self.inPluginCgroup), [], "no cgroup when it is turned off", file: file, line: line)
        }
        return (handle, plugin, { box.failures })
    }

    /// Whether `pid` is in a cgroup the host made for a plugin (`0::/…/lifecycle-plugin-HOST-RUNNER`).
    static func inPluginCgroup(_ pid: Int32) -> Bool {
        ((try? String(contentsOfFile: "/proc/\(pid)/cgroup", encoding: .utf8)) ?? "").contains("/lifecycle-plugin-")
    }

    /// The containments to try: the process group and the runner's subreaper (cgroups off), always; a
    /// cgroup of the plugin's own, which the host makes where it can (as here, when it runs as root or
    /// in a delegated cgroup; elsewhere the same containment as the first).
    private var containments: [(name: String, settings: IsolationSettings)] {
        var groupOnly = IsolationSettings()
        groupOnly.cgroups = false
        return [("process group and subreaper", groupOnly), ("cgroup where possible", IsolationSettings())]
    }

    func testACrashEndsEveryProcessThePluginStartedAndIsReportedAsTheCrash() throws {
        let path = try forker("crash", body: "raise(SIGSEGV);")
        for (name, settings) in containments {
            let (handle, _, failures) = try load(path, settings)
            defer { handle.shutdown() }
            try handle.app.perform(.launch())
            let started = Date()
            try handle.app.perform(.memoryWarning(.warning))
            XCTAssertLessThan(Date().timeIntervalSince(started), 2, "\(name): the crash is seen when the process dies")
            XCTAssertEqual(failures(), [PluginFailure(plugin: "com.example.contained.crash", cause: .signal(SIGSEGV),
                                                      event: "didReceiveMemoryWarning", restart: .none)], name)
            XCTAssertEqual(StrayProcesses.running(in: folder), [], "\(name): the child and the daemon were killed")
            StrayProcesses.killAll(in: folder)
            try? FileManager.default.removeItem(atPath: folder)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
    }

    func testAnOverrunEndsEveryProcessThePluginStarted() throws {
        let path = try forker("overrun", body: "for (;;) {}")
        for (name, base) in containments {
            var settings = base
            settings.callBudget = .milliseconds(300)
            let (handle, _, failures) = try load(path, settings)
            defer { handle.shutdown() }
            try handle.app.perform(.launch())
            try handle.app.perform(.memoryWarning(.warning))
            XCTAssertEqual(failures().map(\.cause), [.overran(budgetName: "isolated-call", budget: .milliseconds(300))], name)
            XCTAssertEqual(StrayProcesses.running(in: folder), [], "\(name): the child and the daemon were killed")
            StrayProcesses.killAll(in: folder)
            try? FileManager.default.removeItem(atPath: folder)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
    }

    func testUnloadingEndsEveryProcessThePluginStarted() throws {
        let path = try forker("unload", body: "")
        for (name, settings) in containments {
            let (handle, plugin, failures) = try load(path, settings)
            try handle.app.perform(.launch())
            handle.unload(plugin)
            XCTAssertEqual(StrayProcesses.running(in: folder), [], "\(name): the child and the daemon were killed at the unload")
            XCTAssertEqual(failures(), [], "\(name): an unload is not a failure")
            handle.shutdown()
            StrayProcesses.killAll(in: folder)
            try? FileManager.default.removeItem(atPath: folder)
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        }
    }
}
