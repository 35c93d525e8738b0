import Synchronization
import XCTest
@testable import AppLifecycle

/// The engine on a manual clock (`MainRunLoop(clock: .manual)`, `Application.advance(by:)`): the
/// background time, its expiration warning and the watchdog's end of a task left open; a completion
/// handler's timeout; the launch and hang budgets overrun by a callback that advances the clock from
/// inside; the refusals. Exact times, in far less wall time than the virtual time.
final class ManualClockTests: XCTestCase {
    func testABackgroundTaskExpiresAndEndsExactlyOnTheManualClock() throws {
        let started = ContinuousClock.now
        let h = try Harness(clock: .manual)
        try h.launch()
        try h.app.advance(by: .seconds(10))
        var expiredAt: Duration?
        h.hooks["a applicationDidEnterBackground:"] = { app in
            _ = try? app.beginBackgroundTask(named: "upload", owner: "a") { expiredAt = app.clockElapsed }
        }
        try h.perform(.home)
        try h.app.advance(by: .milliseconds(24_900))
        XCTAssertNil(expiredAt, "not before 25 s")
        XCTAssertEqual(h.app.backgroundTimeRemaining, .milliseconds(5_100))
        try h.app.advance(by: .milliseconds(100))
        XCTAssertEqual(expiredAt, .seconds(35), "30 s of background time less the 5 s warning, 10 s after the launch")
        try h.app.advance(by: .milliseconds(4_900))
        XCTAssertEqual(h.app.state, .background, "not ended at 29.9 s")
        XCTAssertEqual(h.app.backgroundTimeRemaining, .milliseconds(100))
        let before = h.fullTrace.count
        try h.app.advance(by: .milliseconds(100))
        XCTAssertEqual(h.app.state, .notRunning)
        XCTAssertEqual(h.fullTrace[before...].map { "\($0.time) \($0.description)" }, [
            "40.0 seconds watchdog background task #1 'upload' [a] (background task #1 'upload' by 'a' overran the backgroundTask budget: 30.000 s of 30.000 s (policy: terminate))",
            "40.0 seconds state not-running (killed by the watchdog)",
        ])
        XCTAssertEqual(h.app.clockElapsed, .seconds(40))
        XCTAssertLessThan(ContinuousClock.now - started, .seconds(2), "40 s of virtual time")
    }

    func testACompletionHandlerTimesOutAfterItsBudget() throws {
        let reports = Mutex<[String]>([])
        let h = try Harness(clock: .manual) {
            $0.backgroundModes = [.fetch]
            $0.watchdogPolicy = .report
            $0.onWatchdogReport = { report in reports.withLock { $0.append("\(report.budgetName) \(report.elapsed)") } }
        }
        try h.perform(.launch(options: [:], inBackground: true))
        try h.perform(.backgroundFetch)
        XCTAssertEqual(h.completions.count, 1)
        try h.app.advance(by: .milliseconds(29_999))
        XCTAssertEqual(reports.withLock { $0 }, [])
        XCTAssertEqual(h.app.state, .background)
        try h.app.advance(by: .milliseconds(1))
        XCTAssertEqual(reports.withLock { $0 }, ["completionHandler 30.0 seconds"])
        XCTAssertEqual(h.app.state, .suspended)
    }

    func testACallbackAdvancingTheClockOverrunsTheLaunchAndHangBudgets() throws {
        let reports = Mutex<[String]>([])
        let h = try Harness(clock: .manual) {
            $0.watchdogPolicy = .report
            $0.onWatchdogReport = { report in reports.withLock { $0.append("\(report.budgetName) \(report.event) \(report.elapsed)") } }
        }
        h.hooks["a application:didFinishLaunchingWithOptions:"] = { app in try? app.advance(by: .seconds(6)) }
        try h.launch()
        XCTAssertEqual(reports.withLock { $0 }, ["launch application:didFinishLaunchingWithOptions: 6.0 seconds"])
        XCTAssertTrue(h.trace.contains("watchdog application:didFinishLaunchingWithOptions: [a] (application:didFinishLaunchingWithOptions: by 'a' overran the launch budget: 6.000 s of 5.000 s (policy: report))"),
                      "\(h.trace)")
        var fired: Duration?
        h.loop.addTimer(after: .seconds(1)) { fired = h.app.clockElapsed }
        let slow = try NotificationName("com.example.slow")
        let quick = try NotificationName("com.example.quick")
        h.app.center.observe(quick, owner: "q") { _ in try? h.app.advance(by: .milliseconds(4_999)) }
        h.app.center.observe(slow, owner: "s") { _ in try? h.app.advance(by: .seconds(5)) }
        _ = h.app.center.post(quick)
        XCTAssertNil(fired, "a timer passed inside a callback runs after it, not inside")
        XCTAssertEqual(reports.withLock { $0.count }, 1, "4.999 s is within the hang budget")
        _ = h.app.center.post(slow)
        XCTAssertEqual(reports.withLock { $0.last }, "hang com.example.slow 5.0 seconds")
        try h.app.advance(by: .zero)
        XCTAssertEqual(fired, .milliseconds(15_999), "it ran on the next turn, at the clock's reading then")
        XCTAssertEqual(h.trace.last, "watchdog com.example.slow [s] (com.example.slow by 's' overran the hang budget: at least 5.000 s of 5.000 s (policy: report))")
    }

    func testAdvanceIsRefusedOnTheMonotonicClockAndForANegativeDuration() throws {
        let real = try Harness()
        XCTAssertApplicationError(try real.app.advance(by: .seconds(1)), .invalidArgument,
                                  "MainRunLoop.advance(by:): the loop runs on the monotonic clock; only a manual clock advances")
        XCTAssertEqual(real.app.clock, .monotonic)
        let manual = try Harness(clock: .manual)
        XCTAssertApplicationError(try manual.app.advance(by: .seconds(-1)), .invalidArgument,
                                  "MainRunLoop.advance(by:): the duration -1.0 seconds is negative")
        XCTAssertEqual(manual.app.clockElapsed, .zero)
        XCTAssertEqual(manual.app.clock.description, "manual")
    }
}
