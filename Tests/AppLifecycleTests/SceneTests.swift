import Foundation
import XCTest
@testable import AppLifecycle

/// Scene-based applications (seed 004; issue 9): the exact trace and the exact states of each scene
/// sequence. `a` is the application delegate, `s` the scene delegate.
final class SceneTests: XCTestCase {
    let connectMain = [
        "delegate application:configurationForConnectingSceneSession:options: [a] {main}",
        "delegate scene:willConnectToSession:options: [s] {main}",
        "notification sceneWillConnect {main}",
    ]

    func testLaunchConnectsTheMainSceneAndTheApplicationFollowsIt() throws {
        let h = try Harness.scenes()
        XCTAssertEqual(try h.perform(.launch(options: ["k": "v"])), [
            // "A scene-based app launches in the background state" (Apple, `applicationState`).
            "state background",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            #"notification didFinishLaunching ({"k":"v"})"#,
        ] + connectMain + [
            "delegate sceneWillEnterForeground: [s] {main}",
            "notification sceneWillEnterForeground {main}",
            // The aggregate state moves from background to foreground with the first scene.
            "notification willEnterForeground",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state foreground-active {main}",
            "state active",
            "delegate sceneDidBecomeActive: [s] {main}",
            "notification sceneDidActivate {main}",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active"])
        XCTAssertEqual(h.app.state, .active)
        XCTAssertEqual(h.app.scenes.first?.session.configurationName, "Main")
        XCTAssertEqual(h.app.scenes.first?.requestedByUser, true)
        // What the callbacks saw: the launch in the background; the scene unattached while connecting
        // and coming forward, the application still in the background; in sceneDidBecomeActive both
        // active (the application takes its most active scene's state); no application delegate
        // foreground method.
        XCTAssertEqual(Array(h.seen.dropFirst(3)), [
            "a configurationForConnecting main urls=[] activities=[] state=background",
            "s scene:willConnectToSession:options: main scene=unattached app=background",
            "note sceneWillConnect main",
            "s sceneWillEnterForeground: main scene=unattached app=background",
            "note sceneWillEnterForeground main",
            "note willEnterForeground",
            "s sceneDidBecomeActive: main scene=foreground-active app=active",
            "note sceneDidActivate main",
            "note didBecomeActive",
        ])
    }

    func testLaunchNamesTheScene() throws {
        let h = try Harness.scenes()
        let trace = try h.perform(.launch(scene: "editor"))
        XCTAssertTrue(trace.contains("delegate scene:willConnectToSession:options: [s] {editor}"))
        XCTAssertEqual(h.sceneStates, ["editor=foreground-active"])
        XCTAssertEqual(h.fullTrace.first { $0.kind == .action }?.scene, "editor", "the action's trace event names the scene")
    }

    func testSecondSceneConnectsWhileTheApplicationStaysActive() throws {
        let h = try Harness.scenes()
        try h.launch()
        XCTAssertEqual(try h.perform(.connectScene("side")), [
            "delegate application:configurationForConnectingSceneSession:options: [a] {side}",
            "delegate scene:willConnectToSession:options: [s] {side}",
            "notification sceneWillConnect {side}",
            "delegate sceneWillEnterForeground: [s] {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [s] {side}",
            "notification sceneDidActivate {side}",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active", "side=foreground-active"])
        XCTAssertEqual(h.app.state, .active)
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), ["main", "side"])
    }

    func testSystemRequestedSceneConnectsIntoTheBackground() throws {
        let h = try Harness.scenes()
        try h.launch()
        XCTAssertEqual(try h.perform(.connectScene("location", inBackground: true)), [
            "delegate application:configurationForConnectingSceneSession:options: [a] {location}",
            "delegate scene:willConnectToSession:options: [s] {location}",
            "notification sceneWillConnect {location}",
            "scene-state background {location}",
            "delegate sceneDidEnterBackground: [s] {location}",
            "notification sceneDidEnterBackground {location}",
            "scene-state suspended {location}",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active", "location=suspended"])
        XCTAssertEqual(h.app.scenes.last?.requestedByUser, false)
        XCTAssertEqual(h.app.state, .active)
    }

    func testDeactivateAndActivateOneOfTwoScenesThenTheLast() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        // One of two: the application stays active.
        XCTAssertEqual(try h.perform(.deactivateScene("side")), [
            "delegate sceneWillResignActive: [s] {side}",
            "notification sceneWillDeactivate {side}",
            "scene-state foreground-inactive {side}",
        ])
        XCTAssertEqual(h.app.state, .active)
        // The last active scene: the scene's call and notification, then the application's (still
        // active), then the scene and the application change state together.
        XCTAssertEqual(try h.perform(.deactivateScene("main")), [
            "delegate sceneWillResignActive: [s] {main}",
            "notification sceneWillDeactivate {main}",
            "notification willResignActive",
            "scene-state foreground-inactive {main}",
            "state inactive",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-inactive", "side=foreground-inactive"])
        XCTAssertEqual(h.app.state, .inactive)
        XCTAssertEqual(try h.perform(.activateScene("side")), [
            "scene-state foreground-active {side}",
            "state active",
            "delegate sceneDidBecomeActive: [s] {side}",
            "notification sceneDidActivate {side}",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(try h.perform(.activateScene("main")), [
            "scene-state foreground-active {main}",
            "delegate sceneDidBecomeActive: [s] {main}",
            "notification sceneDidActivate {main}",
        ])
        XCTAssertEqual(h.app.state, .active)
    }

    func testBackgroundOneOfTwoScenes() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        XCTAssertEqual(try h.perform(.moveSceneToBackground("side")), [
            "delegate sceneWillResignActive: [s] {side}",
            "notification sceneWillDeactivate {side}",
            "scene-state foreground-inactive {side}",
            "scene-state background {side}",
            "delegate sceneDidEnterBackground: [s] {side}",
            "notification sceneDidEnterBackground {side}",
            "scene-state suspended {side}",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active", "side=suspended"])
        XCTAssertEqual(h.app.state, .active, "the other scene keeps the application active")
        // Back: the suspended scene resumes to the background first, then comes forward.
        XCTAssertEqual(try h.perform(.bringSceneToForeground("side")), [
            "scene-state background {side}",
            "delegate sceneWillEnterForeground: [s] {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [s] {side}",
            "notification sceneDidActivate {side}",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active", "side=foreground-active"])
    }

    func testLastForegroundSceneLeavingPostsTheApplicationsNotificationsAfterTheScenes() throws {
        let h = try Harness.scenes()
        try h.launch()
        XCTAssertEqual(try h.perform(.moveSceneToBackground("main")), [
            "delegate sceneWillResignActive: [s] {main}",
            "notification sceneWillDeactivate {main}",
            "notification willResignActive",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state background {main}",
            "state background",
            "delegate sceneDidEnterBackground: [s] {main}",
            "notification sceneDidEnterBackground {main}",
            "notification didEnterBackground",
            "scene-state suspended {main}",
            "state suspended",
        ])
        XCTAssertEqual(h.sceneStates, ["main=suspended"])
        XCTAssertEqual(h.app.state, .suspended)
        XCTAssertFalse(h.seen.contains { $0.hasPrefix("a applicationWillResignActive") || $0.hasPrefix("a applicationDidEnterBackground") },
                       "the application delegate gets no foreground/background method in a scene-based application")
        XCTAssertTrue(h.seen.contains("s sceneDidEnterBackground: main scene=background app=background"),
                      "the last scene to leave takes the application to the background before its method")
    }

    func testHomeAndReturnWithTwoForegroundScenes() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        XCTAssertEqual(try h.perform(.home), [
            "delegate sceneWillResignActive: [s] {main}",
            "notification sceneWillDeactivate {main}",
            "scene-state foreground-inactive {main}",
            "delegate sceneWillResignActive: [s] {side}",
            "notification sceneWillDeactivate {side}",
            "notification willResignActive",
            "scene-state foreground-inactive {side}",
            "state inactive",
            "scene-state background {main}",
            "delegate sceneDidEnterBackground: [s] {main}",
            "notification sceneDidEnterBackground {main}",
            "scene-state background {side}",
            "state background",
            "delegate sceneDidEnterBackground: [s] {side}",
            "notification sceneDidEnterBackground {side}",
            "notification didEnterBackground",
            "scene-state suspended {main}",
            "scene-state suspended {side}",
            "state suspended",
        ])
        XCTAssertEqual(try h.perform(.foreground), [
            "state background",
            "scene-state background {main}",
            "delegate sceneWillEnterForeground: [s] {main}",
            "notification sceneWillEnterForeground {main}",
            "notification willEnterForeground",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state background {side}",
            "delegate sceneWillEnterForeground: [s] {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "scene-state foreground-active {main}",
            "state active",
            "delegate sceneDidBecomeActive: [s] {main}",
            "notification sceneDidActivate {main}",
            "notification didBecomeActive",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [s] {side}",
            "notification sceneDidActivate {side}",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active", "side=foreground-active"])
    }

    func testInterruptionDeactivatesTheActiveScenesAndDismissReactivatesThem() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        try h.perform(.deactivateScene("side"))
        XCTAssertEqual(try h.perform(.beginInterruption), [
            "delegate sceneWillResignActive: [s] {main}",
            "notification sceneWillDeactivate {main}",
            "notification willResignActive",
            "scene-state foreground-inactive {main}",
            "state inactive",
        ])
        XCTAssertEqual(try h.perform(.dismissInterruption), [
            "scene-state foreground-active {main}",
            "state active",
            "delegate sceneDidBecomeActive: [s] {main}",
            "notification sceneDidActivate {main}",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active", "side=foreground-inactive"], "only what the interruption deactivated")
    }

    func testDisconnectKeepsTheSessionAndDiscardRemovesIt() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        try h.perform(.moveSceneToBackground("side"))
        XCTAssertEqual(try h.perform(.disconnectScene("side")), [
            "scene-state unattached {side}",
            "delegate sceneDidDisconnect: [s] {side}",
            "notification sceneDidDisconnect {side}",
        ])
        XCTAssertEqual(h.sceneStates, ["main=foreground-active"])
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), ["main", "side"], "the session outlives the scene")
        XCTAssertTrue(h.seen.contains("s sceneDidDisconnect: side scene=unattached app=active"))
        XCTAssertEqual(try h.perform(.discardSceneSession("side")), ["delegate application:didDiscardSceneSessions: [a] {side}"])
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), ["main"])
        XCTAssertEqual(h.seen.last, #"a didDiscardSceneSessions ["side"]"#)
    }

    func testASessionDiscardedWhileNotRunningIsReportedAtTheNextLaunch() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        try h.perform(.terminate)
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), ["main", "side"], "sessions outlive the run")
        XCTAssertEqual(try h.perform(.discardSceneSession("side")), [])
        let trace = try h.perform(.launch())
        let discard = try XCTUnwrap(trace.firstIndex(of: "delegate application:didDiscardSceneSessions: [a] {side}"))
        XCTAssertEqual(trace[discard - 1], "notification didFinishLaunching", "shortly after didFinishLaunching")
        XCTAssertEqual(trace[discard + 1], "delegate scene:willConnectToSession:options: [s] {main}",
                       "main's session is kept: its configuration is not asked for again")
    }

    /// Decision 47: the configuration is asked for when a session is created, and a kept session keeps
    /// it — a scene that reconnects, `main` at a relaunch; a discarded session's id gets a new one.
    func testTheConfigurationIsAskedForANewSessionOnlyAndTheSessionKeepsIt() throws {
        let h = try Harness.scenes()
        h.app.removeDelegate(id: "a")
        var asked = 0
        var handlers = h.recordingDelegate("a")
        handlers.configurationForConnecting = { _, _, _ in
            asked += 1
            return SceneConfiguration(name: "Config \(asked)")
        }
        try h.app.addDelegate(handlers, id: "a")
        let ask = "delegate application:configurationForConnectingSceneSession:options: [a]"
        func configuration(_ id: String) -> String? {
            h.app.sceneSessions.first { $0.persistentIdentifier == id }?.configurationName
        }

        XCTAssertTrue(try h.perform(.launch()).contains("\(ask) {main}"))
        XCTAssertEqual(try h.perform(.connectScene("side")).first, "\(ask) {side}")
        XCTAssertEqual([configuration("main"), configuration("side")], ["Config 1", "Config 2"])

        // A scene that reconnects: its session is kept, and so is its configuration.
        try h.perform(.moveSceneToBackground("side"))
        try h.perform(.disconnectScene("side"))
        XCTAssertEqual(try h.perform(.connectScene("side")).first, "delegate scene:willConnectToSession:options: [s] {side}")
        XCTAssertEqual(configuration("side"), "Config 2")

        // A relaunch: main's session is kept, and so is its configuration.
        try h.perform(.terminate)
        XCTAssertFalse(try h.perform(.launch()).contains { $0.hasPrefix(ask) })
        XCTAssertEqual(h.app.scenes.first { $0.id == "main" }?.session.configurationName, "Config 1")

        // A discarded session is gone: the id's next connection creates a new one, and asks.
        try h.perform(.discardSceneSession("side"))
        XCTAssertEqual(try h.perform(.connectScene("side")).first, "\(ask) {side}")
        XCTAssertEqual(configuration("side"), "Config 3")
        XCTAssertEqual(asked, 3)
    }

    func testTerminateTakesTheScenesThroughTheBackgroundAndUnattachesThem() throws {
        let h = try Harness.scenes()
        try h.launch()
        XCTAssertEqual(try h.perform(.terminate), [
            "delegate sceneWillResignActive: [s] {main}",
            "notification sceneWillDeactivate {main}",
            "notification willResignActive",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state background {main}",
            "state background",
            "delegate sceneDidEnterBackground: [s] {main}",
            "notification sceneDidEnterBackground {main}",
            "notification didEnterBackground",
            "delegate applicationWillTerminate: [a]",
            "notification willTerminate",
            "scene-state unattached {main}",
            "state not-running",
        ])
        XCTAssertEqual(h.app.scenes.count, 0)
    }

    func testApplicationWideEventsStayOnTheApplicationDelegate() throws {
        let h = try Harness.scenes()
        try h.launch()
        XCTAssertEqual(try h.perform(.memoryWarning(.critical)), [
            "delegate applicationDidReceiveMemoryWarning: [a]", #"notification didReceiveMemoryWarning ({"level":"critical"})"#,
        ])
        XCTAssertEqual(try h.perform(.significantTimeChange), ["notification significantTimeChange", "delegate applicationSignificantTimeChange: [a]"])
        let lock = try h.perform(.lock)
        XCTAssertEqual(lock.suffix(5), [
            "notification didEnterBackground",
            "delegate applicationProtectedDataWillBecomeUnavailable: [a]",
            "notification protectedDataWillBecomeUnavailable",
            "scene-state suspended {main}",
            "state suspended",
        ])
        let unlock = try h.perform(.unlock)
        XCTAssertTrue(unlock.contains("delegate sceneWillEnterForeground: [s] {main}"), "unlock brings the scene back")
        XCTAssertEqual(h.app.state, .active)
    }

    func testLaunchIntoTheBackgroundConnectsASystemRequestedScene() throws {
        let h = try Harness.scenes { $0.backgroundModes = [.fetch] }
        XCTAssertEqual(try h.perform(.backgroundFetch), [
            "state background",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            "notification didFinishLaunching",
        ] + connectMain + [
            "scene-state background {main}",
            "delegate sceneDidEnterBackground: [s] {main}",
            "notification sceneDidEnterBackground {main}",
            "notification didEnterBackground",
            "delegate application:performFetchWithCompletionHandler: [a]",
        ])
        XCTAssertEqual(h.sceneStates, ["main=background"], "held by the completion handler")
        h.completions[0](.newData)
        XCTAssertEqual(h.trace.suffix(3), ["completion application:performFetchWithCompletionHandler: [a] (newData)",
                                           "scene-state suspended {main}", "state suspended"])
        // A wake from suspension: the application's didEnterBackground notification only, no
        // application delegate method; the scenes stay suspended.
        XCTAssertEqual(try h.perform(.backgroundFetch), [
            "state background",
            "notification didEnterBackground",
            "delegate application:performFetchWithCompletionHandler: [a]",
        ])
        XCTAssertEqual(h.sceneStates, ["main=suspended"])
    }

    func testABackgroundTaskHoldsTheBackgroundScenes() throws {
        let h = try Harness.scenes()
        try h.launch()
        let task = try h.app.beginBackgroundTask(named: "upload", owner: "a")
        try h.perform(.home)
        XCTAssertEqual(h.sceneStates, ["main=background"])
        XCTAssertEqual(h.app.state, .background)
        XCTAssertNotNil(h.app.backgroundTimeRemaining)
        try h.app.endBackgroundTask(task)
        XCTAssertEqual(h.trace.suffix(3), ["background-task end [a] (#1 upload)", "scene-state suspended {main}", "state suspended"])
    }

    func testSceneDidEnterBackgroundIsBudgeted() throws {
        let h = try Harness.scenes {
            $0.watchdogPolicy = .report
            $0.budgets.didEnterBackground = .milliseconds(20)
        }
        var slow = h.recordingSceneDelegate("slow")
        slow.didEnterBackground = { _, _ in usleep(60_000) }
        try h.app.addSceneDelegate(slow, id: "slow")
        try h.launch()
        let trace = try h.perform(.home)
        let report = try XCTUnwrap(trace.first { $0.hasPrefix("watchdog") })
        XCTAssertTrue(report.hasPrefix("watchdog sceneDidEnterBackground: [slow] (sceneDidEnterBackground: by 'slow' overran the didEnterBackground budget"), report)
        XCTAssertEqual(h.app.state, .suspended, "policy report: the sequence goes on")
    }

    func testPerSceneRestorationAcrossDisconnectAndReconnect() throws {
        let folder = NSTemporaryDirectory() + "scenes-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let h = try Harness.scenes { $0.archiveDirectory = folder }
        try h.launch()
        try h.perform(.connectScene("side"))
        h.restoring["side"] = UserActivity(activityType: "com.example.reading", title: "Chapter 3", userInfo: ["page": 41])
        XCTAssertEqual(try h.perform(.moveSceneToBackground("side")).suffix(5), [
            "delegate sceneDidEnterBackground: [s] {side}",
            "notification sceneDidEnterBackground {side}",
            "delegate stateRestorationActivityForScene: [s] {side}",
            "archive saved [s] {side} (3 keys)",
            "scene-state suspended {side}",
        ])
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/scenes/side/s.lcarchive"))
        try h.perform(.disconnectScene("side"))
        let seenBefore = h.seen.count
        // Read before willConnect, in the session; handed over again in
        // scene:restoreInteractionStateWithUserActivity: when the scene reaches the foreground (decision 48).
        XCTAssertEqual(try h.perform(.connectScene("side")), [
            "archive read [s] {side} (3 keys)",
            "delegate scene:willConnectToSession:options: [s] {side}",
            "notification sceneWillConnect {side}",
            "delegate sceneWillEnterForeground: [s] {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "delegate scene:restoreInteractionStateWithUserActivity: [s] {side}",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [s] {side}",
            "notification sceneDidActivate {side}",
        ])
        XCTAssertEqual(h.seen[seenBefore],
                       #"s scene:willConnectToSession:options: side restored=com.example.reading "Chapter 3" {"page":41} scene=unattached app=active"#)
        XCTAssertTrue(h.seen.contains(#"s scene:restoreInteractionStateWithUserActivity: side com.example.reading "Chapter 3" {"page":41} scene=foreground-inactive app=active"#),
                      h.seen.joined(separator: "\n"))
        // Once a connection: the next trip to the foreground restores nothing.
        try h.perform(.moveSceneToBackground("side"))
        XCTAssertFalse(try h.perform(.bringSceneToForeground("side")).contains { $0.contains("restoreInteractionState") })
        // The archive is per scene: main saved nothing, so it restores nothing.
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/scenes/main/s.lcarchive"))
        // Discarding the session removes its archive.
        try h.perform(.moveSceneToBackground("side"))
        try h.perform(.discardSceneSession("side"))
        XCTAssertFalse(FileManager.default.fileExists(atPath: folder + "/scenes/side/s.lcarchive"))
    }

    /// Issue 20, reading 4 (decision 48): while the device is locked a scene connects without its
    /// restoration activity (the archive is not read: protected data is unavailable); the archive is
    /// read when the data becomes available, and the activity is handed over in
    /// `scene:restoreInteractionStateWithUserActivity:` when the scene first comes to the foreground.
    func testNoRestorationWhileLockedThenTheActivityWhenTheDataBecomesAvailable() throws {
        let folder = NSTemporaryDirectory() + "scenes-locked-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let h = try Harness.scenes { $0.archiveDirectory = folder }
        try h.launch()
        try h.perform(.connectScene("side"))
        h.restoring["side"] = UserActivity(activityType: "com.example.reading", title: "Chapter 3", userInfo: ["page": 41])
        try h.perform(.moveSceneToBackground("side"))
        try h.perform(.disconnectScene("side"))
        h.restoring.removeAll()
        try h.perform(.lock)
        XCTAssertFalse(h.app.isProtectedDataAvailable)
        let seenBefore = h.seen.count
        XCTAssertEqual(try h.perform(.connectScene("side", inBackground: true)), [
            "state background",
            "archive deferred [s] {side} (protected data is unavailable (the device is locked); read when it becomes available)",
            "delegate scene:willConnectToSession:options: [s] {side}",
            "notification sceneWillConnect {side}",
            "scene-state background {side}",
            "delegate sceneDidEnterBackground: [s] {side}",
            "notification sceneDidEnterBackground {side}",
            "delegate stateRestorationActivityForScene: [s] {side}",
            "scene-state suspended {side}",
            "state suspended",
        ])
        XCTAssertEqual(h.seen[seenBefore], "s scene:willConnectToSession:options: side scene=unattached app=background",
                       "no restored activity while locked")
        XCTAssertTrue(FileManager.default.fileExists(atPath: folder + "/scenes/side/s.lcarchive"), "the archive is kept, not read")
        // The data becomes available at the unlock: the archive is read then, before the delegates hear of it.
        let unlock = try h.perform(.unlock)
        let read = try XCTUnwrap(unlock.firstIndex(of: "archive read [s] {side} (3 keys)"), unlock.joined(separator: "\n"))
        let told = try XCTUnwrap(unlock.firstIndex(of: "delegate applicationProtectedDataDidBecomeAvailable: [a]"), unlock.joined(separator: "\n"))
        XCTAssertLessThan(read, told)
        XCTAssertFalse(unlock.contains { $0.contains("restoreInteractionState") }, "side stays in the background")
        // Handed over when side first comes to the foreground.
        XCTAssertEqual(Array(try h.perform(.bringSceneToForeground("side")).prefix(6)), [
            "scene-state background {side}",
            "delegate sceneWillEnterForeground: [s] {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "delegate scene:restoreInteractionStateWithUserActivity: [s] {side}",
            "scene-state foreground-active {side}",
        ])
        XCTAssertTrue(h.seen.contains(#"s scene:restoreInteractionStateWithUserActivity: side com.example.reading "Chapter 3" {"page":41} scene=foreground-inactive app=active"#),
                      h.seen.joined(separator: "\n"))
    }

    /// Issue 20 (decision 52): the user swipes a foreground scene away in the app switcher —
    /// `sceneWillResignActive:` then `sceneDidDisconnect:`, no `sceneDidEnterBackground:` (the reports of
    /// UIKit's behaviour), then the session is discarded; the last scene's close force-quits the app.
    func testClosingAForegroundSceneInTheAppSwitcher() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        XCTAssertEqual(try h.perform(.closeScene("side")), [
            "delegate sceneWillResignActive: [s] {side}",
            "notification sceneWillDeactivate {side}",
            "scene-state foreground-inactive {side}",
            "scene-state unattached {side}",
            "delegate sceneDidDisconnect: [s] {side}",
            "notification sceneDidDisconnect {side}",
            "delegate application:didDiscardSceneSessions: [a] {side}",
        ])
        XCTAssertEqual(h.app.state, .active, "main keeps the application active")
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), ["main"], "the session is gone")
        XCTAssertFalse(h.seen.contains { $0.hasPrefix("s sceneDidEnterBackground: side") })

        // The last foreground scene, another connected in the background: the application leaves the
        // foreground with it, and suspends with the other scene at the end of the action.
        try h.perform(.connectScene("location", inBackground: true))
        XCTAssertEqual(try h.perform(.closeScene("main")), [
            "delegate sceneWillResignActive: [s] {main}",
            "notification sceneWillDeactivate {main}",
            "notification willResignActive",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state unattached {main}",
            "state background",
            "delegate sceneDidDisconnect: [s] {main}",
            "notification sceneDidDisconnect {main}",
            "notification didEnterBackground",
            "delegate application:didDiscardSceneSessions: [a] {main}",
            "state suspended",
        ])
        XCTAssertEqual(h.sceneStates, ["location=suspended"])

        // The last connected scene: the user force-quits the application.
        try h.perform(.foreground)
        XCTAssertEqual(h.sceneStates, ["location=foreground-active"])
        XCTAssertEqual(Array(try h.perform(.closeScene("location")).suffix(4)), [
            "delegate application:didDiscardSceneSessions: [a] {location}",
            "delegate applicationWillTerminate: [a]",
            "notification willTerminate",
            "state not-running (its last scene closed in the app switcher, after applicationWillTerminate:)",
        ])
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), [])

        // Only a foreground scene is swiped away; a background one's session is discarded instead.
        try h.launch()
        try h.perform(.connectScene("bg", inBackground: true))
        XCTAssertApplicationError(try h.app.perform(.closeScene("bg")), .illegalAction,
                                  "action 'scene close bg' is not allowed: scene 'bg' is suspended; only a foreground scene is closed from the app switcher (a background scene's session is discarded with 'scene discard')")
    }

    /// Issue 20, decision 53: the application's own scene requests are checked when asked and
    /// performed later — after the action or callback that asked, in the order asked — each traced as
    /// a `scene-request` event before the steps it takes.
    func testSceneRequestsArePerformedLaterInTheOrderAsked() throws {
        let h = try Harness.scenes()
        try h.launch()
        XCTAssertEqual(try h.app.requestSceneSessionActivation(nil, requester: "t"), "scene-1", "a new session, named by the system")
        try h.app.requestSceneSessionActivation("main", requester: "t")  // already active: nothing to do
        try h.app.requestSceneSessionRefresh("main", requester: "t")
        XCTAssertEqual(h.sceneStates, ["main=foreground-active"], "nothing happens while the asker runs")
        var start = h.trace.count
        h.loop.dispatchPending()
        XCTAssertEqual(Array(h.trace[start...]), [
            "scene-request activation [t] {scene-1} (session scene-1)",
            "delegate application:configurationForConnectingSceneSession:options: [a] {scene-1}",
            "delegate scene:willConnectToSession:options: [s] {scene-1}",
            "notification sceneWillConnect {scene-1}",
            "delegate sceneWillEnterForeground: [s] {scene-1}",
            "notification sceneWillEnterForeground {scene-1}",
            "scene-state foreground-inactive {scene-1}",
            "scene-state foreground-active {scene-1}",
            "delegate sceneDidBecomeActive: [s] {scene-1}",
            "notification sceneDidActivate {scene-1}",
            "scene-request activation [t] {main} (session main)",
            "scene-request refresh [t] {main} (session main)",
        ])
        // Asked from inside a callback: performed once the action is over.
        var askedDuring: String?
        h.app.center.observe(.sceneWillDeactivate, owner: "t") { [unowned h] _ in
            guard askedDuring == nil else { return }
            askedDuring = h.app.currentAction
            try? h.app.requestSceneSessionDestruction("scene-1", requester: "t")
        }
        try h.perform(.deactivateScene("main"))
        XCTAssertEqual(askedDuring, "scene deactivate")
        XCTAssertEqual(h.sceneStates, ["main=foreground-inactive", "scene-1=foreground-active"])
        start = h.trace.count
        h.loop.dispatchPending()
        XCTAssertEqual(Array(h.trace[start...]), [
            "scene-request destruction [t] {scene-1} (session scene-1)",
            "delegate sceneWillResignActive: [s] {scene-1}",
            "notification sceneWillDeactivate {scene-1}",
            "notification willResignActive",
            "scene-state foreground-inactive {scene-1}",
            "state inactive",
            "scene-state background {scene-1}",
            "delegate sceneDidEnterBackground: [s] {scene-1}",
            "notification sceneDidEnterBackground {scene-1}",
            "scene-state suspended {scene-1}",
            "scene-state unattached {scene-1}",
            "delegate sceneDidDisconnect: [s] {scene-1}",
            "notification sceneDidDisconnect {scene-1}",
            "delegate application:didDiscardSceneSessions: [a] {scene-1}",
        ])
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), ["main"])
        // Refused when asked, with the reason; nothing is scheduled.
        XCTAssertApplicationError(try h.app.requestSceneSessionRefresh("ghost"), .unknownScene,
                                  "requestSceneSessionRefresh: no scene session 'ghost' exists (sessions: main)")
        let single = try Harness.scenes { $0.sceneManifest = SceneManifest(supportsMultipleScenes: false) }
        try single.launch()
        XCTAssertApplicationError(_ = try single.app.requestSceneSessionActivation(nil), .illegalAction,
                                  "requestSceneSessionActivation is not allowed: the application does not support multiple scenes and scene 'main' is connected")
        let plain = try Harness()
        try plain.launch()
        XCTAssertApplicationError(try plain.app.requestSceneSessionDestruction("main"), .illegalAction,
                                  "requestSceneSessionDestruction is not allowed: the application is not scene-based (no scene manifest; the host's --scenes)")
        // The application stopped before the system got to it: traced as refused, nothing done.
        try h.app.requestSceneSessionActivation(nil, requester: "t")
        try h.perform(.terminate)
        start = h.trace.count
        h.loop.dispatchPending()
        XCTAssertEqual(Array(h.trace[start...]), [
            "error scene request [t] {scene-2} (activation of session scene-2 refused: the application stopped running since it asked)",
        ])
    }

    /// `UISceneSession.userInfo` (issue 20): kept with the session across a disconnection and a
    /// relaunch, shown by the connected scene's session at once, gone with a discarded session.
    func testSessionUserInfoIsKeptWithTheSession() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        try h.app.setUserInfo(["draft": 7], forSession: "side")
        XCTAssertEqual(h.app.scene(id: "side")?.session.userInfo, ["draft": 7])
        XCTAssertEqual(h.app.scene(id: "side")?.session.role, "application")
        try h.perform(.moveSceneToBackground("side"))
        try h.perform(.disconnectScene("side"))
        try h.perform(.terminate)
        try h.launch()
        try h.perform(.connectScene("side"))
        XCTAssertEqual(h.app.scene(id: "side")?.session.userInfo, ["draft": 7], "kept across a disconnection and a relaunch")
        XCTAssertEqual(h.app.sceneSession(id: "side")?.userInfo, ["draft": 7])
        try h.perform(.moveSceneToBackground("side"))
        try h.perform(.discardSceneSession("side"))
        XCTAssertNil(h.app.sceneSession(id: "side"))
        XCTAssertApplicationError(try h.app.setUserInfo([:], forSession: "side"), .unknownScene, "setUserInfo: no scene session 'side' exists")
        try h.perform(.connectScene("side"))
        XCTAssertEqual(h.app.scene(id: "side")?.session.userInfo, [:], "a new session starts empty")
    }

