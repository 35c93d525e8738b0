import XCTest
@testable import AppLifecycle

/// One test per row of the sequence table in LIFECYCLE.md: the exact trace and the state after each step.
final class SequenceTests: XCTestCase {
    let willFinish = "delegate application:willFinishLaunchingWithOptions:"
    let didFinish = "delegate application:didFinishLaunchingWithOptions:"

    func testLaunchIntoForeground() throws {
        let h = try Harness(delegates: ["a", "b"])
        XCTAssertEqual(try h.perform(.launch(options: ["k": "v"])), [
            "state inactive",
            "\(willFinish) [a]", "\(willFinish) [b]",
            "\(didFinish) [a]", "\(didFinish) [b]",
            #"notification didFinishLaunching ({"k":"v"})"#,
            "state active",
            "delegate applicationDidBecomeActive: [a]", "delegate applicationDidBecomeActive: [b]",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(h.app.state, .active)
        // Launch options reach both launch methods and the notification's userInfo; state is inactive during launch.
        XCTAssertEqual(h.seen, [
            #"a application:willFinishLaunchingWithOptions: {"k":"v"} state=inactive"#,
            #"b application:willFinishLaunchingWithOptions: {"k":"v"} state=inactive"#,
            #"a application:didFinishLaunchingWithOptions: {"k":"v"} state=inactive"#,
            #"b application:didFinishLaunchingWithOptions: {"k":"v"} state=inactive"#,
            #"note didFinishLaunching {"k":"v"}"#,
            "a applicationDidBecomeActive: state=active",
            "b applicationDidBecomeActive: state=active",
            "note didBecomeActive",
        ])
    }

    func testLaunchIntoBackgroundThenSuspends() throws {
        let h = try Harness()
        XCTAssertEqual(try h.perform(.launch(inBackground: true)), [
            "state background",
            "\(willFinish) [a]", "\(didFinish) [a]",
            "notification didFinishLaunching",
            "delegate applicationDidEnterBackground: [a]",
            "notification didEnterBackground",
            "state suspended",
        ])
        XCTAssertEqual(h.seen.first, "a application:willFinishLaunchingWithOptions: {} state=background")
        XCTAssertEqual(h.app.state, .suspended)
    }

    func testLaunchToOpenURL() throws {
        let h = try Harness()
        XCTAssertEqual(try h.perform(.openURL("app://item/7", sourceApplication: "com.example.mail", annotation: ["n": 1])), [
            "state inactive",
            "\(willFinish) [a]", "\(didFinish) [a]",
            #"notification didFinishLaunching ({"url":"app://item/7","sourceApplication":"com.example.mail","annotation":{"n":1}})"#,
            "delegate application:openURL:sourceApplication:annotation: [a]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
        XCTAssertTrue(h.seen.contains(#"a application:openURL:sourceApplication:annotation: app://item/7 com.example.mail {"n":1} state=inactive"#))
        // Running already: only openURL.
        XCTAssertEqual(try h.perform(.openURL("app://item/8")), ["delegate application:openURL:sourceApplication:annotation: [a]"])
    }

    func testOpenURLIsSkippedWhenALaunchMethodSaysNo() throws {
        let h = try Harness(delegates: ["a", "b"])
        h.answers["b"] = [.didFinishLaunching: false]
        let trace = try h.perform(.openURL("app://x"))
        XCTAssertFalse(trace.contains { $0.hasPrefix("delegate application:openURL") })
        XCTAssertEqual(trace.filter { $0.hasPrefix("skipped") },
                       ["skipped application:openURL:sourceApplication:annotation: (a launch method returned false)"])
        XCTAssertEqual(h.app.state, .active)
    }

    func testOpenURLBringsASuspendedApplicationForward() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.openURL("app://x")), [
            "state background",
            "notification willEnterForeground",
            "delegate applicationWillEnterForeground: [a]",
            "state inactive",
            "delegate application:openURL:sourceApplication:annotation: [a]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
    }

    func testAlertInterruptionDismissedAndTaken() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertEqual(try h.perform(.beginInterruption), [
            "delegate applicationWillResignActive: [a]", "notification willResignActive", "state inactive",
        ])
        XCTAssertEqual(h.app.state, .inactive)
        XCTAssertEqual(try h.perform(.dismissInterruption), [
            "state active", "delegate applicationDidBecomeActive: [a]", "notification didBecomeActive",
        ])
        XCTAssertEqual(h.app.state, .active)
        try h.perform(.beginInterruption)
        XCTAssertEqual(try h.perform(.acceptInterruption), [
            "state background", "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "state suspended",
        ])
        XCTAssertEqual(h.app.state, .suspended)
    }

    func testHomeButton() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertEqual(try h.perform(.home), [
            "delegate applicationWillResignActive: [a]", "notification willResignActive", "state inactive",
            "state background", "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "state suspended",
        ])
        XCTAssertEqual(h.app.state, .suspended)
    }

    func testReturnToTheApplication() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        let start = h.seen.count
        XCTAssertEqual(try h.perform(.foreground), [
            "state background",
            "notification willEnterForeground", "delegate applicationWillEnterForeground: [a]",
            "state inactive", "state active",
            "delegate applicationDidBecomeActive: [a]", "notification didBecomeActive",
        ])
        XCTAssertEqual(Array(h.seen[start...]), [
            "note willEnterForeground", "a applicationWillEnterForeground: state=background",
            "a applicationDidBecomeActive: state=active", "note didBecomeActive",
        ])
        XCTAssertEqual(h.app.state, .active)
    }

    func testLockThenUnlock() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertEqual(try h.perform(.lock), [
            "delegate applicationWillResignActive: [a]", "notification willResignActive", "state inactive",
            "state background", "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "delegate applicationProtectedDataWillBecomeUnavailable: [a]", "notification protectedDataWillBecomeUnavailable",
            "state suspended",
        ])
        XCTAssertTrue(h.app.isDeviceLocked)
        XCTAssertFalse(h.app.isProtectedDataAvailable)
        XCTAssertEqual(try h.perform(.unlock), [
            "queued protectedDataDidBecomeAvailable (coalescing kind protected-data)",
            "state background",
            "delegate applicationProtectedDataDidBecomeAvailable: [a]", "notification protectedDataDidBecomeAvailable",
            "notification willEnterForeground", "delegate applicationWillEnterForeground: [a]",
            "state inactive", "state active",
            "delegate applicationDidBecomeActive: [a]", "notification didBecomeActive",
        ])
        XCTAssertFalse(h.app.isDeviceLocked)
        XCTAssertTrue(h.app.isProtectedDataAvailable)
        XCTAssertEqual(h.app.state, .active)
    }

    func testUnlockWhileStillRunningInTheBackground() throws {
        let h = try Harness()
        try h.launch()
        _ = try h.app.beginBackgroundTask(named: "upload")
        try h.perform(.lock)
        XCTAssertEqual(h.app.state, .background)
        XCTAssertEqual(try h.perform(.unlock), [
            "delegate applicationProtectedDataDidBecomeAvailable: [a]", "notification protectedDataDidBecomeAvailable",
            "notification willEnterForeground", "delegate applicationWillEnterForeground: [a]",
            "state inactive", "state active",
            "delegate applicationDidBecomeActive: [a]", "notification didBecomeActive",
        ])
    }

    func testMemoryWarningInEveryRunningState() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertEqual(try h.perform(.memoryWarning(.critical)), [
            "delegate applicationDidReceiveMemoryWarning: [a]",
            #"notification didReceiveMemoryWarning ({"level":"critical"})"#,
        ])
        XCTAssertEqual(h.app.state, .active)
        XCTAssertEqual(h.seen.last, #"note didReceiveMemoryWarning {"level":"critical"}"#)
        try h.perform(.beginInterruption)
        XCTAssertEqual(try h.perform(.memoryWarning(.warning)).count, 2)
        XCTAssertEqual(h.app.state, .inactive)
        _ = try h.app.beginBackgroundTask()
        try h.perform(.acceptInterruption)
        XCTAssertEqual(try h.perform(.memoryWarning(.normal)).count, 2)
        XCTAssertEqual(h.app.state, .background)
    }

    /// Seed 002: "If your app does not release enough memory during low-memory conditions, the system
    /// may terminate it outright." With a limit of 2, two warnings in a row are delivered; the third
    /// terminates the application with no callback. A `normal` warning relieves (the count starts
    /// again), and so does a new run (decision 50).
    func testUnrelievedMemoryWarningsTerminateTheApplicationOutright() throws {
        let h = try Harness {
            $0.memoryWarningLimit = 2
            $0.backgroundModes = [.audio]  // keeps it running in the background, where warnings still come
        }
        try h.launch()
        try h.perform(.memoryWarning(.warning))
        try h.perform(.memoryWarning(.critical))
        try h.perform(.memoryWarning(.normal))  // relief
        try h.perform(.memoryWarning(.warning))
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.memoryWarning(.critical)), [
            "delegate applicationDidReceiveMemoryWarning: [a]",
            #"notification didReceiveMemoryWarning ({"level":"critical"})"#,
        ], "the second since the relief is still delivered (in the background too)")
        XCTAssertEqual(try h.perform(.memoryWarning(.warning)), [
            "state not-running (terminated outright: memory still short after 2 memory warnings without relief (the memory-warning limit); no callback)",
        ])
        XCTAssertEqual(h.app.state, .notRunning)
        // A new run starts counting again.
        try h.launch()
        try h.perform(.memoryWarning(.warning))
        try h.perform(.memoryWarning(.warning))
        XCTAssertEqual(h.app.state, .active)
        // Without a limit (the default) warnings never end the application.
        let unlimited = try Harness()
        try unlimited.launch()
        for _ in 0..<50 { try unlimited.perform(.memoryWarning(.critical)) }
        XCTAssertEqual(unlimited.app.state, .active)
    }

    /// Seed 000: `applicationWillTerminate:` "may be called in situations where the app is running in
    /// the background (not suspended) and the system needs to terminate it"; seed 003: "iOS may purge
    /// background apps". A purge of an application running in the background (held there by a
    /// background task) runs the willTerminate sequence, then drops what it held (decision 49).
    func testPurgeWhileRunningInTheBackgroundCallsWillTerminate() throws {
        let h = try Harness()
        try h.launch()
        var expired = false
        _ = try h.app.beginBackgroundTask(named: "upload") { expired = true }
        try h.perform(.home)
        XCTAssertEqual(h.app.state, .background, "the task keeps it running")
        XCTAssertEqual(try h.perform(.purge), [
            "delegate applicationWillTerminate: [a]",
            "notification willTerminate",
            "state not-running (purged while running in the background, after applicationWillTerminate:)",
        ])
        XCTAssertEqual(h.app.state, .notRunning)
        XCTAssertFalse(expired, "the task is dropped with the process; its expiration handler does not run")
        XCTAssertEqual(h.app.backgroundTasks.count, 0)
    }

    func testPurgeWhileSuspendedDeliversNothing() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.seenDuring(.purge), [])
        XCTAssertEqual(h.trace.last, "state not-running (purged while suspended: no callback, as on iOS)")
        XCTAssertEqual(h.app.state, .notRunning)
    }

    func testTerminateWhileRunningInTheBackground() throws {
        let h = try Harness()
        try h.launch()
        _ = try h.app.beginBackgroundTask(named: "sync")
        try h.perform(.home)
        XCTAssertEqual(h.app.state, .background)
        XCTAssertEqual(try h.perform(.terminate), [
            "delegate applicationWillTerminate: [a]", "notification willTerminate", "state not-running",
        ])
        XCTAssertEqual(h.seen.suffix(2), ["a applicationWillTerminate: state=background", "note willTerminate"])
        XCTAssertTrue(h.app.backgroundTasks.isEmpty)
    }

    func testTerminateWhileSuspendedGivesNoCallback() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.seenDuring(.terminate), [])
        XCTAssertEqual(h.app.state, .notRunning)
    }

    func testExitsOnSuspendNeverReachesTheBackground() throws {
        let h = try Harness { $0.exitsOnSuspend = true }
        try h.launch()
        XCTAssertEqual(try h.perform(.home), [
            "delegate applicationWillResignActive: [a]", "notification willResignActive", "state inactive",
            "delegate applicationWillTerminate: [a]", "notification willTerminate", "state not-running",
        ])
        XCTAssertFalse(h.trace.contains("state background"))
        XCTAssertFalse(h.trace.contains("state suspended"))
    }

    func testSignificantTimeChangePostsBeforeTheDelegateAndCoalescesWhileSuspended() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertEqual(try h.perform(.significantTimeChange), [
            "notification significantTimeChange", "delegate applicationSignificantTimeChange: [a]",
        ])
        XCTAssertEqual(h.seen.suffix(2), ["note significantTimeChange", "a applicationSignificantTimeChange: state=active"])
        try h.perform(.home)
        for _ in 0..<3 {
            XCTAssertEqual(try h.seenDuring(.significantTimeChange), [])
        }
        XCTAssertEqual(h.app.queuedNotifications.map(\.count), [3])
        XCTAssertEqual(try h.perform(.foreground).prefix(4), [
            "state background",
            "notification significantTimeChange (coalesced from 3)", "delegate applicationSignificantTimeChange: [a]",
            "notification willEnterForeground",
        ])
    }

    func testBackgroundFetchLaunchesIntoTheBackgroundAndHoldsUntilCompletion() throws {
        let h = try Harness { $0.backgroundModes = [.fetch] }
        XCTAssertEqual(try h.perform(.backgroundFetch), [
            "state background",
            "\(willFinish) [a]", "\(didFinish) [a]", "notification didFinishLaunching",
            "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "delegate application:performFetchWithCompletionHandler: [a]",
        ])
        XCTAssertEqual(h.app.state, .background, "a pending completion handler holds the application in the background")
        h.completions[0](.newData)
        XCTAssertEqual(h.trace.suffix(2), ["completion application:performFetchWithCompletionHandler: [a] (newData)", "state suspended"])
        // From suspended: woken into the background first, with didEnterBackground before the event
        // (seed 002, issue 9 item 1: as after a background launch).
        XCTAssertEqual(try h.perform(.backgroundFetch), [
            "state background",
            "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "delegate application:performFetchWithCompletionHandler: [a]",
        ])
        h.completions[1](.noData)
        XCTAssertEqual(h.app.state, .suspended)
    }

    func testRemoteNotificationLaunchesWithThePayloadInTheOptions() throws {
        let h = try Harness { $0.backgroundModes = [.remoteNotification] }
        let trace = try h.perform(.remoteNotification(["badge": 3]))
        XCTAssertEqual(trace, [
            "state background",
            "\(willFinish) [a]", "\(didFinish) [a]", #"notification didFinishLaunching ({"remoteNotification":{"badge":3}})"#,
            "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
        ])
        XCTAssertTrue(h.seen.contains(#"a application:didReceiveRemoteNotification:fetchCompletionHandler: {"badge":3} state=background"#))
        h.completions[0](.failed)
        XCTAssertEqual(h.app.state, .suspended)
    }
}
