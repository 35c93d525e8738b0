import LifecycleTestKit
import XCTest

/// The Swift example of docs/writing-a-plugin.md ("Testing your plugin"): the CacheTrimmer plugin
/// (Plugins/CacheTrimmer) under LifecycleTestKit. It flushes its cache in a background task that a
/// 0.05 s timer ends; out of background time, its expiration handler ends it.
final class CacheTrimmerTests: XCTestCase {
    /// The plugin as SwiftPM builds it: libCacheTrimmer.so beside the test bundle.
    let plugin = LifecycleHarness.builtPlugin("CacheTrimmer")

    func testTheFlushEndsItsBackgroundTaskWhenItsTimerFires() throws {
        let harness = try LifecycleHarness()
        harness.load(plugin)
        harness.perform(.launch)
        harness.perform(.home)
        harness.expectNotification("didEnterBackground")
        harness.expectEvent(kind: "background-task", name: "begin", observer: "org.applifecycle.cachetrimmer")
        harness.advance(by: 0.04)
        harness.expectNothingMore() // the timer is 0.05 s: the task still holds the application
        harness.advance(by: 0.01)
        harness.expectEvent(kind: "background-task", name: "end", observer: "org.applifecycle.cachetrimmer")
        harness.expectState(.suspended)
        harness.expectNothingMore()
    }

    func testOutOfBackgroundTimeItsExpirationHandlerEndsTheTask() throws {
        var options = LifecycleHarness.Options()
        options.backgroundTimeBudget = 0.03 // the expiration handler runs 0.02 s before the end: at 0.01 s
        options.expirationWarning = 0.02
        let harness = try LifecycleHarness(options)
        harness.load(plugin)
        harness.perform(.launch)
        harness.perform(.home)
        harness.expectEvent(kind: "background-task", name: "begin")
        harness.advance(by: 0.01)
        harness.expectEvent(kind: "background-task", name: "expiring", observer: "org.applifecycle.cachetrimmer")
        harness.expectEvent(kind: "background-task", name: "end", observer: "org.applifecycle.cachetrimmer")
        harness.expectState(.suspended)
        XCTAssertEqual(harness.events.last?.time, 0.01)
        harness.advance(by: 1) // its flush timer fires at 0.05 s and finds the task ended: nothing more
        harness.expectNothingMore()
    }
}
