import AppLifecycle
import CLifecycleABI
import Foundation
@testable import LifecycleC
import TestSupport
import XCTest

/// ABI 1.2's scenes and Handoff, driven by a C program (Fixtures/scenes.c) compiled at test time
/// against include/lifecycle.h and linked with liblifecycle.so: a scene-based application, an
/// lc_delegate_t with scene and Handoff functions, observers reading the scene from note->sender, the
/// scene actions, the trace's scene field, every refusal, a short (1.1) lc_action_t.
final class SceneABITests: XCTestCase {
    func testScenesThroughTheCABI() throws {
        let folder = try CBuild.temporaryFolder("scenes")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (compile, run) = try CBuild.runLinkedProgram("Tests/LifecycleCTests/Fixtures/scenes.c", in: folder)
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try XCTUnwrap(run)
        XCTAssertEqual(result.status, 0, result.output)
        let got = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(CBuild.mismatchedLines(got, Self.expected), [], result.output)
    }

    /// An application dropped without shutdown (a Swift caller that forgets it, a test that throws
    /// before its shutdown) takes its scene handles with it: a later shutdown of another application
    /// never reads it (that read a freed application and crashed), and its handles are not found.
    func testAnApplicationDroppedWithoutShutdownForgetsItsSceneHandles() throws {
        let before = SceneHandles.count
        var main: UnsafeRawPointer?
        do {
            var configuration = Configuration()
            configuration.sceneManifest = SceneManifest()
            let dropped = try AppHandle(configuration: configuration)
            try dropped.app.perform(.launch())
            try dropped.app.perform(.connectScene("side"))
            XCTAssertEqual(SceneHandles.count, before + 2, "main and side, met through their trace events")
            main = FFIDelegates.handle(try XCTUnwrap(dropped.app.scene(id: "main")))
        }
        XCTAssertEqual(SceneHandles.count, before, "forgotten when the handle went")
        let other = try AppHandle(configuration: Configuration())
        other.shutdown()
        XCTAssertEqual(SceneHandles.withScene(main, "scene_get_id") { _ in lc_status(LC_OK) }, lc_status(LC_ERR_NOT_FOUND))
    }

