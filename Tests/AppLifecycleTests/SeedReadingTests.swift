import XCTest
@testable import AppLifecycle

/// The seed readings corrected by issue 9 ("Seed readings to correct"): each test names its seed and
/// asserts the exact order, or the exact state, an application relies on.
final class SeedReadingTests: XCTestCase {
    // MARK: 1. A wake from suspension gets didEnterBackground before the event

    // seed 002 (application:didReceiveRemoteNotification:fetchCompletionHandler:): "the system wakes up
    // or launches your app and puts it into the background running state before calling the method";
    // Apple, "About the background execution sequence": resume, applicationDidEnterBackground, then the event.
    func testSeed002WakeFromSuspensionDeliversDidEnterBackgroundBeforeTheFetch() throws {
        let h = try Harness { $0.backgroundModes = [.fetch] }
        try h.launch()
        try h.perform(.home)
        try h.perform(.significantTimeChange)
        XCTAssertEqual(try h.perform(.backgroundFetch), [
            "state background",
            "notification significantTimeChange",  // queued notifications first, as on every resume
            "delegate applicationSignificantTimeChange: [a]",
            "delegate applicationDidEnterBackground: [a]",
            "notification didEnterBackground",
            "delegate application:performFetchWithCompletionHandler: [a]",
        ])
        XCTAssertTrue(h.seen.suffix(3).elementsEqual([
            "a applicationDidEnterBackground: state=background", "note didEnterBackground",
            "a application:performFetchWithCompletionHandler: state=background",
        ]))
        h.completions[0](.noData)
        XCTAssertEqual(h.app.state, .suspended)
    }

