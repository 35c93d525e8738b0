import Foundation
import Synchronization
import XCTest
@testable import AppLifecycle

final class EngineBehaviourTests: XCTestCase {
    // MARK: Illegal actions

    func testIllegalActionsNameTheActionAndStateAndChangeNothing() throws {
        let h = try Harness()
        XCTAssertApplicationError(try h.app.perform(.home), .illegalAction,
                                  "action 'home' is not allowed while the application is not-running: only a foreground application can be switched away from")
        XCTAssertApplicationError(try h.app.perform(.purge), .illegalAction,
                                  "action 'purge' is not allowed while the application is not-running: only an application in the background (running or suspended) is purged")
        XCTAssertApplicationError(try h.app.perform(.terminate), .illegalAction,
                                  "action 'terminate' is not allowed while the application is not-running")
        XCTAssertEqual(h.trace, [], "a refused action leaves no trace and changes nothing")
        XCTAssertEqual(h.app.state, .notRunning)

        try h.launch()
        let before = h.trace.count
        XCTAssertApplicationError(try h.app.perform(.launch()), .illegalAction,
                                  "action 'launch' is not allowed while the application is active: it is already running")
        XCTAssertApplicationError(try h.app.perform(.dismissInterruption), .illegalAction,
                                  "action 'dismiss' is not allowed while the application is active: no interruption is in progress")
        XCTAssertApplicationError(try h.app.perform(.foreground), .illegalAction,
                                  "action 'foreground' is not allowed while the application is active: it is already in the foreground")
        XCTAssertApplicationError(try h.app.perform(.unlock), .illegalAction,
                                  "action 'unlock' is not allowed while the application is active: the device is not locked")
        XCTAssertApplicationError(try h.app.perform(.backgroundFetch), .backgroundModeMissing,
                                  "action 'fetch' needs the 'fetch' background mode, which the application does not declare")
        try h.perform(.home)
        XCTAssertApplicationError(try h.app.perform(.memoryWarning()), .illegalAction,
                                  "action 'memory-warning' is not allowed while the application is suspended: a suspended application runs no code; memory pressure purges it instead")
        XCTAssertApplicationError(try h.app.perform(.remoteNotification()), .backgroundModeMissing,
                                  "action 'remote-notification' needs the 'remote-notification' background mode to wake an application that is suspended")
        try h.perform(.lock)
        XCTAssertApplicationError(try h.app.perform(.foreground), .illegalAction,
                                  "action 'foreground' is not allowed while the application is suspended: the device is locked; unlock it first")
        XCTAssertEqual(h.trace.count, before + 8, "only home and lock left events")
        XCTAssertEqual(h.app.state, .suspended)

        do {
            try h.app.perform(.home)
            XCTFail("expected an error")
        } catch {
            XCTAssertEqual(error.action, "home")
            XCTAssertEqual(error.state, .suspended)
        }
    }

    func testAnActionFromInsideACallbackIsRefused() throws {
        let h = try Harness()
        var inner: ApplicationError?
        h.hooks["a applicationDidBecomeActive:"] = { app in
            do { try app.perform(.home) } catch let error as ApplicationError { inner = error } catch {}
        }
        try h.launch()
        XCTAssertEqual(inner?.code, .actionInProgress)
        XCTAssertEqual(inner?.message, "action 'home' cannot start while 'launch' is in progress (called from inside a callback)")
        XCTAssertEqual(h.app.state, .active)
    }

    func testPerformFromAnotherThreadIsRefused() throws {
        let h = try Harness()
        let app = h.app
        let result = Mutex<String?>(nil)
        let thread = Thread {
            do { try app.perform(.launch()) } catch let error as ApplicationError { result.withLock { $0 = error.message } } catch {}
        }
        thread.start()
        while thread.isExecuting || result.withLock({ $0 }) == nil { usleep(1000) }
        XCTAssertEqual(result.withLock { $0 }, "perform(launch) must be called on the thread that runs the application's main run loop")
        XCTAssertEqual(h.app.state, .notRunning)
    }

    // MARK: Coalescing