    static let expected = """
        launch scene=main
          action launch {main}
          state background
            configurationForConnecting main
            willConnect main (unattached, Main Configuration) options {}
            note sceneWillConnect (id 23) main: unattached
            sceneWillEnterForeground main (unattached; app background)
            note sceneWillEnterForeground (id 27) main: unattached
            note willEnterForeground
          scene-state foreground-inactive {main}
          state inactive
          scene-state foreground-active {main}
          state active
            sceneDidBecomeActive main (foreground-active; app active)
            note sceneDidActivate (id 25) main: foreground-active
            note sceneDidActivate (id 25) main: foreground-active
            note didBecomeActive
        connect side
          action scene connect {side}
            configurationForConnecting side
            willConnect side (unattached, Default Configuration) options {}
            note sceneWillConnect (id 23) side: unattached
            sceneWillEnterForeground side (unattached; app active)
            note sceneWillEnterForeground (id 27) side: unattached
          scene-state foreground-inactive {side}
          scene-state foreground-active {side}
            sceneDidBecomeActive side (foreground-active; app active)
            note sceneDidActivate (id 25) side: foreground-active
            note sceneDidActivate (id 25) side: foreground-active
        lc_app_scene: main main (foreground-active, Main Configuration), side side session side
        deactivate main
          action scene deactivate {main}
            sceneWillResignActive main (foreground-active)
            note sceneWillDeactivate (id 26) main: foreground-active
          scene-state foreground-inactive {main}
        activate main
          action scene activate {main}
          scene-state foreground-active {main}
            sceneDidBecomeActive main (foreground-active; app active)
            note sceneDidActivate (id 25) main: foreground-active
            note sceneDidActivate (id 25) main: foreground-active
        background side
          action scene background {side}
            sceneWillResignActive side (foreground-active)
            note sceneWillDeactivate (id 26) side: foreground-active
          scene-state foreground-inactive {side}
          scene-state background {side}
            sceneDidEnterBackground side (background; app active)
            note sceneDidEnterBackground (id 28) side: background
          scene-state suspended {side}
        open-url in side
          action open-url {side} (app://doc/7 from com.example.web)
          scene-state background {side}
            sceneWillEnterForeground side (background; app active)
            note sceneWillEnterForeground (id 27) side: background
          scene-state foreground-inactive {side}
            openURLContexts side {"urlContexts":[{"url":"app://doc/7","options":{"sourceApplication":"com.example.web"}}]}
          scene-state foreground-active {side}
            sceneDidBecomeActive side (foreground-active; app active)
            note sceneDidActivate (id 25) side: foreground-active
            note sceneDidActivate (id 25) side: foreground-active
        continue-activity in main
          action continue-activity {main} (com.example.edit "Draft" {"doc":7})
            scene willContinueUserActivityWithType main com.example.edit
            scene continueUserActivity main {"activityType":"com.example.edit","title":"Draft","userInfo":{"doc":7}}
          action continue-activity {main} (com.example.edit, failed: offline)
            scene willContinueUserActivityWithType main com.example.edit
            scene didFailToContinueUserActivity main com.example.edit: offline
          action update-activity (com.example.edit "Draft" {"doc":7})
            scene didUpdateUserActivity main {"activityType":"com.example.edit","title":"Draft","userInfo":{"doc":7}}
        background side, disconnect side, discard side
          action scene background {side}
            sceneWillResignActive side (foreground-active)
            note sceneWillDeactivate (id 26) side: foreground-active
          scene-state foreground-inactive {side}
          scene-state background {side}
            sceneDidEnterBackground side (background; app active)
            note sceneDidEnterBackground (id 28) side: background
          scene-state suspended {side}
          action scene disconnect {side}
          scene-state unattached {side}
            didDisconnect side (unattached)
            note sceneDidDisconnect (id 24) side: unattached
        kept handle after disconnect: side unattached
          action scene discard {side}
            didDiscardSceneSessions {"side":"Default Configuration"}
        connect side background
          action scene connect {side} (background)
            configurationForConnecting side
            willConnect side (unattached, Default Configuration) options {}
            note sceneWillConnect (id 23) side: unattached
          scene-state background {side}
            sceneDidEnterBackground side (background; app active)
            note sceneDidEnterBackground (id 28) side: background
          scene-state suspended {side}
        a reconnection is a new handle: yes
        -- scene requests (1.5)
        asked, not yet performed: side suspended
          action scene foreground {side}
          scene-state background {side}
            sceneWillEnterForeground side (background; app active)
            note sceneWillEnterForeground (id 27) side: background
          scene-state foreground-inactive {side}
          scene-state foreground-active {side}
            sceneDidBecomeActive side (foreground-active; app active)
            note sceneDidActivate (id 25) side: foreground-active
            note sceneDidActivate (id 25) side: foreground-active
        after a turn of the loop: side foreground-active
        refresh ghost -> LC_ERR_NOT_FOUND: lc_app_request_scene_refresh: no scene session 'ghost' exists (sessions: main, side)
        destruction NULL -> LC_ERR_INVALID_ARGUMENT: lc_app_request_scene_destruction: session_id is NULL
        activation with {} -> LC_ERR_INVALID_ARGUMENT: lc_app_request_scene_activation: activity is not a user activity: it needs a non-empty string "activityType", and "title" (a string) and "userInfo" (a dictionary) when present
        -- lists, role, userInfo (1.5)
        scenes: 2, the first main (application), the same handle as lc_app_scene's: yes
        sessions: 2: main side
        side's userInfo: {"draft":"chapter 3"}
        userInfo of ghost -> LC_ERR_NOT_FOUND: lc_app_session_user_info: no scene session 'ghost' exists (sessions: main, side)
        lc_app_scenes without count -> LC_ERR_INVALID_ARGUMENT: lc_app_scenes: count is NULL
        lc_app_sessions NULL out -> LC_ERR_INVALID_ARGUMENT: lc_app_sessions: out is NULL with capacity 4
        home
          action home
            sceneWillResignActive main (foreground-active)
            note sceneWillDeactivate (id 26) main: foreground-active
          scene-state foreground-inactive {main}
            sceneWillResignActive side (foreground-active)
            note sceneWillDeactivate (id 26) side: foreground-active
            note willResignActive
          scene-state foreground-inactive {side}
          state inactive
          scene-state background {main}
            sceneDidEnterBackground main (background; app inactive)
            note sceneDidEnterBackground (id 28) main: background
          scene-state background {side}
          state background
            sceneDidEnterBackground side (background; app background)
            note sceneDidEnterBackground (id 28) side: background
            note didEnterBackground
          scene-state suspended {main}
          scene-state suspended {side}
          state suspended
        -- refusals
        activate ghost -> LC_ERR_NOT_FOUND: action 'scene activate ghost': no scene 'ghost' is connected (connected: main, side)
        disconnect ghost -> LC_ERR_NOT_FOUND: action 'scene disconnect ghost': no scene 'ghost' is connected (connected: main, side)
        discard ghost -> LC_ERR_NOT_FOUND: action 'scene discard ghost': no scene session 'ghost' exists
        connect without scene -> LC_ERR_INVALID_ARGUMENT: lc_app_perform: a scene action needs action->scene
        connect '.bad' -> LC_ERR_INVALID_ARGUMENT: scene id ".bad" is not valid: a scene id is 1 to 200 bytes of A-Z a-z 0-9 . _ -, not starting with '.'
        activate main (suspended) -> LC_ERR_ILLEGAL_ACTION: action 'scene activate main' is not allowed: scene 'main' is suspended; only a foreground-inactive scene becomes active
        continue without activity -> LC_ERR_INVALID_ARGUMENT: lc_app_perform: a user activity action needs action->activity
        continue with {} -> LC_ERR_INVALID_ARGUMENT: lc_app_perform: action->activity is not a user activity: it needs a non-empty string "activityType", and "title" (a string) and "userInfo" (a dictionary) when present
        fail without error -> LC_ERR_INVALID_ARGUMENT: lc_app_perform: a failed user activity needs action->error
        kind 99 -> LC_ERR_INVALID_ARGUMENT: lc_app_perform: unknown action kind 99
        lc_app_scene ghost -> LC_ERR_NOT_FOUND: lc_app_scene: no scene 'ghost' is connected (connected: main, side)
        out untouched: yes
        lc_app_scene NULL id -> LC_ERR_INVALID_ARGUMENT: lc_app_scene: id is NULL
        lc_app_scene NULL out -> LC_ERR_INVALID_ARGUMENT: lc_app_scene: out is NULL
        lc_app_scene NULL app -> LC_ERR_INVALID_ARGUMENT: lc_app_scene: app is NULL
        lc_scene_get_id NULL -> LC_ERR_INVALID_ARGUMENT: lc_scene_get_id: scene is NULL
        lc_scene_get_id foreign -> LC_ERR_NOT_FOUND: lc_scene_get_id: not a scene handle (no live application has a scene at this address)
        lc_scene_get_state out NULL -> LC_ERR_INVALID_ARGUMENT: lc_scene_get_state: out is NULL
        lc_scene_state_name(9): unknown
        -- a short (1.1) lc_action_t
        short launch of an application without scenes: active
            application willContinueUserActivityWithType com.example.edit
            application continueUserActivity {"activityType":"com.example.edit","title":"Draft","userInfo":{"doc":7}}
            application willContinueUserActivityWithType com.example.edit
            application didFailToContinueUserActivity com.example.edit: offline
            application didUpdateUserActivity {"activityType":"com.example.edit","title":"Draft","userInfo":{"doc":7}}
        scene= without scenes -> LC_ERR_ILLEGAL_ACTION: action 'launch' is not allowed while the application is not-running: the application is not scene-based (no scene manifest; the host's --scenes)
        scene connect without scenes -> LC_ERR_ILLEGAL_ACTION: action 'scene connect' is not allowed while the application is not-running: the application is not scene-based (no scene manifest; the host's --scenes)
        -- terminate, destroy
          action terminate
          scene-state unattached {main} (terminated while suspended: no callback, as on iOS)
          scene-state unattached {side} (terminated while suspended: no callback, as on iOS)
          state not-running (terminated while suspended: no callback, as on iOS)
        main after terminate: unattached
        lc_scene_get_id after lc_app_destroy -> LC_ERR_NOT_FOUND: lc_scene_get_id: not a scene handle (no live application has a scene at this address)
        """
}
