import Glibc
import Synchronization
import XCTest
@testable import AppLifecycle

/// The hang budget (one callback outside the budgeted phases), the termination deadline, the callback
/// probe that names what the loop thread is running, and the nesting limit of posts.
final class HangAndNestingTests: XCTestCase {
    private let custom = try! NotificationName("com.example.again")

    // MARK: The hang budget

    func testAnObserverPastTheHangBudgetIsReportedWhileItRunsAndTracedWhenItReturns() throws {
        let reports = Mutex<[(WatchdogReport, Bool)]>([])
        let running = Atomic<Bool>(false)
        let h = try Harness({
            $0.budgets.hang = .milliseconds(200)
            $0.watchdogPolicy = .report
            $0.onWatchdogReport = { report in reports.withLock { $0.append((report, running.load(ordering: .sequentiallyConsistent))) } }
        })
        try h.launch()
        h.app.center.observe(.didReceiveMemoryWarning, owner: "com.example.slow") { _ in
            running.store(true, ordering: .sequentiallyConsistent)
            usleep(450_000)
            running.store(false, ordering: .sequentiallyConsistent)
        }
        let trace = try h.perform(.memoryWarning(.warning))
        let got = reports.withLock { $0 }
        XCTAssertEqual(got.count, 1)
        let (report, whileRunning) = try XCTUnwrap(got.first)
        XCTAssertTrue(whileRunning, "reported from the watchdog thread while the observer still ran")
        XCTAssertEqual(report.budgetKind, .hang)
        XCTAssertEqual(report.budgetName, "hang")
        XCTAssertEqual(report.observer, "com.example.slow")
        XCTAssertEqual(report.event, "didReceiveMemoryWarning")
        XCTAssertEqual(report.budget, .milliseconds(200))
        let callback = RunningCallback(kind: .observer(.didReceiveMemoryWarning), owner: "com.example.slow")
        guard case .hang(callback, in: callback) = report.subject else { return XCTFail("subject: \(report.subject)") }
        // Sampled every quarter of the budget: reported between the budget and the budget plus 50 ms
        // (plus scheduling), with the time since the first sample that saw it.
        XCTAssertGreaterThanOrEqual(report.elapsed, .milliseconds(200))
        XCTAssertLessThan(report.elapsed, .milliseconds(400))
        XCTAssertTrue(report.description.hasPrefix("didReceiveMemoryWarning by 'com.example.slow' overran the hang budget: at least 0."),
                      report.description)
        XCTAssertTrue(report.description.hasSuffix(" of 0.200 s (policy: report)"), report.description)
        // Policy report: traced right after the callback returned (from the typed report), and the app goes on.
        XCTAssertEqual(trace.count, 3, "\(trace)")
        XCTAssertEqual(trace[1], #"notification didReceiveMemoryWarning ({"level":"warning"})"#)
        XCTAssertEqual(trace[2], "watchdog didReceiveMemoryWarning [com.example.slow] (\(report.description))")
        guard case .watchdogOverrun(let traced) = h.fullTrace.last?.payload else { return XCTFail("not a watchdog event") }
        XCTAssertEqual(traced.budgetKind, .hang)
        XCTAssertEqual(h.app.state, .active)
    }

    func testAHungDelegateMethodUnderTheTerminatePolicyKillsTheApplication() throws {
        let killed = Mutex<[String]>([])
        let h = try Harness({
            $0.budgets.hang = .milliseconds(100)
            $0.onWatchdogKill = { report in killed.withLock { $0.append("\(report.budgetName) \(report.event) \(report.observer)") } }
        }, delegates: ["a", "b"])
        try h.launch()
        try h.perform(.home)
        try h.perform(.foreground)
        h.hooks["a applicationDidReceiveMemoryWarning:"] = { _ in usleep(300_000) }
        let trace = try h.perform(.memoryWarning(.warning))
        XCTAssertEqual(killed.withLock { $0 }, ["hang applicationDidReceiveMemoryWarning: a"])
        // As a phase overrun: the watchdog line, then the kill; b is never called, no willTerminate.
        XCTAssertEqual(trace.count, 3, "\(trace)")
        XCTAssertEqual(trace[0], "delegate applicationDidReceiveMemoryWarning: [a]")
        XCTAssertTrue(trace[1].hasPrefix("watchdog applicationDidReceiveMemoryWarning: [a] (applicationDidReceiveMemoryWarning: by 'a' overran the hang budget: at least 0.1"), trace[1])
        XCTAssertEqual(trace[2], "state not-running (killed by the watchdog)")
        XCTAssertEqual(h.app.state, .notRunning)
    }

    func testAHangOutsideAnyActionKillsTheApplicationOnTheNextTurn() throws {
        let h = try Harness({ $0.budgets.hang = .milliseconds(100) })
        try h.launch()
        h.app.center.observe(custom, owner: "com.example.slow") { _ in usleep(300_000) }
        h.app.center.post(custom)  // a plain post from the loop thread: no action is running
        try h.runLoop(until: { h.app.state == .notRunning }, timeout: .seconds(5))
        XCTAssertTrue(h.trace.suffix(2).first?.hasPrefix("watchdog com.example.again [com.example.slow] (com.example.again by 'com.example.slow' overran the hang budget") ?? false,
                      "\(h.trace.suffix(2))")
        XCTAssertEqual(h.trace.last, "state not-running (killed by the watchdog)")
        // The application can be launched again, and is not killed again.
        try h.launch()
        XCTAssertEqual(h.app.state, .active)
    }

    func testCallbacksInsideABudgetedPhaseHaveThePhaseBudgetNotTheHangBudget() throws {
        let reports = Mutex<[String]>([])
        let h = try Harness({
            $0.budgets.hang = .milliseconds(100)
            $0.budgets.launch = .seconds(5)
            $0.watchdogPolicy = .report
            $0.onWatchdogReport = { report in reports.withLock { $0.append(report.budgetName) } }
        })
        h.hooks["a application:didFinishLaunchingWithOptions:"] = { _ in usleep(300_000) }
        try h.launch()
        XCTAssertEqual(reports.withLock { $0 }, [], "300 ms inside the 5 s launch phase is no hang")
        XCTAssertFalse(h.trace.contains { $0.hasPrefix("watchdog") })
    }

    func testAQuickCallbackAfterAnotherIsANewCallbackWithItsOwnBudget() throws {
        // Ten 60 ms observers in one post: 600 ms in all, but each callback keeps a 200 ms budget.
        let reports = Mutex<[String]>([])
        let h = try Harness({
            $0.budgets.hang = .milliseconds(200)
            $0.watchdogPolicy = .report
            $0.onWatchdogReport = { report in reports.withLock { $0.append(report.description) } }
        })
        try h.launch()
        // One plugin's ten observers: every observer is a callback of its own, even of the same owner.
        for _ in 0..<10 { h.app.center.observe(custom, owner: "com.example.o") { _ in usleep(60_000) } }
        h.app.center.post(custom)
        XCTAssertEqual(reports.withLock { $0 }, [])
    }

    // MARK: What the loop thread is running

    func testRunningCallbacksNameTheOutermostAndTheInnermost() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertNil(h.app.runningCallbacks, "the loop thread runs no callback between actions")
        var seen: [String] = []
        let inner = try NotificationName("com.example.inner")
        h.app.center.observe(inner, owner: "com.example.b") { [unowned h] _ in
            let running = h.app.runningCallbacks
            seen.append("\(running?.outermost.description ?? "-") / \(running?.innermost.description ?? "-")")
        }
        h.app.center.observe(custom, owner: "com.example.a") { [unowned h] _ in
            h.app.center.post(inner)
            seen.append("back in \(h.app.runningCallbacks?.innermost.description ?? "-")")
        }
        h.app.center.post(custom)
        XCTAssertEqual(seen, ["com.example.again observer of 'com.example.a' / com.example.inner observer of 'com.example.b'",
                              "back in com.example.again observer of 'com.example.a'"])
        XCTAssertNil(h.app.runningCallbacks)
        h.hooks["a applicationDidReceiveMemoryWarning:"] = { app in
            seen.append(app.runningCallbacks.map { "\($0.outermost.kind) \($0.outermost.owner)" } ?? "-")
        }
        try h.perform(.memoryWarning(.warning))
        XCTAssertEqual(seen.last, "delegate(\"applicationDidReceiveMemoryWarning:\") a")
        XCTAssertEqual(h.app.runMarked("init", owner: "/p/libx.so") { h.app.runningCallbacks?.outermost.description }, "init of '/p/libx.so'")
    }