    func testWhileSuspendedNotificationsCoalesceToTheNetChangeDeliveredFirst() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        let start = h.seen.count
        try h.perform(.significantTimeChange)
        try h.perform(.lock)
        try h.perform(.significantTimeChange)
        try h.perform(.unlock)
        h.app.center.post(.currentLocaleDidChange, userInfo: ["locale": "fr_FR"])
        h.app.center.post(.currentLocaleDidChange, userInfo: ["locale": "de_DE"])
        h.app.center.post(try NotificationName("com.example.custom"))
        XCTAssertEqual(h.seen.count, start, "a suspended application runs no observer")
        XCTAssertEqual(h.trace.last, "discarded com.example.custom (suspended: only notifications of the coalescing kinds are queued)")
        // The lock and the unlock net out (seeds 000, 003): no protected-data entry is left.
        XCTAssertEqual(h.app.queuedNotifications.map { "\($0.name) ×\($0.count)" },
                       ["significantTimeChange ×2", "currentLocaleDidChange ×2"])
        XCTAssertEqual(h.app.state, .suspended, "unlocking does not bring forward an application that was not frontmost")

        XCTAssertEqual(try h.seenDuring(.foreground), [
            "note significantTimeChange",
            "a applicationSignificantTimeChange: state=background",
            #"note currentLocaleDidChange {"locale":"de_DE"}"#,
            "note willEnterForeground",
            "a applicationWillEnterForeground: state=background",
            "a applicationDidBecomeActive: state=active",
            "note didBecomeActive",
        ])
        XCTAssertTrue(h.app.queuedNotifications.isEmpty)
        XCTAssertTrue(h.app.isProtectedDataAvailable)
    }

    func testPurgeDropsTheQueue() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        try h.perform(.significantTimeChange)
        try h.perform(.purge)
        XCTAssertTrue(h.app.queuedNotifications.isEmpty)
        let start = h.seen.count
        try h.launch()
        XCTAssertFalse(h.seen[start...].contains("note significantTimeChange"))
    }

    // MARK: Background tasks

    func testABackgroundTaskKeepsTheApplicationOutOfSuspension() throws {
        let h = try Harness()
        try h.launch()
        var task: BackgroundTaskID?
        h.hooks["a applicationDidEnterBackground:"] = { app in task = try? app.beginBackgroundTask(named: "upload", owner: "a") }
        let trace = try h.perform(.home)
        XCTAssertEqual(trace.suffix(3), ["delegate applicationDidEnterBackground: [a]", "background-task begin [a] (#1 upload)",
                                         "notification didEnterBackground"])
        XCTAssertEqual(h.app.state, .background)
        XCTAssertEqual(h.app.backgroundTasks.map(\.description), ["#1 upload [a]"])
        let remaining = try XCTUnwrap(h.app.backgroundTimeRemaining)
        XCTAssertLessThanOrEqual(remaining, .seconds(30))
        XCTAssertGreaterThan(remaining, .seconds(29))
        try h.app.endBackgroundTask(try XCTUnwrap(task))
        XCTAssertEqual(h.trace.suffix(2), ["background-task end [a] (#1 upload)", "state suspended"])
        XCTAssertEqual(h.app.backgroundTimeRemaining, .zero)
        XCTAssertApplicationError(try h.app.endBackgroundTask(try XCTUnwrap(task)), .unknownBackgroundTask,
                                  "no open background task has id 1")
    }

    func testADeclaredContinuousBackgroundModeKeepsTheApplicationRunning() throws {
        let h = try Harness { $0.backgroundModes = [.audio] }
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(h.app.state, .background)
    }

    func testExpirationHandlerRunsBeforeTheTimeRunsOut() throws {
        let h = try Harness {
            $0.budgets.backgroundTask = .milliseconds(400)
            $0.budgets.expirationWarning = .milliseconds(150)
        }
        try h.launch()
        var task: BackgroundTaskID?
        var expiredAt: Duration?
        let begin = MonotonicInstant.now
        task = try h.app.beginBackgroundTask(named: "export") { [unowned h] in
            expiredAt = MonotonicInstant.now.duration(since: begin)
            if let task { try? h.app.endBackgroundTask(task) }
        }
        try h.perform(.home)
        try h.runLoop(until: { h.app.state == .suspended })
        XCTAssertEqual(h.trace.suffix(3), ["background-task expiring (#1 export)", "background-task end (#1 export)", "state suspended"])
        let at = try XCTUnwrap(expiredAt)
        XCTAssertGreaterThanOrEqual(at, .milliseconds(240), "not before budget − warning")
        XCTAssertFalse(h.trace.contains { $0.hasPrefix("watchdog") })
    }

    func testATaskStillOpenWhenTimeRunsOutGoesToTheWatchdogPolicy() throws {
        for policy in [Configuration.WatchdogPolicy.report, .terminate] {
            let reports = Mutex<[String]>([])
            let h = try Harness {
                $0.budgets.backgroundTask = .milliseconds(200)
                $0.budgets.expirationWarning = .milliseconds(50)
                $0.watchdogPolicy = policy
                $0.onWatchdogReport = { report in reports.withLock { $0.append(report.event) } }
            }
            try h.launch()
            _ = try h.app.beginBackgroundTask(named: "stuck", owner: "a") {}
            try h.perform(.home)
            try h.runLoop(until: { h.app.state != .background })
            XCTAssertEqual(reports.withLock { $0 }, ["background task #1 'stuck'"])
            let watchdogLine = try XCTUnwrap(h.trace.first { $0.hasPrefix("watchdog") })
            XCTAssertTrue(watchdogLine.hasPrefix("watchdog background task #1 'stuck' [a] (background task #1 'stuck' by 'a' overran the backgroundTask budget:"), watchdogLine)
            if policy == .report {
                XCTAssertEqual(h.trace.suffix(2), ["background-task end [a] (#1 ended by the watchdog)", "state suspended"])
            } else {
                XCTAssertEqual(h.trace.last, "state not-running (killed by the watchdog)")
                XCTAssertFalse(h.trace.contains("delegate applicationWillTerminate: [a]"), "a killed application gets no willTerminate")
            }
        }
    }

    // MARK: Watchdog on budgeted callbacks

    func testWatchdogReportsAnOverrunningCallbackWhileItRuns() throws {
        let reports = Mutex<[(String, Bool)]>([])
        let loopThread = pthread_self()
        let callbackRunning = Atomic<Bool>(false)
        // Reports come from the watchdog thread, while the callback is still running.
        let app2 = try Harness({
            $0.budgets.didEnterBackground = .milliseconds(100)
            $0.watchdogPolicy = .report
            $0.onWatchdogReport = { report in
                reports.withLock { $0.append((report.description, callbackRunning.load(ordering: .sequentiallyConsistent) && pthread_equal(pthread_self(), loopThread) == 0)) }
            }
        })
        app2.hooks["a applicationDidEnterBackground:"] = { _ in
            callbackRunning.store(true, ordering: .sequentiallyConsistent)
            usleep(400_000)
            callbackRunning.store(false, ordering: .sequentiallyConsistent)
        }
        try app2.launch()
        try app2.perform(.home)
        let got = reports.withLock { $0 }
        XCTAssertEqual(got.count, 1)
        XCTAssertTrue(got.first?.1 ?? false, "reported off the loop thread while the callback was still running")
        XCTAssertTrue(got.first?.0.hasPrefix("applicationDidEnterBackground: by 'a' overran the didEnterBackground budget: 0.") ?? false, got.first?.0 ?? "")
        // Policy report: the sequence goes on, and the trace says how long the callback really took.
        let line = try XCTUnwrap(app2.trace.first { $0.hasPrefix("watchdog") })
        XCTAssertTrue(line.hasPrefix("watchdog applicationDidEnterBackground: [a] (applicationDidEnterBackground: by 'a' overran the didEnterBackground budget: 0.4"), line)
        XCTAssertTrue(line.hasSuffix("of 0.100 s (policy: report))"), line)
        XCTAssertEqual(app2.trace.suffix(3).first, "notification didEnterBackground")
        XCTAssertEqual(app2.app.state, .suspended)
    }

    func testWatchdogTerminatePolicyKillsWithoutWillTerminate() throws {
        let killed = Mutex<[String]>([])
        let h = try Harness({
            $0.budgets.launch = .milliseconds(100)
            $0.watchdogPolicy = .terminate
            $0.onWatchdogKill = { report in killed.withLock { $0.append(report.description) } }
        }, delegates: ["a", "b"])
        h.hooks["b application:didFinishLaunchingWithOptions:"] = { _ in usleep(300_000) }
        let trace = try h.perform(.launch())
        XCTAssertEqual(trace.prefix(5), [
            "state inactive",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:willFinishLaunchingWithOptions: [b]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [b]",
        ][...])
        XCTAssertTrue(trace[5].hasPrefix("watchdog application:didFinishLaunchingWithOptions: [b] (application:didFinishLaunchingWithOptions: by 'b' overran the launch budget"), trace[5])
        XCTAssertEqual(trace.last, "state not-running (killed by the watchdog)")
        XCTAssertEqual(trace.count, 7, "nothing after the kill: no didFinishLaunching notification, no didBecomeActive, no willTerminate")
        XCTAssertEqual(killed.withLock { $0.count }, 1)
        XCTAssertEqual(h.app.state, .notRunning)
        // The application can be launched again.
        h.hooks = [:]
        try h.launch()
        XCTAssertEqual(h.app.state, .active)
    }

    func testWatchdogNamesTheObserverThatOverruns() throws {
        let reports = Mutex<[WatchdogReport]>([])
        let h = try Harness({
            $0.budgets.willTerminate = .milliseconds(80)
            $0.watchdogPolicy = .report
            $0.onWatchdogReport = { r in reports.withLock { $0.append(r) } }
        }, delegates: [])
        h.app.center.observe(.willTerminate, owner: "com.example.slow") { _ in usleep(250_000) }
        try h.launch()
        try h.perform(.terminate)
        let report = try XCTUnwrap(reports.withLock { $0.first })
        XCTAssertEqual(report.observer, "com.example.slow")
        XCTAssertEqual(report.event, "willTerminate")
        XCTAssertEqual(report.budgetName, "willTerminate")
        XCTAssertEqual(h.app.state, .notRunning)
    }

    // MARK: Completion handlers

    func testCompletionHandlerCalledTwiceIsReportedAndIgnored() throws {
        let h = try Harness { $0.backgroundModes = [.fetch] }
        try h.perform(.backgroundFetch)
        h.completions[0](.newData)
        h.completions[0](.failed)
        XCTAssertEqual(h.trace.suffix(3), [
            "completion application:performFetchWithCompletionHandler: [a] (newData)",
            "state suspended",
            "error completion handler called again [a] (application:performFetchWithCompletionHandler:: the second call (failed) is ignored)",
        ])
    }

    /// Five delegates' handlers pending at once, completed out of order: each is its own (found by
    /// its id, not mixed up), and the application suspends only after the last.
    func testPendingCompletionHandlersCompletedOutOfOrderAreEachTheirOwn() throws {
        let h = try Harness({ $0.backgroundModes = [.fetch] }, delegates: ["a", "b", "c", "d", "e"])
        try h.perform(.backgroundFetch)
        XCTAssertEqual(h.completions.count, 5)
        for (index, label) in [(3, "d"), (0, "a"), (4, "e"), (1, "b")] {
            h.completions[index](.newData)
            XCTAssertEqual(h.trace.last, "completion application:performFetchWithCompletionHandler: [\(label)] (newData)")
            XCTAssertEqual(h.app.state, .background, "c's handler still holds it")
        }
        h.completions[3](.noData)
        XCTAssertEqual(h.trace.last, "error completion handler called again [d] (application:performFetchWithCompletionHandler:: the second call (noData) is ignored)")
        h.completions[2](.failed)
        XCTAssertEqual(h.trace.suffix(2), ["completion application:performFetchWithCompletionHandler: [c] (failed)", "state suspended"])
    }

    func testCompletionHandlerFromAnotherThreadCompletesOnTheLoop() throws {
        let h = try Harness { $0.backgroundModes = [.fetch] }
        try h.perform(.backgroundFetch)
        let handler = h.completions[0]
        Thread { handler(.noData) }.start()
        try h.runLoop(until: { h.app.state == .suspended })
        XCTAssertEqual(h.trace.suffix(2), ["completion application:performFetchWithCompletionHandler: [a] (noData)", "state suspended"])
    }

    func testCompletionHandlerNeverCalledGoesToTheWatchdog() throws {
        let h = try Harness {
            $0.backgroundModes = [.fetch]
            $0.budgets.completionHandler = .milliseconds(150)
            $0.watchdogPolicy = .terminate
        }
        try h.perform(.backgroundFetch)
        try h.runLoop(until: { h.app.state == .notRunning })
        XCTAssertEqual(h.trace.suffix(2), [
            "watchdog completion handler of application:performFetchWithCompletionHandler: [a] (completion handler of application:performFetchWithCompletionHandler: by 'a' overran the completionHandler budget: 0.150 s of 0.150 s (policy: terminate))",
            "state not-running (killed by the watchdog)",
        ])
        // A call after the application stopped changes nothing.
        h.completions[0](.newData)
        XCTAssertEqual(h.app.state, .notRunning)
    }

    // MARK: Delegates

    func testBooleanAnswersCombine() throws {
        // Launch: any delegate's NO blocks the URL; unimplemented methods do not count.
        let h = try Harness(delegates: ["a"])
        var onlyWillFinish = DelegateHandlers()
        onlyWillFinish.willFinishLaunching = { _, _ in true }
        try h.app.addDelegate(onlyWillFinish, id: "b")
        try h.perform(.openURL("app://ok"))
        XCTAssertTrue(h.trace.contains("delegate application:openURL:sourceApplication:annotation: [a]"))
        XCTAssertApplicationError(_ = try h.app.addDelegate(onlyWillFinish, id: "b"), .invalidArgument,
                                  "a delegate with id 'b' is already registered")
    }

    func testProtocolDelegateAndRespondsTo() throws {
        final class Minimal: ApplicationDelegate {
            var calls: [String] = []
            func respondsTo(_ method: DelegateMethod) -> Bool { method == .didBecomeActive }
            func applicationDidBecomeActive(_ application: Application) { calls.append("active \(application.state)") }
        }
        let h = try Harness(delegates: [])
        let d = Minimal()
        try h.app.addDelegate(d, id: "minimal")
        XCTAssertEqual(try h.perform(.launch()), [
            "state inactive", "notification didFinishLaunching", "state active",
            "delegate applicationDidBecomeActive: [minimal]", "notification didBecomeActive",
        ])
        XCTAssertEqual(d.calls, ["active active"])
    }

    // MARK: State preservation

    func testStateIsSavedOnBackgroundAndRestoredBetweenWillAndDidFinish() throws {
        let folder = NSTemporaryDirectory() + "lc-preserve-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        func keeper(_ h: Harness, counter: Int64, restored: @escaping (Int64?) -> Void) -> DelegateHandlers {
            var d = DelegateHandlers()
            d.willFinishLaunching = { _, _ in true }
            d.didFinishLaunching = { _, _ in true }
            d.shouldSaveApplicationState = { _, coder in coder["version"] = 1; return true }
            d.willEncodeRestorableState = { _, coder in coder["counter"] = .int(counter) }
            d.shouldRestoreApplicationState = { _, coder in coder["version"] == 1 }
            d.didDecodeRestorableState = { _, coder in restored(coder["counter"]?.intValue) }
            return d
        }
        let first = try Harness({ $0.archiveDirectory = folder }, delegates: [])
        try first.app.addDelegate(keeper(first, counter: 41, restored: { _ in }), id: "com.example.keeper")
        try first.launch()
        // Saved after didEnterBackground, before suspension.
        XCTAssertEqual(try first.perform(.home).suffix(6), [
            "state background",
            "notification didEnterBackground",
            "delegate application:shouldSaveApplicationState: [com.example.keeper]",
            "delegate application:willEncodeRestorableStateWithCoder: [com.example.keeper]",
            "archive saved [com.example.keeper] (2 keys)",
            "state suspended",
        ])

        var restored: Int64?
        let second = try Harness({ $0.archiveDirectory = folder }, delegates: [])
        try second.app.addDelegate(keeper(second, counter: 0, restored: { restored = $0 }), id: "com.example.keeper")
        XCTAssertEqual(try second.perform(.launch()).prefix(7), [
            "state inactive",
            "delegate application:willFinishLaunchingWithOptions: [com.example.keeper]",
            "archive read [com.example.keeper] (2 keys)",
            "delegate application:shouldRestoreApplicationState: [com.example.keeper]",
            "delegate application:didDecodeRestorableStateWithCoder: [com.example.keeper]",
            "delegate application:didFinishLaunchingWithOptions: [com.example.keeper]",
            "notification didFinishLaunching",
        ])
        XCTAssertEqual(restored, 41)
    }

    func testACorruptArchiveIsReportedAndLaunchGoesOn() throws {
        let folder = NSTemporaryDirectory() + "lc-corrupt-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data("not an archive at all".utf8).write(to: URL(fileURLWithPath: folder + "/com.example.keeper.lcarchive"))
        var d = DelegateHandlers()
        var decoded = false
        d.shouldSaveApplicationState = { _, _ in true }  // preservation needs both (seed 002)
        d.shouldRestoreApplicationState = { _, _ in true }
        d.didDecodeRestorableState = { _, _ in decoded = true }
        let h = try Harness({ $0.archiveDirectory = folder }, delegates: [])
        try h.app.addDelegate(d, id: "com.example.keeper")
        let trace = try h.perform(.launch())
        XCTAssertEqual(trace[1], "error archive [com.example.keeper] (archive \(folder)/com.example.keeper.lcarchive is corrupt: not an archive (bad magic); launching without it)")
        XCTAssertFalse(decoded)
        XCTAssertEqual(h.app.state, .active)
    }

    // MARK: Edge rules

    func testAnApplicationThatExitsOnSuspendIsNeverRunInTheBackground() throws {
        let h = try Harness {
            $0.exitsOnSuspend = true
            $0.backgroundModes = [.fetch]
        }
        XCTAssertApplicationError(try h.app.perform(.launch(inBackground: true)), .illegalAction,
                                  "action 'launch background' is not allowed while the application is not-running: the application exits on suspend, so it never runs in the background (UIApplicationExitsOnSuspend)")
        XCTAssertApplicationError(try h.app.perform(.backgroundFetch), .illegalAction,
                                  "action 'fetch' is not allowed while the application is not-running: the application exits on suspend, so it never runs in the background (UIApplicationExitsOnSuspend)")
        XCTAssertEqual(h.trace, [])
    }

    func testADelegateRemovedMidSequenceIsNotCalledAgain() throws {
        let h = try Harness(delegates: ["a", "b"])
        try h.launch()
        var removed = false
        h.hooks["a application:openURL:sourceApplication:annotation:"] = { app in
            // b was added second: its token is 2.
            removed = app.removeDelegate(Application.DelegateToken(rawValue: 2))
        }
        let trace = try h.perform(.openURL("app://x"))
        XCTAssertTrue(removed)
        XCTAssertEqual(trace, ["delegate application:openURL:sourceApplication:annotation: [a]"])
        XCTAssertEqual(h.app.delegateIDs, ["a"])
    }

    /// A thousand delegates and scene delegates (plugins) found by halving (by token and by id):
    /// removed in a shuffled order, half by token and half by id, the rest keep their order and are
    /// the ones called; an id removed is free again and goes last; a removed token or id is refused.
    func testAThousandDelegatesRemovedInAnyOrderByTokenOrIdLeaveTheRestInOrder() throws {
        let h = try Harness(delegates: [])
        var calls: [String] = []
        var tokens: [String: Application.DelegateToken] = [:]
        var sceneTokens: [String: Application.DelegateToken] = [:]
        let ids = (0..<1_000).map { String(format: "com.example.d%04d", ($0 * 7_919) % 1_000) }  // not in id order
        for id in ids {
            var handlers = DelegateHandlers()
            handlers.didReceiveMemoryWarning = { _ in calls.append(id) }
            tokens[id] = try h.app.addDelegate(handlers, id: id)
            sceneTokens[id] = try h.app.addSceneDelegate(SceneDelegateHandlers(), id: id)
        }
        XCTAssertApplicationError(_ = try h.app.addDelegate(DelegateHandlers(), id: ids[500]), .invalidArgument,
                                  "a delegate with id '\(ids[500])' is already registered")
        XCTAssertApplicationError(_ = try h.app.addSceneDelegate(SceneDelegateHandlers(), id: ids[500]), .invalidArgument,
                                  "a scene delegate with id '\(ids[500])' is already registered")
        var generator = SystemRandomNumberGenerator()
        let gone = Set(ids.shuffled(using: &generator).prefix(600))
        for (index, id) in ids.enumerated() where gone.contains(id) {
            if index % 2 == 0 {
                XCTAssertTrue(h.app.removeDelegate(tokens[id]!))
                XCTAssertTrue(h.app.removeSceneDelegate(id: id))
            } else {
                XCTAssertTrue(h.app.removeDelegate(id: id))
                XCTAssertTrue(h.app.removeSceneDelegate(sceneTokens[id]!))
            }
        }
        let kept = ids.filter { !gone.contains($0) }
        XCTAssertEqual(h.app.delegateIDs, kept)
        XCTAssertEqual(h.app.sceneDelegateIDs, kept)
        for id in gone.prefix(50) {
            XCTAssertFalse(h.app.hasDelegate(id: id))
            XCTAssertFalse(h.app.removeDelegate(id: id))
            XCTAssertFalse(h.app.removeDelegate(tokens[id]!))
            XCTAssertFalse(h.app.removeSceneDelegate(id: id))
            XCTAssertFalse(h.app.removeSceneDelegate(sceneTokens[id]!))
        }
        XCTAssertTrue(kept.allSatisfy(h.app.hasDelegate(id:)))
        let again = gone.first!
        var handlers = DelegateHandlers()
        handlers.didReceiveMemoryWarning = { _ in calls.append(again) }
        let newToken = try h.app.addDelegate(handlers, id: again)
        XCTAssertNotEqual(newToken, tokens[again])
        try h.launch()
        try h.perform(.memoryWarning(.warning))
        XCTAssertEqual(calls, kept + [again])
    }

    func testAVoidDelegateRemovedByAnEarlierOneIsNotCalledAndOneAddedMeanwhileWaitsForTheNextAction() throws {
        let h = try Harness(delegates: [])
        var calls: [String] = []
        func delegate(_ label: String, _ extra: @escaping (Application) -> Void = { _ in }) -> DelegateHandlers {
            var handlers = DelegateHandlers()
            handlers.didReceiveMemoryWarning = { app in
                calls.append(label)
                extra(app)
            }
            return handlers
        }
        var replaced = false
        try h.app.addDelegate(delegate("a") { app in
            guard !replaced else { return }
            replaced = true
            // The first action: c goes, and a new c comes in its place.
            XCTAssertTrue(app.removeDelegate(id: "c"))
            _ = try? app.addDelegate(delegate("new c"), id: "c")
        }, id: "a")
        try h.app.addDelegate(delegate("b"), id: "b")
        try h.app.addDelegate(delegate("old c"), id: "c")
        try h.launch()
        try h.perform(.memoryWarning(.warning))
        XCTAssertEqual(calls, ["a", "b"], "the removed c is not called, the new one not in this action")
        calls = []
        try h.perform(.memoryWarning(.warning))
        XCTAssertEqual(calls, ["a", "b", "new c"])
        XCTAssertEqual(h.app.delegateIDs, ["a", "b", "c"])
    }

    func testAWatchdogKillStopsTheRestOfTheObserverList() throws {
        let h = try Harness({
            $0.budgets.didEnterBackground = .milliseconds(80)
            $0.watchdogPolicy = .terminate
        }, delegates: [], observe: false)
        var calls: [String] = []
        h.app.center.observe(.didEnterBackground, owner: "slow") { _ in calls.append("slow"); usleep(250_000) }
        h.app.center.observe(.didEnterBackground, owner: "next") { _ in calls.append("next") }
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(calls, ["slow"], "nothing runs after the kill")
        XCTAssertEqual(h.app.state, .notRunning)
        XCTAssertEqual(h.trace.last, "state not-running (killed by the watchdog)")
    }
}
