import Foundation
import TestSupport
import XCTest

/// The Scenes example plugin (Plugins/Scenes, ABI 1.2: scene functions in its delegate table,
/// per-scene state, observers of the scene notifications) under the built host with --scenes, running
/// docs/scenarios/scenes.scenario: its exact trace (JSON, projected to kind, name, plugin and scene)
/// with the plugin's own lines where they happen.
final class ScenesPluginHostTests: XCTestCase {
    let host = CBuild.products + "/lifecycle-host"

    func testTheScenesPluginUnderTheTwoSceneScenario() throws {
        // Standard error into the same pipe, so that the plugin's lines (on standard error under the
        // JSON trace) come where they happen.
        let result = try CBuild.run(host, mergingStandardError: true, ["run", "--scenes", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock",
                                           "--script", HostEndToEndTests.scenarios + "/scenes.scenario",
                                           "--plugin", CBuild.products + "/libScenes.so"])
        XCTAssertEqual(result.status, 0, result.output)
        let lines = try result.output.split(separator: "\n").map(String.init).compactMap { line -> String? in
            guard line.hasPrefix("{") else { return line }  // the plugin's own output
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
            guard let kind = object["kind"] as? String, kind != "input", let name = object["name"] as? String else { return nil }
            var text = "\(kind) \(name)"
            if let plugin = object["plugin"] as? String { text += " [\(plugin)]" }
            if let scene = object["scene"] as? String { text += " {\(scene)}" }
            return text
        }
        let want = [
            "plugin loaded [org.applifecycle.scenes]",
            "action launch",
            "state background",
            "notification didFinishLaunching",
            "delegate scene:willConnectToSession:options: [org.applifecycle.scenes] {main}",
            "scenes: main connects (Default Configuration, 0 option(s))",
            "notification sceneWillConnect {main}",
            "scenes: sceneWillConnect main (unattached)",
            "notification sceneWillEnterForeground {main}",
            "scenes: sceneWillEnterForeground main (unattached)",
            "notification willEnterForeground",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state foreground-active {main}",
            "state active",
            "delegate sceneDidBecomeActive: [org.applifecycle.scenes] {main}",
            "notification sceneDidActivate {main}",
            "scenes: sceneDidActivate main (foreground-active)",
            "notification didBecomeActive",
            "action scene connect {side}",
            "delegate scene:willConnectToSession:options: [org.applifecycle.scenes] {side}",
            "scenes: side connects (Default Configuration, 0 option(s))",
            "notification sceneWillConnect {side}",
            "scenes: sceneWillConnect side (unattached)",
            "notification sceneWillEnterForeground {side}",
            "scenes: sceneWillEnterForeground side (unattached)",
            "scene-state foreground-inactive {side}",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [org.applifecycle.scenes] {side}",
            "notification sceneDidActivate {side}",
            "scenes: sceneDidActivate side (foreground-active)",
            "action scene background {side}",
            "notification sceneWillDeactivate {side}",
            "scenes: sceneWillDeactivate side (foreground-active)",
            "scene-state foreground-inactive {side}",
            "scene-state background {side}",
            "delegate sceneDidEnterBackground: [org.applifecycle.scenes] {side}",
            "notification sceneDidEnterBackground {side}",
            "scenes: sceneDidEnterBackground side (background)",
            "scene-state suspended {side}",
            "action open-url {side}",
            "scene-state background {side}",
            "notification sceneWillEnterForeground {side}",
            "scenes: sceneWillEnterForeground side (background)",
            "scene-state foreground-inactive {side}",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [org.applifecycle.scenes] {side}",
            "notification sceneDidActivate {side}",
            "scenes: sceneDidActivate side (foreground-active)",
            "action continue-activity {main}",
            "delegate scene:continueUserActivity: [org.applifecycle.scenes] {main}",
            "scenes: main continues com.example.editing",
            "action home",
            "notification sceneWillDeactivate {main}",
            "scenes: sceneWillDeactivate main (foreground-active)",
            "scene-state foreground-inactive {main}",
            "notification sceneWillDeactivate {side}",
            "scenes: sceneWillDeactivate side (foreground-active)",
            "notification willResignActive",
            "scene-state foreground-inactive {side}",
            "state inactive",
            "scene-state background {main}",
            "delegate sceneDidEnterBackground: [org.applifecycle.scenes] {main}",
            "notification sceneDidEnterBackground {main}",
            "scenes: sceneDidEnterBackground main (background)",
            "scene-state background {side}",
            "state background",
            "delegate sceneDidEnterBackground: [org.applifecycle.scenes] {side}",
            "notification sceneDidEnterBackground {side}",
            "scenes: sceneDidEnterBackground side (background)",
            "notification didEnterBackground",
            "scene-state suspended {main}",
            "scene-state suspended {side}",
            "state suspended",
            "action foreground",
            "state background",
            "scene-state background {main}",
            "notification sceneWillEnterForeground {main}",
            "scenes: sceneWillEnterForeground main (background)",
            "notification willEnterForeground",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state background {side}",
            "notification sceneWillEnterForeground {side}",
            "scenes: sceneWillEnterForeground side (background)",
            "scene-state foreground-inactive {side}",
            "scene-state foreground-active {main}",
            "state active",
            "delegate sceneDidBecomeActive: [org.applifecycle.scenes] {main}",
            "notification sceneDidActivate {main}",
            "scenes: sceneDidActivate main (foreground-active)",
            "notification didBecomeActive",
            "scene-state foreground-active {side}",
            "delegate sceneDidBecomeActive: [org.applifecycle.scenes] {side}",
            "notification sceneDidActivate {side}",
            "scenes: sceneDidActivate side (foreground-active)",
            "action scene background {side}",
            "notification sceneWillDeactivate {side}",
            "scenes: sceneWillDeactivate side (foreground-active)",
            "scene-state foreground-inactive {side}",
            "scene-state background {side}",
            "delegate sceneDidEnterBackground: [org.applifecycle.scenes] {side}",
            "notification sceneDidEnterBackground {side}",
            "scenes: sceneDidEnterBackground side (background)",
            "scene-state suspended {side}",
            "action scene disconnect {side}",
            "scene-state unattached {side}",
            "delegate sceneDidDisconnect: [org.applifecycle.scenes] {side}",
            "scenes: side disconnected after 3 activation(s), 3 trip(s) to the background",
            "notification sceneDidDisconnect {side}",
            "scenes: sceneDidDisconnect side (unattached)",
            "action terminate",
            "notification sceneWillDeactivate {main}",
            "scenes: sceneWillDeactivate main (foreground-active)",
            "notification willResignActive",
            "scene-state foreground-inactive {main}",
            "state inactive",
            "scene-state background {main}",
            "state background",
            "delegate sceneDidEnterBackground: [org.applifecycle.scenes] {main}",
            "notification sceneDidEnterBackground {main}",
            "scenes: sceneDidEnterBackground main (background)",
            "notification didEnterBackground",
            "notification willTerminate",
            "scene-state unattached {main}",
            "state not-running",
        ]
        for (index, line) in want.enumerated() {
            XCTAssertEqual(index < lines.count ? lines[index] : "<end>", line, "line \(index + 1)")
        }
        XCTAssertEqual(lines.count, want.count, result.output)
    }

    func testCheckListsTheScenesPluginsSceneMethods() throws {
        let result = try CBuild.run(host, ["check", CBuild.products + "/libScenes.so"])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertEqual(result.output, """
            \(CBuild.products)/libScenes.so
              id:          org.applifecycle.scenes
              version:     1.0.0
              abi:         1.7
              description: A scene delegate with per-scene state (ABI 1.2)
              observes:    sceneWillConnect, sceneDidDisconnect, sceneDidActivate, sceneWillDeactivate, sceneWillEnterForeground, sceneDidEnterBackground
              delegates:   (none)
              scenes:      scene:willConnectToSession:options:, sceneDidDisconnect:, sceneDidBecomeActive:, sceneDidEnterBackground:, scene:continueUserActivity:

            """)
    }
}
