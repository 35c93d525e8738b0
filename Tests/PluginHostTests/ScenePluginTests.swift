import AppLifecycle
import CLifecycleABI
import Foundation
import Glibc
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// ABI 1.2: plugins' scene and Handoff delegate functions — exported 1.0-style symbols called through
/// libffi, the 1.2 fields of the delegate table with per-plugin state, a shorter table that gets no
/// scene calls — and the host's scene accessors refusing bad handles.
final class ScenePluginTests: XCTestCase {
    var folder = ""
    override func setUpWithError() throws { folder = try CBuild.temporaryFolder("scene-plugins") }
    override func tearDown() { try? FileManager.default.removeItem(atPath: folder) }

    func sceneApp(archives: String? = nil) throws -> AppHandle {
        var configuration = Configuration()
        configuration.sceneManifest = SceneManifest()
        configuration.archiveDirectory = archives
        configuration.watchdogPolicy = .report
        return try AppHandle(configuration: configuration)
    }

    /// The delegate-call lines of a trace (compact form), and the scene-state lines.
    func record(_ handle: AppHandle) -> () -> [String] {
        final class Box { var lines: [String] = [] }
        let box = Box()
        handle.swiftTraceHandler = { event in
            if event.kind == .delegate || event.kind == .sceneState || event.kind == .action { box.lines.append(event.description) }
        }
        return { defer { box.lines = [] }; return box.lines }
    }

    func text(_ image: UnsafeMutableRawPointer, _ name: String, _ state: UnsafeMutableRawPointer? = nil) -> String {
        let fn = unsafeBitCast(dlsym(image, name)!, to: (@convention(c) (UnsafeMutableRawPointer?) -> UnsafePointer<CChar>).self)
        return String(cString: fn(state))
    }

    // MARK: ABI 1.0 style: exported symbols through libffi

    static let exported = """
        #define LC_DECLARE_DELEGATE_FUNCTIONS
        #include <stdio.h>
        #include <string.h>
        static char seen[4096];
        static void note(const char *what, lc_scene *scene) {
            const char *id = "?";
            lc_scene_state state = 99;
            if (scene) { host->scene_get_id(NULL, scene, &id); }
            (void)state;
            size_t n = strlen(seen);
            snprintf(seen + n, sizeof seen - n, "%s%s%s|", what, scene ? " " : "", scene ? id : "");
        }
        const char *application_configurationForConnectingSceneSession_options(lc_app *app, const char *session_id, const lc_dict *options) {
            (void)app, (void)options; note("configuration", NULL); strcat(seen, session_id); strcat(seen, "|"); return "Exported";
        }
        void application_didDiscardSceneSessions(lc_app *app, const lc_dict *sessions) {
            (void)app; note("discard", NULL); strcat(seen, host->dict->json(sessions)); strcat(seen, "|");
        }
        void scene_willConnectToSession_options(lc_app *app, lc_scene *scene, const lc_dict *options) {
            (void)app; note("willConnect", scene);
            if (host->dict->count(options)) { strcat(seen, host->dict->json(options)); strcat(seen, "|"); }
        }
        void sceneDidDisconnect(lc_app *app, lc_scene *scene) { (void)app; note("didDisconnect", scene); }
        void sceneDidBecomeActive(lc_app *app, lc_scene *scene) { (void)app; note("didBecomeActive", scene); }
        void sceneWillResignActive(lc_app *app, lc_scene *scene) { (void)app; note("willResignActive", scene); }
        void sceneWillEnterForeground(lc_app *app, lc_scene *scene) { (void)app; note("willEnterForeground", scene); }
        void sceneDidEnterBackground(lc_app *app, lc_scene *scene) { (void)app; note("didEnterBackground", scene); }
        bool stateRestorationActivityForScene(lc_app *app, lc_scene *scene, lc_dict *activity) {
            (void)app; note("restoration", scene);
            host->dict->set_string(activity, "activityType", "com.example.view");
            return true;
        }
        void scene_didUpdateUserActivity(lc_app *app, lc_scene *scene, const lc_dict *activity) {
            (void)app; note("didUpdate", scene); strcat(seen, host->dict->json(activity)); strcat(seen, "|");
        }
        void scene_restoreInteractionStateWithUserActivity(lc_app *app, lc_scene *scene, const lc_dict *activity) {
            (void)app; note("restoreInteraction", scene); strcat(seen, host->dict->json(activity)); strcat(seen, "|");
        }
        LC_EXPORT const char *fx_seen(void *unused) { (void)unused; return seen; }
        """