    /// With no archive folder there is nothing to defer: a connection while locked traces no
    /// `archive deferred` (decision 48).
    func testNoDeferralWithoutAnArchiveFolder() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.lock)
        XCTAssertFalse(try h.perform(.connectScene("side", inBackground: true)).contains { $0.hasPrefix("archive") })
    }

    func testOpenURLInAScene() throws {
        let h = try Harness.scenes()
        // Not running: the launch connects the scene with the URL in its connection options.
        let launch = try h.perform(.openURL("app://doc/1", sourceApplication: "com.example.mail", scene: "doc"))
        XCTAssertFalse(launch.contains { $0.contains("openURL") }, "connection options, not scene:openURLContexts:")
        XCTAssertTrue(h.seen.contains("s scene:willConnectToSession:options: doc urls=[app://doc/1] activities=[] scene=unattached app=background"))
        XCTAssertEqual(h.sceneStates, ["doc=foreground-active"])
        // Connected, in the foreground: scene:openURLContexts: only.
        XCTAssertEqual(try h.perform(.openURL("app://doc/2", scene: "doc")), ["delegate scene:openURLContexts: [s] {doc}"])
        XCTAssertEqual(h.seen.last, #"s scene:openURLContexts: doc [app://doc/2] [{}] scene=foreground-active app=active"#)
        // Connected, in the background: brought forward, the URL in foreground-inactive, then active.
        try h.perform(.connectScene("side"))
        try h.perform(.moveSceneToBackground("side"))
        XCTAssertEqual(try h.perform(.openURL("app://side", sourceApplication: "com.example.web", scene: "side")), [
            "scene-state background {side}",
            "delegate sceneWillEnterForeground: [s] {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "delegate scene:openURLContexts: [s] {side}",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [s] {side}",
            "notification sceneDidActivate {side}",
        ])
        XCTAssertEqual(h.seen.dropLast(2).last,
                       #"s scene:openURLContexts: side [app://side] [{"sourceApplication":"com.example.web"}] scene=foreground-inactive app=active"#)
        // Not connected, running: connected with the URL.
        try h.perform(.openURL("app://new", scene: "new"))
        XCTAssertEqual(h.sceneStates, ["doc=foreground-active", "side=foreground-active", "new=foreground-active"])
        // No scene named: the frontmost (first foreground-active) scene.
        XCTAssertEqual(try h.perform(.openURL("app://front")), ["delegate scene:openURLContexts: [s] {doc}"])
    }

    func testBadSceneInputIsRefusedAndChangesNothing() throws {
        let h = try Harness.scenes()
        XCTAssertApplicationError(try h.app.perform(.connectScene("side")), .illegalAction,
                                  "action 'scene connect side' is not allowed: the application is not running; launch it with 'launch scene=side'")
        try h.launch()
        try h.perform(.connectScene("side"))
        let before = h.trace.count
        let states = h.sceneStates
        XCTAssertApplicationError(try h.app.perform(.activateScene("nope")), .unknownScene,
                                  "action 'scene activate nope': no scene 'nope' is connected (connected: main, side)")
        XCTAssertApplicationError(try h.app.perform(.activateScene("side")), .illegalAction,
                                  "action 'scene activate side' is not allowed: scene 'side' is foreground-active; only a foreground-inactive scene becomes active")
        XCTAssertApplicationError(try h.app.perform(.disconnectScene("side")), .illegalAction,
                                  "action 'scene disconnect side' is not allowed: scene 'side' is foreground-active; only a background or suspended scene is disconnected (move it to the background first)")
        XCTAssertApplicationError(try h.app.perform(.bringSceneToForeground("main")), .illegalAction,
                                  "action 'scene foreground main' is not allowed: scene 'main' is foreground-active; only a background or suspended scene comes to the foreground")
        XCTAssertApplicationError(try h.app.perform(.connectScene("main")), .illegalAction,
                                  "action 'scene connect main' is not allowed: scene 'main' is already connected (foreground-active)")
        XCTAssertApplicationError(try h.app.perform(.connectScene("../etc")), .invalidArgument,
                                  #"scene id "../etc" is not valid: a scene id is 1 to 200 bytes of A-Z a-z 0-9 . _ -, not starting with '.'"#)
        XCTAssertApplicationError(try h.app.perform(.discardSceneSession("ghost")), .unknownScene,
                                  "action 'scene discard ghost': no scene session 'ghost' exists")
        XCTAssertEqual(h.trace.count, before, "a refused action leaves no trace")
        XCTAssertEqual(h.sceneStates, states)
        XCTAssertEqual(h.app.state, .active)
    }

    func testSceneActionsNeedASceneBasedApplication() throws {
        let h = try Harness()
        try h.launch()
        XCTAssertApplicationError(try h.app.perform(.connectScene("side")), .illegalAction,
                                  "action 'scene connect' is not allowed while the application is active: the application is not scene-based (no scene manifest; the host's --scenes)")
        XCTAssertApplicationError(try h.app.perform(.openURL("app://x", scene: "main")), .illegalAction,
                                  "action 'open-url' is not allowed while the application is active: the application is not scene-based (no scene manifest; the host's --scenes)")
    }

    func testOneSceneOnlyWithoutMultipleScenes() throws {
        let h = try Harness.scenes { $0.sceneManifest = SceneManifest(supportsMultipleScenes: false) }
        try h.launch()
        XCTAssertApplicationError(try h.app.perform(.connectScene("side")), .illegalAction,
                                  "action 'scene connect side' is not allowed: the application does not support multiple scenes and scene 'main' is connected")
    }

    func testASceneDelegateAsAProtocolAndItsRemoval() throws {
        final class Keeper: SceneDelegate {
            var calls: [String] = []
            func sceneDidBecomeActive(_ scene: Scene) { calls.append("active \(scene.id) \(scene.application?.state.rawValue ?? "-")") }
            func sceneDidEnterBackground(_ scene: Scene) { calls.append("background \(scene.id)") }
        }
        let h = try Harness.scenes(sceneDelegates: [])
        let keeper = Keeper()
        let token = try h.app.addSceneDelegate(keeper, id: "keeper")
        XCTAssertApplicationError(_ = try h.app.addSceneDelegate(keeper, id: "keeper"), .invalidArgument,
                                  "a scene delegate with id 'keeper' is already registered")
        XCTAssertEqual(h.app.sceneDelegateIDs, ["keeper"])
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(keeper.calls, ["active main active", "background main"])
        XCTAssertTrue(h.app.removeSceneDelegate(token))
        try h.perform(.foreground)
        XCTAssertEqual(keeper.calls.count, 2)
    }

    func testSceneNotificationsHaveTheSceneAsSenderAndUIKitAliases() throws {
        XCTAssertEqual(try NotificationName("UISceneDidActivateNotification"), .sceneDidActivate)
        XCTAssertEqual(NotificationName.sceneNames.map(\.rawValue), ["sceneWillConnect", "sceneDidDisconnect", "sceneDidActivate",
                                                                    "sceneWillDeactivate", "sceneWillEnterForeground", "sceneDidEnterBackground"])
        XCTAssertEqual(NotificationName.standard.count, 22, "the application's standard names are unchanged")
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        let side = try XCTUnwrap(h.app.scene(id: "side"))
        var got: [String] = []
        h.app.center.observe(.sceneWillDeactivate, sender: side.sender, owner: "t") { _ in got.append("side") }
        try h.perform(.deactivateScene("main"))
        try h.perform(.deactivateScene("side"))
        XCTAssertEqual(got, ["side"])
    }

    func testAnInterruptionEndsWhenTheLastSceneLeavesTheForeground() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.beginInterruption)
        try h.perform(.moveSceneToBackground("main"))
        XCTAssertEqual(h.app.state, .suspended)
        try h.perform(.foreground)
        XCTAssertEqual(h.app.state, .active)
        try h.perform(.deactivateScene("main"))
        try h.perform(.activateScene("main"))  // no stale interruption refuses it
        XCTAssertEqual(h.sceneStates, ["main=foreground-active"])
    }

    func testExitsOnSuspendScenesNeverRunInTheBackground() throws {
        let h = try Harness.scenes { $0.exitsOnSuspend = true }
        try h.launch()
        XCTAssertApplicationError(try h.app.perform(.moveSceneToBackground("main")), .illegalAction,
                                  "action 'scene background main' is not allowed: the application exits on suspend, so it never runs in the background (UIApplicationExitsOnSuspend); use home or terminate")
        XCTAssertEqual(try h.perform(.home), [
            "delegate sceneWillResignActive: [s] {main}",
            "notification sceneWillDeactivate {main}",
            "notification willResignActive",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "delegate applicationWillTerminate: [a]",
            "notification willTerminate",
            "scene-state unattached {main}",
            "state not-running",
        ])
    }
}