    // seed 002: as above, for a remote notification waking a suspended application.
    func testSeed002WakeFromSuspensionDeliversDidEnterBackgroundBeforeTheRemoteNotification() throws {
        let h = try Harness { $0.backgroundModes = [.remoteNotification] }
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.remoteNotification(["b": 2])), [
            "state background",
            "delegate applicationDidEnterBackground: [a]",
            "notification didEnterBackground",
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
        ])
        // A running application is not "woken": the event alone.
        _ = try h.app.beginBackgroundTask(named: "hold")
        h.completions[0](.noData)
        XCTAssertEqual(h.app.state, .background)
        XCTAssertEqual(try h.perform(.remoteNotification(["c": 3])), [
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
        ])
    }

    // seed 002: "If the user opens your app from the system-displayed alert, the system calls this method
    // again so that you know which notification the user selected" (decision 51). From suspended: back
    // to the foreground, the method in state inactive, then active; the plain method (delegate `p`, no
    // completion variant) too, the application running when it is called.
    func testSeed002OpeningTheAppFromThePushAlertCallsTheMethodAgain() throws {
        let h = try Harness({ $0.backgroundModes = [.remoteNotification] }, delegates: ["a"])
        var plain = DelegateHandlers()
        plain.didReceiveRemoteNotification = { [unowned h] app, payload in h.seen.append("p plain \(payload) state=\(app.state)") }
        try h.app.addDelegate(plain, id: "p")
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.remoteNotification(["msg": 7])).last,
                       "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]", "the push arrives: woken")
        XCTAssertFalse(h.seen.contains { $0.hasPrefix("p plain") }, "not running when it arrived: the plain method is not called")
        h.completions.removeFirst()(.newData)
        XCTAssertEqual(h.app.state, .suspended)
        let start = h.seen.count
        XCTAssertEqual(try h.perform(.openRemoteNotification(["msg": 7])), [
            "state background",
            "notification willEnterForeground",
            "delegate applicationWillEnterForeground: [a]",
            "state inactive",
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
            "delegate application:didReceiveRemoteNotification: [p]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(Array(h.seen[start...]).filter { $0.contains("RemoteNotification") || $0.hasPrefix("p ") }, [
            #"a application:didReceiveRemoteNotification:fetchCompletionHandler: {"msg":7} state=inactive"#,
            #"p plain {"msg":7} state=inactive"#,
        ])
        h.completions.removeFirst()(.noData)
        // In the foreground: the method only.
        XCTAssertEqual(try h.perform(.openRemoteNotification(["msg": 8])), [
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
            "delegate application:didReceiveRemoteNotification: [p]",
        ])
        h.completions.removeFirst()(.noData)
        // Not running: launched into the foreground with the payload in the launch options; the
        // completion variant again, the plain one not (it was not running).
        try h.perform(.terminate)
        let launch = try h.perform(.openRemoteNotification(["msg": 9]))
        XCTAssertEqual(launch, [
            "state inactive",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            #"notification didFinishLaunching ({"remoteNotification":{"msg":9}})"#,
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
        h.completions.removeFirst()(.noData)
        // Locked: the user cannot open it from the alert before unlocking.
        try h.perform(.lock)
        XCTAssertApplicationError(try h.app.perform(.openRemoteNotification(["msg": 10])), .illegalAction,
                                  "action 'open-notification' is not allowed while the application is suspended: the device is locked; unlock it first")
    }

    // seed 002's older methods (decision 54): applicationDidFinishLaunching: to a delegate without the
    // options form, application:handleOpenURL: to one with neither openURL form, a local notification
    // (in the foreground at once; in the background only when opened from its alert), and the answer
    // to a remote-notification registration.
    func testSeed002TheOlderDelegateMethods() throws {
        let h = try Harness()
        var old = DelegateHandlers()
        old.applicationDidFinishLaunching = { [unowned h] app in h.seen.append("o applicationDidFinishLaunching state=\(app.state)") }
        old.handleOpenURL = { [unowned h] _, url in h.seen.append("o handleOpenURL \(url)"); return true }
        old.didReceiveLocalNotification = { [unowned h] app, info in h.seen.append("o local \(info) state=\(app.state)") }
        old.didRegisterForRemoteNotifications = { [unowned h] _, token in h.seen.append("o token \(token)") }
        old.didFailToRegisterForRemoteNotifications = { [unowned h] _, error in h.seen.append("o error \(error)") }
        try h.app.addDelegate(old, id: "o")
        XCTAssertEqual(try h.perform(.launch()).prefix(5), [
            "state inactive",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            "delegate applicationDidFinishLaunching: [o]",
            "notification didFinishLaunching",
        ])
        XCTAssertEqual(try h.perform(.openURL("app://doc/1")), [
            "delegate application:openURL:sourceApplication:annotation: [a]",
            "delegate application:handleOpenURL: [o]",
        ])
        XCTAssertEqual(try h.perform(.localNotification(["k": 1])), ["delegate application:didReceiveLocalNotification: [o]"])
        XCTAssertEqual(try h.perform(.remoteRegistration(token: "0a1b")), ["delegate application:didRegisterForRemoteNotificationsWithDeviceToken: [o]"])
        XCTAssertEqual(try h.perform(.remoteRegistration(error: "no network")),
                       ["delegate application:didFailToRegisterForRemoteNotificationsWithError: [o]"])
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.localNotification(["k": 2])), [], "in the background the system shows the alert; nothing runs")
        XCTAssertEqual(h.app.state, .suspended)
        XCTAssertEqual(try h.perform(.localNotification(["k": 3], opened: true)), [
            "state background",
            "notification willEnterForeground",
            "delegate applicationWillEnterForeground: [a]",
            "state inactive",
            "delegate application:didReceiveLocalNotification: [o]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(h.seen.filter { $0.hasPrefix("o ") }, [
            "o applicationDidFinishLaunching state=inactive",
            "o handleOpenURL app://doc/1",
            #"o local {"k":1} state=active"#,
            "o token 0a1b",
            "o error no network",
            #"o local {"k":3} state=inactive"#,
        ])
        try h.perform(.terminate)
        XCTAssertApplicationError(try h.app.perform(.remoteRegistration(token: "0a1b")), .illegalAction,
                                  "action 'remote-registration' is not allowed while the application is not-running: the answer to a registration reaches a running application")
        // Opened from its alert while not running: launched with it in the launch options, then the
        // method "after the application:didFinishLaunchingWithOptions: method", before active.
        XCTAssertEqual(Array(try h.perform(.localNotification(["k": 4], opened: true)).suffix(5)), [
            #"notification didFinishLaunching ({"localNotification":{"k":4}})"#,
            "delegate application:didReceiveLocalNotification: [o]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
    }

    // MARK: 2. Terminating a foreground application goes through the background

    // seed 001: applicationWillTerminate "is called only if your application is already in the
    // background"; seeds 001 and 003 tell applications to save in didEnterBackground.
    func testSeed001TerminatingAnActiveApplicationGoesThroughTheBackgroundFirst() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertEqual(try h.perform(.terminate), [
            "delegate applicationWillResignActive: [a]", "notification willResignActive", "state inactive",
            "state background", "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "delegate applicationWillTerminate: [a]", "notification willTerminate",
            "state not-running",
        ])
        XCTAssertEqual(h.seen.suffix(6), [
            "a applicationWillResignActive: state=active", "note willResignActive",
            "a applicationDidEnterBackground: state=background", "note didEnterBackground",
            "a applicationWillTerminate: state=background", "note willTerminate",
        ], "willTerminate sees the background")
        XCTAssertEqual(h.app.state, .notRunning)
    }

    // seed 001: as above from an interruption (inactive): willResignActive was already sent.
    func testSeed001TerminatingDuringAnInterruptionGoesThroughTheBackgroundFirst() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.beginInterruption)
        XCTAssertEqual(try h.perform(.terminate), [
            "state background", "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
            "delegate applicationWillTerminate: [a]", "notification willTerminate",
            "state not-running",
        ])
        // A later launch is not "interrupted".
        try h.launch()
        XCTAssertApplicationError(try h.app.perform(.dismissInterruption), .illegalAction,
                                  "action 'dismiss' is not allowed while the application is active: no interruption is in progress")
    }

    // seed 003: an application that exits on suspend is not a multitasking one: it never runs in the
    // background, so terminate is willResignActive → willTerminate.
    func testSeed003TerminatingAnApplicationThatExitsOnSuspendSkipsTheBackground() throws {
        let h = try Harness { $0.exitsOnSuspend = true }
        try h.launch()
        XCTAssertEqual(try h.perform(.terminate), [
            "delegate applicationWillResignActive: [a]", "notification willResignActive", "state inactive",
            "delegate applicationWillTerminate: [a]", "notification willTerminate",
            "state not-running",
        ])
        XCTAssertEqual(h.seen.suffix(2), ["a applicationWillTerminate: state=inactive", "note willTerminate"])
    }

    // MARK: 3. State is preserved at the transition to the background only

    /// The recording delegate `a`, preserving state into `folder`.
    private func keeper(_ configure: @escaping (inout Configuration) -> Void = { _ in }) throws -> (Harness, String) {
        let folder = NSTemporaryDirectory() + "lc-seeds-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        let h = try Harness({ $0.archiveDirectory = folder; configure(&$0) }, delegates: [])
        var d = h.recordingDelegate("a")
        d.shouldSaveApplicationState = { _, _ in true }
        d.willEncodeRestorableState = { _, coder in coder["k"] = 1 }
        d.shouldRestoreApplicationState = { _, _ in true }
        try h.app.addDelegate(d, id: "a")
        return (h, folder)
    }

    private let saved = [
        "delegate application:shouldSaveApplicationState: [a]",
        "delegate application:willEncodeRestorableStateWithCoder: [a]",
        "archive saved [a] (1 keys)",
    ]

    // seeds 001, 003 ("save any data when you receive the applicationDidEnterBackground: message"):
    // a terminate from the foreground saves once, after didEnterBackground, and not again before willTerminate.
    func testSeed003StateIsSavedOnceAtTheTransitionToTheBackgroundNotBeforeWillTerminate() throws {
        let (h, folder) = try keeper()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try h.launch()
        XCTAssertEqual(try h.perform(.terminate), [
            "delegate applicationWillResignActive: [a]", "notification willResignActive", "state inactive",
            "state background", "delegate applicationDidEnterBackground: [a]", "notification didEnterBackground",
        ] + saved + [
            "delegate applicationWillTerminate: [a]", "notification willTerminate",
            "state not-running",
        ])
        // Terminated from the background: it was saved when it got there, so not again.
        try h.launch()
        _ = try h.app.beginBackgroundTask(named: "hold")
        XCTAssertEqual(try h.perform(.home).filter { $0.hasPrefix("archive") }, ["archive saved [a] (1 keys)"])
        XCTAssertEqual(try h.perform(.terminate), [
            "delegate applicationWillTerminate: [a]", "notification willTerminate", "state not-running",
        ])
    }

    // seed 003: an application that exits on suspend never reaches the background, so it is never saved.
    func testSeed003AnApplicationThatExitsOnSuspendIsNeverSaved() throws {
        let (h, folder) = try keeper { $0.exitsOnSuspend = true }
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try h.launch()
        try h.perform(.home)
        try h.launch()
        try h.perform(.terminate)
        try h.launch()
        try h.perform(.beginInterruption)
        try h.perform(.acceptInterruption)
        try h.launch()
        try h.perform(.lock)
        XCTAssertEqual(h.app.state, .notRunning)
        XCTAssertEqual(h.trace.filter { $0.contains("shouldSave") || $0.hasPrefix("archive") }, [])
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/a.lcarchive"))
    }

    // MARK: 8. The plain didReceiveRemoteNotification: only while running

    // seed 002: "Unlike the application:didReceiveRemoteNotification: method, which is called only when
    // your app is running, the system calls this method [the completion variant] regardless of the
    // state of your app."
    func testSeed002PlainRemoteNotificationIsCalledOnlyWhileRunning() throws {
        let h = try Harness({ $0.backgroundModes = [.remoteNotification] }, delegates: [])
        var plain = DelegateHandlers()
        plain.didReceiveRemoteNotification = { app, payload in h.seen.append("plain \(payload) state=\(app.state)") }
        try h.app.addDelegate(plain, id: "p")
        // Launched by the push: the payload is in the launch options only.
        XCTAssertEqual(try h.perform(.remoteNotification(["n": 1])), [
            "state background", "notification didFinishLaunching ({\"remoteNotification\":{\"n\":1}})",
            "notification didEnterBackground", "state suspended",
        ])
        // Woken from suspension: not called either.
        XCTAssertEqual(try h.perform(.remoteNotification(["n": 2])), [
            "state background", "notification didEnterBackground", "state suspended",
        ])
        XCTAssertFalse(h.seen.contains { $0.hasPrefix("plain") })
        // Running (in the foreground, or in the background held by a task): called, in the current state.
        try h.perform(.foreground)
        XCTAssertEqual(try h.perform(.remoteNotification(["n": 3])), ["delegate application:didReceiveRemoteNotification: [p]"])
        _ = try h.app.beginBackgroundTask(named: "hold")
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.remoteNotification(["n": 4])), ["delegate application:didReceiveRemoteNotification: [p]"])
        XCTAssertEqual(h.seen.filter { $0.hasPrefix("plain") }, [#"plain {"n":3} state=active"#, #"plain {"n":4} state=background"#])
    }

    // MARK: 4. State is saved only by a delegate implementing both shouldSave and shouldRestore

    // seed 002 (both methods' entries): "Apps must implement this method and the
    // application:should{Restore,Save}ApplicationState: method for state preservation to occur."
    func testSeed002PreservationNeedsBothShouldSaveAndShouldRestore() throws {
        let folder = NSTemporaryDirectory() + "lc-seeds-both-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // An archive for restoreOnly, as an earlier version of it could have left.
        try ArchiveStore(directory: folder).save(["k": 1], id: "restoreOnly")
        let h = try Harness({ $0.archiveDirectory = folder }, delegates: [])
        var encoded: [String] = [], decoded: [String] = []
        func delegate(_ id: String, save: Bool, restore: Bool) -> DelegateHandlers {
            var d = DelegateHandlers()
            if save { d.shouldSaveApplicationState = { _, _ in true } }
            if restore { d.shouldRestoreApplicationState = { _, _ in true } }
            d.willEncodeRestorableState = { _, coder in coder["k"] = 1; encoded.append(id) }
            d.didDecodeRestorableState = { _, _ in decoded.append(id) }
            return d
        }
        try h.app.addDelegate(delegate("saveOnly", save: true, restore: false), id: "saveOnly")
        try h.app.addDelegate(delegate("restoreOnly", save: false, restore: true), id: "restoreOnly")
        try h.app.addDelegate(delegate("both", save: true, restore: true), id: "both")

        XCTAssertEqual(try h.perform(.launch()).prefix(2), [
            "state inactive",
            "skipped application:shouldRestoreApplicationState: [restoreOnly] (application:shouldSaveApplicationState: is not implemented: state preservation needs both, as on iOS)",
        ])
        XCTAssertEqual(decoded, [])
        XCTAssertEqual(try h.perform(.home).suffix(6), [
            "notification didEnterBackground",
            "skipped application:shouldSaveApplicationState: [saveOnly] (application:shouldRestoreApplicationState: is not implemented: state preservation needs both, as on iOS)",
            "delegate application:shouldSaveApplicationState: [both]",
            "delegate application:willEncodeRestorableStateWithCoder: [both]",
            "archive saved [both] (1 keys)",
            "state suspended",
        ])
        XCTAssertEqual(encoded, ["both"])
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/saveOnly.lcarchive"))
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/both.lcarchive"))
        if case .delegateSkipped(let method, .preservationNeedsBoth(let id)) = try XCTUnwrap(h.fullTrace.last { $0.kind == .skipped }).payload {
            XCTAssertEqual(method, .shouldSaveApplicationState)
            XCTAssertEqual(id, "saveOnly")
        } else {
            XCTFail("the skip is typed")
        }
    }

    // MARK: 5. The device lock belongs to the device

    // seed 000: the Sleep/Wake button "locks the screen and forces the system to throw away the
    // decryption keys for files with complete protection": a state of the device, which outlives the
    // application's run. A launch while locked starts with protected data unavailable; the later
    // unlock is legal and makes it available.
    func testSeed000TheDeviceLockOutlivesTheRunAndALaunchWhileLockedStartsWithoutProtectedData() throws {
        let h = try Harness { $0.backgroundModes = [.fetch] }
        try h.launch()
        try h.perform(.lock)
        try h.perform(.terminate)  // suspended: no callback
        XCTAssertEqual(h.app.state, .notRunning)
        XCTAssertTrue(h.app.isDeviceLocked, "terminating the application does not unlock the device")
        XCTAssertFalse(h.app.isProtectedDataAvailable)
        XCTAssertApplicationError(try h.app.perform(.launch()), .illegalAction,
                                  "action 'launch' is not allowed while the application is not-running: the device is locked; unlock it first")
        XCTAssertApplicationError(try h.app.perform(.openURL("app://x")), .illegalAction,
                                  "action 'open-url' is not allowed while the application is not-running: the device is locked; unlock it first")

        var availableAtLaunch: Bool?
        h.hooks["a application:willFinishLaunchingWithOptions:"] = { availableAtLaunch = $0.isProtectedDataAvailable }
        let launched = try h.perform(.backgroundFetch)
        XCTAssertEqual(availableAtLaunch, false, "launched while locked: protected data is unavailable from the start")
        XCTAssertFalse(launched.contains { $0.contains("protectedData") }, "nothing to announce: it was never available to this run")
        h.completions[0](.newData)
        XCTAssertEqual(h.app.state, .suspended)

        // The later unlock is legal; the application was not frontmost, so it stays suspended.
        XCTAssertEqual(try h.perform(.unlock), ["queued protectedDataDidBecomeAvailable (coalescing kind protected-data)"])
        XCTAssertFalse(h.app.isDeviceLocked)
        XCTAssertEqual(try h.perform(.foreground).prefix(3), [
            "state background",
            "delegate applicationProtectedDataDidBecomeAvailable: [a]", "notification protectedDataDidBecomeAvailable",
        ])
        XCTAssertTrue(h.app.isProtectedDataAvailable)
    }

    // seed 000: locking and unlocking while the application is not running changes the device only.
    func testSeed000LockAndUnlockWhileNotRunningChangeTheDeviceOnly() throws {
        let h = try Harness()
        XCTAssertEqual(try h.perform(.lock), [])
        XCTAssertTrue(h.app.isDeviceLocked)
        XCTAssertFalse(h.app.isProtectedDataAvailable)
        XCTAssertEqual(try h.perform(.unlock), [])
        XCTAssertFalse(h.app.isDeviceLocked)
        XCTAssertTrue(h.app.isProtectedDataAvailable)
        XCTAssertEqual(h.seen, [], "no code runs")
        XCTAssertEqual(h.fullTrace.map(\.description), ["action lock", "action unlock"])
        try h.launch()
        XCTAssertTrue(h.app.isProtectedDataAvailable)
    }

    // MARK: 6. A lock and an unlock while suspended net out

    // seed 000: "a single notification (of each relevant type) that reflects the net change"; seed 003:
    // the system "tracks and coalesces (really nets out) events". Locked and unlocked again while
    // suspended, the net change is none: nothing protected-data related on resume.
    func testSeed003LockAndUnlockWhileSuspendedNetOut() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.lock), ["queued protectedDataWillBecomeUnavailable (coalescing kind protected-data)"])
        XCTAssertEqual(try h.perform(.unlock), [
            "discarded protectedDataDidBecomeAvailable (undoes the queued protectedDataWillBecomeUnavailable: nothing is delivered on resume, as on iOS)",
        ])
        XCTAssertTrue(h.app.queuedNotifications.isEmpty)
        let start = h.seen.count
        XCTAssertEqual(try h.perform(.foreground), [
            "state background",
            "notification willEnterForeground", "delegate applicationWillEnterForeground: [a]",
            "state inactive", "state active",
            "delegate applicationDidBecomeActive: [a]", "notification didBecomeActive",
        ])
        XCTAssertFalse(h.seen[start...].contains { $0.contains("rotectedData") })
        XCTAssertTrue(h.app.isProtectedDataAvailable)
        XCTAssertFalse(h.app.isDeviceLocked)
    }

    // seed 003: the reverse too — locked while running (told), then unlocked and locked again while
    // suspended: still locked, nothing to tell. Lock, unlock, lock while suspended: one net lock.
    func testSeed003UnlockAndLockWhileSuspendedNetOutAndAnOddNumberLeavesOne() throws {
        let h = try Harness()
        try h.launch()
        _ = try h.app.beginBackgroundTask(named: "hold")
        try h.perform(.home)
        try h.perform(.lock)  // delivered at once: the application is running in the background
        try h.app.endBackgroundTask(try XCTUnwrap(h.app.backgroundTasks.first).id)
        XCTAssertEqual(h.app.state, .suspended)
        try h.perform(.unlock)
        try h.perform(.lock)
        XCTAssertTrue(h.app.queuedNotifications.isEmpty, "unlocked and locked again: no net change")
        try h.perform(.unlock)
        try h.perform(.lock)
        try h.perform(.unlock)
        XCTAssertEqual(h.app.queuedNotifications.map(\.name), [.protectedDataDidBecomeAvailable], "one net unlock")
        XCTAssertEqual(try h.perform(.foreground).prefix(3), [
            "state background",
            "delegate applicationProtectedDataDidBecomeAvailable: [a]", "notification protectedDataDidBecomeAvailable",
        ])
    }

    // MARK: 7. A posted notification reaches observers only

    // seeds 000, 002: the delegate methods and the protected-data state are the system's; a notification
    // posted by a plugin (or the host's `post`) is for the observers of its name, running or suspended.
    func testSeed002APostedNotificationReachesObserversOnlyRunningOrSuspended() throws {
        let h = try Harness()
        try h.launch()
        let names: [NotificationName] = [.protectedDataWillBecomeUnavailable, .significantTimeChange, .didEnterBackground, .willTerminate]
        var start = h.seen.count
        for name in names { h.app.center.post(name) }
        XCTAssertEqual(Array(h.seen[start...]), names.map { "note \($0)" }, "running: observers only, no delegate")
        XCTAssertEqual(h.app.state, .active)
        XCTAssertTrue(h.app.isProtectedDataAvailable)
        XCTAssertFalse(h.app.isDeviceLocked)

        try h.perform(.home)
        h.app.center.post(.protectedDataWillBecomeUnavailable, userInfo: ["by": "plugin"])
        h.app.center.post(.significantTimeChange)
        XCTAssertEqual(h.app.queuedNotifications.map(\.name), [.protectedDataWillBecomeUnavailable, .significantTimeChange])
        start = h.seen.count
        XCTAssertEqual(try h.perform(.foreground).prefix(4), [
            "state background",
            #"notification protectedDataWillBecomeUnavailable ({"by":"plugin"})"#,  // no delegate call before it
            "notification significantTimeChange",  // nor after it
            "notification willEnterForeground",
        ])
        XCTAssertEqual(Array(h.seen[start...].prefix(2)), [#"note protectedDataWillBecomeUnavailable {"by":"plugin"}"#, "note significantTimeChange"])
        XCTAssertTrue(h.app.isProtectedDataAvailable, "a post does not change the protected-data state")
        XCTAssertFalse(h.app.isDeviceLocked)
    }

    // A post does not stand for the system's event, nor the reverse: both reach observers, the system's
    // alone calls the delegate, and the post cannot undo a queued lock.
    func testSeed000PostsAndSystemEventsCoalesceSeparatelyWhileSuspended() throws {
        let h = try Harness()
        try h.launch()
        try h.perform(.home)
        try h.perform(.lock)
        h.app.center.post(.protectedDataDidBecomeAvailable)
        try h.perform(.significantTimeChange)
        h.app.center.post(.significantTimeChange)
        try h.perform(.significantTimeChange)
        XCTAssertEqual(h.app.queuedNotifications.map { "\($0.name) ×\($0.count)" }, [
            "protectedDataWillBecomeUnavailable ×1", "protectedDataDidBecomeAvailable ×1",
            "significantTimeChange ×2", "significantTimeChange ×1",
        ])
        try h.perform(.unlock)  // nets out the system's lock, not the post
        XCTAssertEqual(h.app.queuedNotifications.map(\.name), [.protectedDataDidBecomeAvailable, .significantTimeChange, .significantTimeChange])
        XCTAssertEqual(try h.perform(.foreground).prefix(6), [
            "state background",
            "notification protectedDataDidBecomeAvailable",
            "notification significantTimeChange (coalesced from 2)", "delegate applicationSignificantTimeChange: [a]",
            "notification significantTimeChange",
            "notification willEnterForeground",
        ])
    }

    // MARK: 9. application:openURL:options: beside the older form; seed 002's launch-option keys

    // seed 004 names application(_:open:options:) for "Open URLs"; a delegate implementing it gets it
    // instead of the older application:openURL:sourceApplication:annotation: (seed 002), which still
    // serves delegates implementing only that.
    func testSeed004OpenURLWithOptionsIsPreferredAndTheOlderFormStillServes() throws {
        let h = try Harness(delegates: [])
        var calls: [String] = []
        func delegate(_ id: String, newer: Bool, older: Bool) -> DelegateHandlers {
            var d = DelegateHandlers()
            if newer { d.openURLWithOptions = { app, url, options in calls.append("\(id) options \(url) \(options) \(app.state)"); return true } }
            if older { d.openURL = { app, url, source, _ in calls.append("\(id) older \(url) \(source ?? "-") \(app.state)"); return true } }
            return d
        }
        try h.app.addDelegate(delegate("n", newer: true, older: false), id: "n")
        try h.app.addDelegate(delegate("b", newer: true, older: true), id: "b")
        try h.app.addDelegate(delegate("o", newer: false, older: true), id: "o")
        XCTAssertEqual(try h.perform(.openURL("app://a", sourceApplication: "com.example.mail", annotation: ["k": 1])), [
            "state inactive",
            #"notification didFinishLaunching ({"url":"app://a","sourceApplication":"com.example.mail","annotation":{"k":1}})"#,
            "delegate application:openURL:options: [n]",
            "delegate application:openURL:options: [b]",
            "delegate application:openURL:sourceApplication:annotation: [o]",
            "state active", "notification didBecomeActive",
        ])
        XCTAssertEqual(calls, [
            #"n options app://a {"sourceApplication":"com.example.mail","annotation":{"k":1}} inactive"#,
            #"b options app://a {"sourceApplication":"com.example.mail","annotation":{"k":1}} inactive"#,
            "o older app://a com.example.mail inactive",
        ])
        // Running: without a source or annotation the options are empty.
        calls.removeAll()
        try h.perform(.openURL("app://b"))
        XCTAssertEqual(calls, ["n options app://b {} active", "b options app://b {} active", "o older app://b - active"])
    }

    // seed 002: "This method is not called if the delegate returns NO from both …"; a declined launch
    // skips both forms, each named.
    func testSeed002ADeclinedLaunchSkipsBothOpenURLForms() throws {
        let h = try Harness(delegates: [])
        var newer = DelegateHandlers()
        newer.didFinishLaunching = { _, _ in false }
        newer.openURLWithOptions = { _, _, _ in true }
        var older = DelegateHandlers()
        older.openURL = { _, _, _, _ in true }
        try h.app.addDelegate(newer, id: "n")
        try h.app.addDelegate(older, id: "o")
        XCTAssertEqual(try h.perform(.openURL("app://x")).filter { $0.hasPrefix("skipped") || $0.contains("openURL") }, [
            "skipped application:openURL:options: (a launch method returned false)",
            "skipped application:openURL:sourceApplication:annotation: (a launch method returned false)",
        ])
    }

    // A Swift protocol delegate that implements only the older method keeps receiving the URL: the
    // default application(_:open:options:) forwards to it.
    func testSeed004AProtocolDelegateWithOnlyTheOlderMethodStillOpensTheURL() throws {
        final class Older: ApplicationDelegate {
            var opened: [String] = []
            func application(_ application: Application, open url: String, sourceApplication: String?, annotation: UserInfoValue?) -> Bool {
                opened.append("\(url) \(sourceApplication ?? "-") \(annotation?.description ?? "-")")
                return true
            }
        }
        let h = try Harness(delegates: [])
        let d = Older()
        try h.app.addDelegate(d, id: "older")
        try h.launch()
        XCTAssertEqual(try h.perform(.openURL("app://y", sourceApplication: "com.example.src", annotation: 7)),
                       ["delegate application:openURL:options: [older]"])
        XCTAssertEqual(d.opened, ["app://y com.example.src 7"])
    }

    // seed 002 lists nine UIApplicationLaunchOptions keys; each has its short name, and a launch hands
    // whatever options it is given to both launch methods and didFinishLaunching's userInfo.
    func testSeed002EveryLaunchOptionKeyHasItsName() throws {
        XCTAssertEqual(LaunchOptionsKey.all, ["url", "sourceApplication", "remoteNotification", "annotation", "localNotification",
                                              "location", "newsstandDownloads", "bluetoothCentrals", "bluetoothPeripherals"])
        let h = try Harness()
        let options: UserInfo = [LaunchOptionsKey.location: true, LaunchOptionsKey.bluetoothCentrals: ["central-1"]]
        try h.perform(.launch(options: options, inBackground: true))
        XCTAssertEqual(h.seen.prefix(3), [
            #"a application:willFinishLaunchingWithOptions: {"location":true,"bluetoothCentrals":["central-1"]} state=background"#,
            #"a application:didFinishLaunchingWithOptions: {"location":true,"bluetoothCentrals":["central-1"]} state=background"#,
            #"note didFinishLaunching {"location":true,"bluetoothCentrals":["central-1"]}"#,
        ])
    }

    // seed 002's application:handleEventsForBackgroundURLSession:completionHandler: (decision 55):
    // launched or woken into the background as for a fetch, every implementing delegate with its own
    // handler, which carries no result; held in the background until it is called; refused in the
    // foreground and without an identifier.
    func testSeed002BackgroundURLSessionEvents() throws {
        let h = try Harness()
        var u = DelegateHandlers()
        var handlers: [URLSessionCompletionHandler] = []
        u.handleEventsForBackgroundURLSession = { [unowned h] app, identifier, done in
            h.seen.append("u events \(identifier) state=\(app.state)")
            handlers.append(done)
        }
        try h.app.addDelegate(u, id: "u")
        XCTAssertEqual(try h.perform(.urlSessionEvents("com.example.downloads")), [
            "state background",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            "notification didFinishLaunching",
            "delegate applicationDidEnterBackground: [a]",
            "notification didEnterBackground",
            "delegate application:handleEventsForBackgroundURLSession:completionHandler: [u]",
        ])
        XCTAssertEqual(h.app.state, .background, "held in the background until the handler is called")
        XCTAssertEqual(handlers.count, 1)
        let start = h.trace.count
        handlers[0]()
        handlers[0]()
        XCTAssertEqual(Array(h.trace[start...]), [
            "completion application:handleEventsForBackgroundURLSession:completionHandler: [u] (called)",
            "state suspended",
            "error completion handler called again [u] (application:handleEventsForBackgroundURLSession:completionHandler:: the second call is ignored)",
        ])
        XCTAssertTrue(handlers[0].wasCalled)
        // From suspended: woken into the background, then the method.
        XCTAssertEqual(try h.perform(.urlSessionEvents("com.example.uploads")), [
            "state background",
            "delegate applicationDidEnterBackground: [a]",
            "notification didEnterBackground",
            "delegate application:handleEventsForBackgroundURLSession:completionHandler: [u]",
        ])
        XCTAssertEqual(h.seen.filter { $0.hasPrefix("u ") }, [
            "u events com.example.downloads state=background", "u events com.example.uploads state=background",
        ])
        handlers[1]()
        XCTAssertEqual(h.app.state, .suspended)
        try h.perform(.foreground)
        XCTAssertApplicationError(try h.app.perform(.urlSessionEvents("com.example.downloads")), .illegalAction,
                                  "action 'url-session' is not allowed while the application is active: a background URL session's events reach this method only outside the foreground (in the foreground the session's own delegate receives them)")
        try h.perform(.home)
        XCTAssertApplicationError(try h.app.perform(.urlSessionEvents("")), .invalidArgument, "action 'url-session' needs a session identifier")
    }
}