    func testExportedSceneFunctionsAreCalledThroughLibffiInOrder() throws {
        // scene_get_id with a NULL plugin fails: the exported functions need their plugin handle, kept by init.
        let source = CBuild.plugin(id: "com.example.exported", initBody: "self = plugin; return LC_OK;",
                                   extra: "static lc_plugin *self;\n" + Self.exported.replacingOccurrences(of: "host->scene_get_id(NULL,", with: "host->scene_get_id(self,"))
        let path = try CBuild.sharedObject(source, named: "exported", in: folder)
        let handle = try sceneApp(archives: folder + "/archives")
        defer { handle.shutdown() }
        let trace = record(handle)
        let plugin = try handle.loadPlugin(path: path)
        XCTAssertEqual(plugin.implementedMethods, [.configurationForConnecting, .didDiscardSceneSessions])
        XCTAssertEqual(plugin.implementedSceneMethods, [.sceneWillConnect, .sceneDidDisconnect, .sceneDidBecomeActive,
                                                        .sceneWillResignActive, .sceneWillEnterForeground, .sceneDidEnterBackground,
                                                        .stateRestorationActivity, .sceneDidUpdateUserActivity,
                                                        .sceneRestoreInteractionState])
        let image = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD))

        try handle.app.perform(.launch())
        try handle.app.perform(.connectScene("side"))
        try handle.app.perform(.moveSceneToBackground("side"))
        try handle.app.perform(.updateUserActivity(UserActivity(activityType: "com.example.read", userInfo: ["page": 3]), scene: "main"))
        try handle.app.perform(.disconnectScene("side"))
        try handle.app.perform(.connectScene("side", inBackground: true))  // its saved activity comes back
        try handle.app.perform(.bringSceneToForeground("side"))  // … and again, to restore the interaction (ABI 1.5)
        try handle.app.perform(.moveSceneToBackground("side"))
        try handle.app.perform(.disconnectScene("side"))
        try handle.app.perform(.discardSceneSession("side"))
        XCTAssertEqual(text(image, "fx_seen").split(separator: "|").map(String.init), [
            "configuration", "main",
            "willConnect main", "willEnterForeground main", "didBecomeActive main",
            "configuration", "side",
            "willConnect side", "willEnterForeground side", "didBecomeActive side",
            "willResignActive side", "didEnterBackground side", "restoration side",
            "didUpdate main", #"{"activityType":"com.example.read","userInfo":{"page":3}}"#,
            "didDisconnect side",
            "willConnect side",  // its session is kept: no configuration question (decision 47)
            #"{"stateRestorationActivity":{"activityType":"com.example.view","userInfo":{}}}"#,
            "didEnterBackground side", "restoration side",
            "willEnterForeground side", "restoreInteraction side", #"{"activityType":"com.example.view","userInfo":{}}"#,
            "didBecomeActive side", "willResignActive side", "didEnterBackground side", "restoration side",
            "didDisconnect side",
            "discard", #"{"side":"Exported"}"#,
        ])
        XCTAssertEqual(trace().filter { $0.hasPrefix("delegate") }, [
            "delegate application:configurationForConnectingSceneSession:options: [com.example.exported] {main}",
            "delegate scene:willConnectToSession:options: [com.example.exported] {main}",
            "delegate sceneWillEnterForeground: [com.example.exported] {main}",
            "delegate sceneDidBecomeActive: [com.example.exported] {main}",
            "delegate application:configurationForConnectingSceneSession:options: [com.example.exported] {side}",
            "delegate scene:willConnectToSession:options: [com.example.exported] {side}",
            "delegate sceneWillEnterForeground: [com.example.exported] {side}",
            "delegate sceneDidBecomeActive: [com.example.exported] {side}",
            "delegate sceneWillResignActive: [com.example.exported] {side}",
            "delegate sceneDidEnterBackground: [com.example.exported] {side}",
            "delegate stateRestorationActivityForScene: [com.example.exported] {side}",
            "delegate scene:didUpdateUserActivity: [com.example.exported] {main}",
            "delegate sceneDidDisconnect: [com.example.exported] {side}",
            "delegate scene:willConnectToSession:options: [com.example.exported] {side}",
            "delegate sceneDidEnterBackground: [com.example.exported] {side}",
            "delegate stateRestorationActivityForScene: [com.example.exported] {side}",
            "delegate sceneWillEnterForeground: [com.example.exported] {side}",
            "delegate scene:restoreInteractionStateWithUserActivity: [com.example.exported] {side}",
            "delegate sceneDidBecomeActive: [com.example.exported] {side}",
            "delegate sceneWillResignActive: [com.example.exported] {side}",
            "delegate sceneDidEnterBackground: [com.example.exported] {side}",
            "delegate stateRestorationActivityForScene: [com.example.exported] {side}",
            "delegate sceneDidDisconnect: [com.example.exported] {side}",
            "delegate application:didDiscardSceneSessions: [com.example.exported] {side}",
        ])
        XCTAssertEqual(handle.app.sceneSessions.map(\.configurationName), ["Exported"])
        handle.unload(plugin)
        XCTAssertEqual(handle.app.sceneDelegateIDs, [], "unloading removes the scene delegate")
        try handle.app.perform(.connectScene("side"))
        XCTAssertEqual(trace().filter { $0.hasPrefix("delegate") }, [])
    }

    // MARK: ABI 1.2 fields of the delegate table: per-plugin state

    static let table = """
        #include <stddef.h>
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        typedef struct st { lc_plugin *plugin; char seen[4096]; int actives; } st;
        static void add(st *s, const char *what, lc_scene *scene) {
            const char *id = "?", *configuration = "?";
            lc_scene_state state = 99;
            host->scene_get_id(s->plugin, scene, &id);
            host->scene_get_state(s->plugin, scene, &state);
            host->scene_get_configuration_name(s->plugin, scene, &configuration);
            size_t n = strlen(s->seen);
            snprintf(s->seen + n, sizeof s->seen - n, "%s %s %u %s|", what, id, state, configuration);
        }
        static const char *configuration(lc_plugin *p, void *state, const char *session, const lc_dict *options) {
            (void)p, (void)state, (void)options; return strcmp(session, "main") ? NULL : "Table";
        }
        static void will_connect(lc_plugin *p, void *state, lc_scene *scene, const lc_dict *options) { (void)p, (void)options; add(state, "willConnect", scene); }
        static void active(lc_plugin *p, void *state, lc_scene *scene) { (void)p; ((st *)state)->actives++; add(state, "active", scene); }
        static void resign(lc_plugin *p, void *state, lc_scene *scene) { (void)p; add(state, "resign", scene); }
        static void background(lc_plugin *p, void *state, lc_scene *scene) { (void)p; add(state, "background", scene); }
        static void disconnect(lc_plugin *p, void *state, lc_scene *scene) { (void)p; add(state, "disconnect", scene); }
        static void will_continue(lc_plugin *p, void *state, lc_scene *scene, const char *type) { (void)p; add(state, type, scene); }
        static void failed(lc_plugin *p, void *state, lc_scene *scene, const char *type, const char *error) {
            (void)p, (void)type; add(state, error, scene);
        }
        static const lc_plugin_delegate_t table = {
            .struct_size = TABLE_SIZE, .configuration_for_connecting = configuration, .scene_will_connect = will_connect,
            .scene_did_become_active = active, .scene_will_resign_active = resign, .scene_did_enter_background = background,
            .scene_did_disconnect = disconnect, .scene_will_continue_user_activity = will_continue,
            .scene_did_fail_to_continue_user_activity = failed,
        };
        LC_EXPORT const char *fx_seen(void *state) { return ((st *)state)->seen; }
        LC_EXPORT int fx_actives(void *state) { return ((st *)state)->actives; }
        /* The host's scene accessors with bad handles: each status, in order. */
        LC_EXPORT const char *fx_refusals(void *state, lc_scene *foreign_app_scene) {
            static char out[512];
            st *s = state;
            const char *id = NULL;
            lc_scene_state scene_state;
            lc_scene *found = NULL;
            int local = 0;
            snprintf(out, sizeof out, "%d %d %d %d %d %d %d",
                     host->scene_get_id(s->plugin, NULL, &id), host->scene_get_id(s->plugin, (lc_scene *)&local, &id),
                     host->scene_get_state(s->plugin, foreign_app_scene, &scene_state), host->scene_find(s->plugin, "ghost", &found),
                     host->scene_find(s->plugin, NULL, &found), host->scene_get_id(NULL, foreign_app_scene, &id),
                     host->scene_get_configuration_name(s->plugin, foreign_app_scene, NULL));
            return out;
        }
        """

    static func tablePlugin(id: String, size: String) -> String {
        CBuild.plugin(id: id, initBody: """
            st *s = calloc(1, sizeof *s);
            s->plugin = plugin;
            *state = s;
            return host->set_delegate(plugin, &table);
            """, extra: "#define TABLE_SIZE (\(size))\n" + table)
    }

    func testTableSceneFunctionsKeepPerPluginStateOneImageInTwoApps() throws {
        let path = try CBuild.sharedObject(Self.tablePlugin(id: "com.example.table", size: "sizeof(lc_plugin_delegate_t)"),
                                           named: "table", in: folder)
        let first = try sceneApp(), second = try sceneApp()
        defer { first.shutdown(); second.shutdown() }
        let a = try first.loadPlugin(path: path), b = try second.loadPlugin(path: path)
        XCTAssertEqual(a.implementedMethods, [.configurationForConnecting])
        XCTAssertEqual(b.implementedSceneMethods, [.sceneWillConnect, .sceneDidDisconnect, .sceneDidBecomeActive, .sceneWillResignActive,
                                                   .sceneDidEnterBackground, .sceneWillContinueUserActivity, .sceneDidFailToContinueUserActivity])
        let image = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD))

        try first.app.perform(.launch())
        try first.app.perform(.connectScene("side"))
        try first.app.perform(.failToContinueUserActivity(type: "com.example.edit", error: "offline", scene: "side"))
        try second.app.perform(.launch(scene: "doc"))
        try second.app.perform(.home)
        try first.app.perform(.moveSceneToBackground("side"))
        try first.app.perform(.disconnectScene("side"))

        XCTAssertEqual(text(image, "fx_seen", a.state).split(separator: "|").map(String.init), [
            "willConnect main 0 Table", "active main 2 Table",
            "willConnect side 0 Default Configuration", "active side 2 Default Configuration",
            "com.example.edit side 2 Default Configuration", "offline side 2 Default Configuration",
            "resign side 2 Default Configuration", "background side 3 Default Configuration",
            "disconnect side 0 Default Configuration",
        ])
        XCTAssertEqual(text(image, "fx_seen", b.state).split(separator: "|").map(String.init), [
            "willConnect doc 0 Default Configuration", "active doc 2 Default Configuration",
            "resign doc 2 Default Configuration", "background doc 3 Default Configuration",
        ])
        let actives = unsafeBitCast(dlsym(image, "fx_actives")!, to: (@convention(c) (UnsafeMutableRawPointer?) -> Int32).self)
        XCTAssertEqual([actives(a.state), actives(b.state)], [2, 1])

        // Bad handles through the host API: NULL, a foreign pointer, a scene of the other application,
        // an unknown id, a NULL id, a NULL plugin, a NULL out.
        let docScene = try XCTUnwrap(second.app.scene(id: "doc"))
        let refusals = unsafeBitCast(dlsym(image, "fx_refusals")!,
                                     to: (@convention(c) (UnsafeMutableRawPointer?, UnsafeRawPointer?) -> UnsafePointer<CChar>).self)
        let statuses = String(cString: refusals(a.state, FFIDelegates.handle(docScene)))
        let e = (invalid: LC_ERR_INVALID_ARGUMENT, notFound: LC_ERR_NOT_FOUND)
        XCTAssertEqual(statuses, "\(e.invalid) \(e.notFound) \(e.notFound) \(e.notFound) \(e.invalid) \(e.invalid) \(e.notFound)")
        XCTAssertEqual(SceneHandles.withScene(FFIDelegates.handle(docScene), "scene_get_state", application: first) { _ in 0 },
                       lc_status(LC_ERR_NOT_FOUND))
        XCTAssertEqual(String(cString: lc_last_error_message_for_tests()), "scene_get_state: scene 'doc' belongs to another application")
    }

    /// A table built against a 1.1 header ends before the 1.2 fields: it loads, and gets no scene calls
    /// even if memory past its struct_size holds function pointers.
    func testShortTableLoadsAndGetsNoSceneCalls() throws {
        let path = try CBuild.sharedObject(Self.tablePlugin(id: "com.example.short",
                                                            size: "offsetof(lc_plugin_delegate_t, configuration_for_connecting)"),
                                           named: "short", in: folder)
        let handle = try sceneApp()
        defer { handle.shutdown() }
        let trace = record(handle)
        let plugin = try handle.loadPlugin(path: path)
        XCTAssertEqual(plugin.implementedMethods, [])
        XCTAssertEqual(plugin.implementedSceneMethods, [])
        XCTAssertEqual(handle.app.sceneDelegateIDs, [])
        try handle.app.perform(.launch())
        try handle.app.perform(.home)
        XCTAssertEqual(trace().filter { $0.hasPrefix("delegate") }, [])
        let image = try XCTUnwrap(dlopen(path, RTLD_NOW | RTLD_NOLOAD))
        XCTAssertEqual(text(image, "fx_seen", plugin.state), "")
        XCTAssertEqual(handle.app.sceneSessions.map(\.configurationName), ["Default Configuration"])
    }
}

/// The calling thread's last error message (what lc_last_error_message() returns).
private func lc_last_error_message_for_tests() -> UnsafePointer<CChar> { lcLastErrorMessage() }
