import LifecycleTestKit
import XCTest

/// A plugin loaded isolated under the kit, on the manual clock: its process runs in real time, and the
/// application waits for its answers before each action returns and each move of the clock, so the
/// test reads the same events at the same clock times as in-process.
final class IsolatedKitTests: XCTestCase {
    /// The CacheTrimmer example's flush, as CacheTrimmerTests checks it; the events after the launch.
    private func flush(isolated: Bool) throws -> [LifecycleHarness.Event] {
        let harness = try LifecycleHarness()
        harness.load(LifecycleHarness.builtPlugin("CacheTrimmer"), isolated: isolated)
        harness.perform(.launch)
        harness.perform(.home)
        harness.expectEvent(kind: "background-task", name: "begin", observer: "org.applifecycle.cachetrimmer")
        harness.advance(by: 0.04)
        harness.expectNothingMore()
        harness.advance(by: 0.01)
        harness.expectEvent(kind: "background-task", name: "end", observer: "org.applifecycle.cachetrimmer")
        harness.expectState(.suspended)
        XCTAssertEqual(harness.failures, 0)
        return Array(harness.events.drop { $0.kind != "action" || $0.name != "home" })
    }

    func testAnIsolatedPluginGivesTheInProcessEventsAtTheSameClockTimes() throws {
        let isolated = try flush(isolated: true)
        let inProcess = try flush(isolated: false)
        func lines(_ events: [LifecycleHarness.Event]) -> [String] { events.map { "\($0.time) \($0)" } }
        // Isolated, the suspension also says once how the plugin's process is frozen (its words are the
        // machine's: cgroup v2, v1, signals, or not at all).
        let freezer = isolated.filter { $0.kind == "plugin-freezer" }
        XCTAssertEqual(freezer.map(\.time), [0.05], lines(isolated).joined(separator: "\n"))
        XCTAssertEqual(lines(isolated.filter { $0.kind != "plugin-freezer" }), lines(inProcess))
        XCTAssertEqual(lines(inProcess).last, "0.05 state suspended")
    }
}
