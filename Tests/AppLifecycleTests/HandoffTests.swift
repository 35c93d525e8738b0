import XCTest
@testable import AppLifecycle

/// Handoff (seed 004): continuing a user activity in a running, suspended and not-running
/// application, the failure path, and the scene counterparts.
final class HandoffTests: XCTestCase {
    let activity = UserActivity(activityType: "com.example.edit", title: "Draft", userInfo: ["doc": 7])

    func testContinueInARunningApplication() throws {
        let h = try Harness.scenesOff()
        try h.launch()
        XCTAssertEqual(try h.perform(.continueUserActivity(activity)), [
            "delegate application:willContinueUserActivityWithType: [a]",
            "delegate application:continueUserActivity:restorationHandler: [a]",
        ])
        XCTAssertEqual(h.seen.suffix(2), ["a willContinue com.example.edit state=active", #"a continue com.example.edit "Draft" {"doc":7} state=active"#])
        XCTAssertEqual(h.app.state, .active)
        let action = try XCTUnwrap(h.fullTrace.last { $0.kind == .action })
        XCTAssertEqual(action.description, #"action continue-activity (com.example.edit "Draft" {"doc":7})"#)
    }

    func testContinueBringsASuspendedApplicationForward() throws {
        let h = try Harness.scenesOff()
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.continueUserActivity(activity)), [
            "state background",
            "notification willEnterForeground",
            "delegate applicationWillEnterForeground: [a]",
            "state inactive",
            "delegate application:willContinueUserActivityWithType: [a]",
            "delegate application:continueUserActivity:restorationHandler: [a]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
        XCTAssertTrue(h.seen.contains(#"a continue com.example.edit "Draft" {"doc":7} state=inactive"#))
    }

    func testContinueLaunchesANotRunningApplicationWithTheActivityInItsLaunchOptions() throws {
        let h = try Harness.scenesOff()
        let options = #"{"userActivityType":"com.example.edit","userActivityDictionary":{"activityType":"com.example.edit","title":"Draft","userInfo":{"doc":7}}}"#
        XCTAssertEqual(try h.perform(.continueUserActivity(activity)), [
            "state inactive",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            "notification didFinishLaunching (\(options))",
            "delegate application:willContinueUserActivityWithType: [a]",
            "delegate application:continueUserActivity:restorationHandler: [a]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(h.app.state, .active)
    }

    func testADeclinedLaunchSkipsTheContinuation() throws {
        let h = try Harness.scenesOff()
        h.answers["a"] = [.didFinishLaunching: false]
        let trace = try h.perform(.continueUserActivity(activity))
        XCTAssertEqual(trace.filter { $0.hasPrefix("skipped") }, [
            "skipped application:willContinueUserActivityWithType: (a launch method returned false)",
            "skipped application:continueUserActivity:restorationHandler: (a launch method returned false)",
        ])
        XCTAssertFalse(trace.contains { $0.hasPrefix("delegate application:continueUserActivity") })
    }

    func testTheFailurePath() throws {
        let h = try Harness.scenesOff()
        XCTAssertEqual(try h.perform(.failToContinueUserActivity(type: "com.example.edit", error: "the activity could not be fetched")), [
            "state inactive",
            "delegate application:willFinishLaunchingWithOptions: [a]",
            "delegate application:didFinishLaunchingWithOptions: [a]",
            #"notification didFinishLaunching ({"userActivityType":"com.example.edit"})"#,
            "delegate application:willContinueUserActivityWithType: [a]",
            "delegate application:didFailToContinueUserActivityWithType:error: [a]",
            "state active",
            "delegate applicationDidBecomeActive: [a]",
            "notification didBecomeActive",
        ])
        XCTAssertEqual(h.seen.filter { $0.contains("didFail") }, ["a didFail com.example.edit the activity could not be fetched"])
        XCTAssertEqual(try h.perform(.failToContinueUserActivity(type: "com.example.edit", error: "gone")), [
            "delegate application:willContinueUserActivityWithType: [a]",
            "delegate application:didFailToContinueUserActivityWithType:error: [a]",
        ])
    }

    func testUpdateActivity() throws {
        let h = try Harness.scenesOff()
        XCTAssertApplicationError(try h.app.perform(.updateUserActivity(activity)), .illegalAction,
                                  "action 'update-activity' is not allowed while the application is not-running: only a running application updates its activity")
        try h.launch()
        XCTAssertEqual(try h.perform(.updateUserActivity(activity)), ["delegate application:didUpdateUserActivity: [a]"])
        let s = try Harness.scenes()
        try s.launch()
        XCTAssertEqual(try s.perform(.updateUserActivity(activity, scene: "main")), ["delegate scene:didUpdateUserActivity: [s] {main}"])
        XCTAssertApplicationError(try s.app.perform(.updateUserActivity(activity, scene: "nope")), .unknownScene,
                                  "action 'update-activity': no scene 'nope' is connected")
    }

    func testBadHandoffInputIsRefused() throws {
        let h = try Harness.scenesOff()
        XCTAssertApplicationError(try h.app.perform(.continueUserActivity(UserActivity(activityType: ""))), .invalidArgument,
                                  "a user activity needs a non-empty type")
        try h.perform(.lock)
        XCTAssertApplicationError(try h.app.perform(.continueUserActivity(activity)), .illegalAction,
                                  "action 'continue-activity' is not allowed while the application is not-running: the device is locked; unlock it first")
        XCTAssertEqual(h.app.state, .notRunning)
    }

    // MARK: Scenes

    func testContinueInAConnectedSceneBringsItForward() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.connectScene("side"))
        try h.perform(.moveSceneToBackground("side"))
        XCTAssertEqual(try h.perform(.continueUserActivity(activity, scene: "side")), [
            "scene-state background {side}",
            "delegate sceneWillEnterForeground: [s] {side}",
            "notification sceneWillEnterForeground {side}",
            "scene-state foreground-inactive {side}",
            "delegate scene:willContinueUserActivityWithType: [s] {side}",
            "delegate scene:continueUserActivity: [s] {side}",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [s] {side}",
            "notification sceneDidActivate {side}",
        ])
        XCTAssertFalse(h.seen.contains { $0.hasPrefix("a willContinue") || $0.hasPrefix("a continue") },
                       "a scene-based application's scene delegate continues it, not the application delegate")
    }

    func testContinueLaunchesASceneWithTheActivityInItsConnectionOptions() throws {
        let h = try Harness.scenes()
        let trace = try h.perform(.continueUserActivity(activity, scene: "editor"))
        XCTAssertFalse(trace.contains { $0.contains("ContinueUserActivity") || $0.contains("continueUserActivity") },
                       "UIKit hands the activity to scene:willConnectToSession:options:")
        XCTAssertTrue(h.seen.contains(#"s scene:willConnectToSession:options: editor urls=[] activities=[com.example.edit "Draft" {"doc":7}] scene=unattached app=background"#))
        XCTAssertEqual(h.sceneStates, ["editor=foreground-active"])
    }

    func testSceneFailurePathInASuspendedApplication() throws {
        let h = try Harness.scenes()
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.failToContinueUserActivity(type: "com.example.edit", error: "offline", scene: "main")), [
            "state background",
            "scene-state background {main}",
            "delegate sceneWillEnterForeground: [s] {main}",
            "notification sceneWillEnterForeground {main}",
            "notification willEnterForeground",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "delegate scene:willContinueUserActivityWithType: [s] {main}",
            "delegate scene:didFailToContinueUserActivityWithType:error: [s] {main}",
            "scene-state foreground-active {main}",
            "state active",
            "delegate sceneDidBecomeActive: [s] {main}",
            "notification sceneDidActivate {main}",
            "notification didBecomeActive",
        ])
        XCTAssertTrue(h.seen.contains("s scene:didFailToContinueUserActivityWithType:error: main com.example.edit offline scene=foreground-inactive app=inactive"))
    }
}

extension Harness {
    /// The plain recording harness (no scenes) with the Handoff methods on delegate `a`.
    static func scenesOff() throws -> Harness {
        let h = try Harness()
        h.app.removeDelegate(id: "a")
        var handlers = h.recordingDelegate("a")
        h.addHandoffMethods(&handlers, "a")
        try h.app.addDelegate(handlers, id: "a")
        return h
    }
}