    // MARK: The termination deadline

    /// On a manual clock the terminate budget passes in real time too (the watchdog's backstop thread):
    /// a host moving the clock (`run --record`, `--clock virtual`) stuck in a callback still ends.
    func testOnAManualClockATerminationStuckInACallbackIsReportedInRealTime() throws {
        let overdue = Mutex<[(WatchdogReport, Bool)]>([])
        let loopThread = pthread_self()
        let h = try Harness(clock: .manual) {
            $0.budgets.terminate = .milliseconds(150)
            $0.onTerminationOverdue = { report in overdue.withLock { $0.append((report, pthread_equal(pthread_self(), loopThread) == 0)) } }
        }
        try h.launch()
        h.app.center.observe(custom, owner: "com.example.stuck") { [unowned h] _ in
            h.app.armTerminationDeadline(reason: "signal SIGTERM")
            usleep(400_000)  // the manual clock does not move
        }
        h.app.center.post(custom)
        let got = overdue.withLock { $0 }
        XCTAssertEqual(got.count, 1)
        let (report, offLoop) = try XCTUnwrap(got.first)
        XCTAssertTrue(offLoop)
        XCTAssertEqual(report.budgetKind, .terminate)
        XCTAssertEqual(report.observer, "com.example.stuck")
        XCTAssertGreaterThanOrEqual(report.elapsed, .milliseconds(150))
        XCTAssertLessThan(report.elapsed, .milliseconds(400))
        XCTAssertEqual(h.app.clockElapsed, .zero, "the manual clock stood still")
    }

    func testATerminationThatDoesNotEndInTimeIsReportedFromTheWatchdogThread() throws {
        let overdue = Mutex<[(WatchdogReport, Bool)]>([])
        let loopThread = pthread_self()
        let h = try Harness({
            $0.budgets.terminate = .milliseconds(150)
            $0.onTerminationOverdue = { report in overdue.withLock { $0.append((report, pthread_equal(pthread_self(), loopThread) == 0)) } }
        })
        try h.launch()
        XCTAssertEqual(h.app.configuration.budgets.terminationBudget, .milliseconds(150))
        XCTAssertFalse(h.app.isTerminationDeadlineArmed)
        h.app.center.observe(custom, owner: "com.example.stuck") { [unowned h] _ in
            h.app.armTerminationDeadline(reason: "signal SIGTERM")
            h.app.armTerminationDeadline(reason: "signal SIGINT")  // the first deadline holds
            usleep(400_000)
        }
        h.app.center.post(custom)
        let got = overdue.withLock { $0 }
        XCTAssertEqual(got.count, 1)
        let (report, offLoop) = try XCTUnwrap(got.first)
        XCTAssertTrue(offLoop)
        XCTAssertEqual(report.budgetKind, .terminate)
        XCTAssertEqual(report.observer, "com.example.stuck")
        XCTAssertEqual(report.event, "com.example.again")
        let stuck = RunningCallback(kind: .observer(custom), owner: "com.example.stuck")
        guard case .termination("signal SIGTERM", stuck, stuck) = report.subject else { return XCTFail("subject: \(report.subject)") }
        XCTAssertTrue(report.description.hasPrefix("signal SIGTERM: the application did not end within the terminate budget (0.15"), report.description)
        XCTAssertTrue(report.description.hasSuffix(" of 0.150 s); the main thread was still in the com.example.again observer of 'com.example.stuck'"),
                      report.description)
        XCTAssertTrue(h.app.isTerminationDeadlineArmed)
    }

    func testTheDefaultTerminateBudgetCoversATerminateThatKeepsEveryBudget() {
        var budgets = Configuration.Budgets()
        XCTAssertEqual(budgets.hang, .seconds(5))
        XCTAssertNil(budgets.terminate)
        XCTAssertEqual(budgets.terminationBudget, .seconds(15))
        budgets.didEnterBackground = .seconds(20)
        XCTAssertEqual(budgets.terminationBudget, .seconds(30), "follows the phase budgets it must cover")
        budgets.terminate = .seconds(2)
        XCTAssertEqual(budgets.terminationBudget, .seconds(2))
    }

    // MARK: The nesting limit

    func testAnObserverRepostingFromItsOwnCallbackIsRefusedAtTheLimitAndTheOthersGoOn() throws {
        let h = try Harness()
        try h.launch()
        var depth = 0, deepest = 0
        var outcomes: [String] = []
        let name = custom
        h.app.center.observe(name, owner: "com.example.again") { [unowned h] _ in
            depth += 1
            deepest = max(deepest, depth)
            if depth < 100_000 {
                let outcome = h.app.center.post(nameID: name.id, sender: 0, userInfo: nil)
                if outcome != .posted { outcomes.append("\(outcome) at \(depth)") }
            }
            depth -= 1
        }
        XCTAssertEqual(h.app.center.post(nameID: name.id, sender: 0, userInfo: nil), .posted)
        XCTAssertEqual(AppNotificationCenter.maximumNesting, 64)
        XCTAssertEqual(deepest, 64, "64 nested dispatches ran; the 65th post was refused")
        XCTAssertEqual(outcomes, ["nestingLimit at 64"])
        let refused = h.fullTrace.filter { $0.kind == .error }
        XCTAssertEqual(refused.count, 1)
        XCTAssertEqual(refused.first?.description,
                       "error post refused [com.example.again] (com.example.again: 64 dispatches were already nested (the limit is 64); nothing was delivered)")
        guard case .postRefused(name, 64, "com.example.again")? = refused.first?.payload else { return XCTFail("payload") }
        // The host goes on: the lifecycle and other observers are untouched.
        XCTAssertEqual(try h.seenDuring(.memoryWarning(.warning)), ["a applicationDidReceiveMemoryWarning: state=active", #"note didReceiveMemoryWarning {"level":"warning"}"#])
        XCTAssertNil(h.app.runningCallbacks)
    }
}
