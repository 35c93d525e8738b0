import Foundation
import TestSupport
import XCTest

/// A scene-based application's plugin isolated (`run --scenes --isolate`): its scene delegate, its
/// configuration and discard methods, its scene observers (with and without a sender filter) and the
/// host's scene accessors behave as in-process — the same lines printed, the same trace.
final class IsolatedScenesTests: XCTestCase {
    /// A plugin that prints what it sees of every scene call: the scene's id, state, session id,
    /// configuration name, and which handle (#n: the n-th distinct `lc_scene *` it met).
    static let source = #"""
    #include "lifecycle.h"
    #include <stdio.h>
    #include <string.h>
    // The host program does not export it (liblifecycle.so does): the statuses are compared, the words when there.
    #pragma weak lc_last_error_message
    static const char *message(void) { return lc_last_error_message ? lc_last_error_message() : "-"; }
    static const lc_host_api_t *host;
    static lc_plugin *me;
    static const lc_scene *handles[32];
    static int handle_count;
    static lc_observer_token filtered;
    static int restorations;
    static const char *state_name(lc_scene_state s) {
        static const char *const names[] = {"unattached", "foreground-inactive", "foreground-active", "background", "suspended"};
        return s < 5 ? names[s] : "unknown";
    }
    static const char *app_state(void) {
        static const char *const names[] = {"not-running", "inactive", "active", "background", "suspended"};
        lc_state s = host->state(me);
        return s < 5 ? names[s] : "unknown";
    }
    static int handle_number(const lc_scene *scene) {
        for (int i = 0; i < handle_count; i++) if (handles[i] == scene) return i + 1;
        if (handle_count < 32) handles[handle_count++] = scene;
        return handle_count;
    }
    static void describe(const char *what, const lc_scene *scene) {
        const char *id = "?", *session = "?", *config = "?";
        lc_scene_state state = 99;
        lc_status a = host->scene_get_id(me, scene, &id), b = host->scene_get_state(me, scene, &state);
        lc_status c = host->scene_get_session_id(me, scene, &session), d = host->scene_get_configuration_name(me, scene, &config);
        lc_scene *found = NULL;
        lc_status f = host->scene_find(me, id, &found);
        printf("scp: %s id=%s state=%s app=%s session=%s config=%s handle=#%d find=%d%s [%d %d %d %d]\n", what, id, state_name(state),
               app_state(), session, config, handle_number(scene), f, f == LC_OK ? (found == scene ? " same" : " other") : "", a, b, c,
               d);
        if (f != LC_OK) printf("scp:   %s\n", message());
        fflush(stdout);
    }
    static void dict_line(const char *what, const lc_dict *dict) {
        printf("scp:   %s %s\n", what, dict ? host->dict->json(dict) : "NULL");
        fflush(stdout);
    }
    static void on_note(const lc_notification_t *note, void *ctx) { describe(ctx ? "filtered" : note->name, note->sender); }
    static void on_app_note(const lc_notification_t *note, void *ctx) {
        (void)ctx;
        printf("scp: %s app=%s\n", note->name, app_state());
        fflush(stdout);
    }
    static const char *configuration(lc_plugin *p, void *s, const char *session_id, const lc_dict *options) {
        (void)p, (void)s;
        printf("scp: configuration for %s app=%s\n", session_id, app_state());
        dict_line("options", options);
        return strcmp(session_id, "side") == 0 ? "Side Configuration" : NULL;
    }
    static void discard(lc_plugin *p, void *s, const lc_dict *sessions) { (void)p, (void)s; dict_line("discarded", sessions); }
    static void will_connect(lc_plugin *p, void *s, lc_scene *scene, const lc_dict *options) {
        (void)p, (void)s;
        describe("willConnect", scene);
        dict_line("options", options);
        const char *id = NULL;
        host->scene_get_id(me, scene, &id);
        if (strcmp(id, "side") == 0 && filtered == 0) {
            // Only this connection of 'side': a reconnection is another scene.
            host->observe_name(me, LC_NAME_SCENE_DID_ENTER_BACKGROUND, scene, on_note, (void *)1, &filtered);
        }
    }
    #define NOTIFY(name) static void name(lc_plugin *p, void *s, lc_scene *scene) { (void)p, (void)s; describe(#name, scene); }
    NOTIFY(did_disconnect) NOTIFY(will_resign_active) NOTIFY(will_enter_foreground) NOTIFY(did_enter_background)
    // A post with a scene as its sender, and observers of it with and without that scene as their filter:
    // printed under "ping:" with what does not depend on when a queued post is delivered.
    static void on_ping(const lc_notification_t *note, void *ctx) {
        const char *id = "?";
        host->scene_get_id(me, note->sender, &id);
        printf("ping: %s from %s handle=#%d\n", ctx ? "filtered" : "any", id, handle_number(note->sender));
        fflush(stdout);
    }
    static void did_become_active(lc_plugin *p, void *s, lc_scene *scene) {
        (void)p, (void)s;
        describe("did_become_active", scene);
        const char *id = NULL;
        host->scene_get_id(me, scene, &id);
        static lc_observer_token main_filter;
        if (strcmp(id, "main") == 0 && main_filter == 0) host->observe(me, "com.example.ping", scene, on_ping, (void *)1, &main_filter);
        host->post(me, "com.example.ping", scene, NULL);
    }
    static void open_urls(lc_plugin *p, void *s, lc_scene *scene, const lc_dict *contexts) {
        (void)p, (void)s;
        describe("openURLContexts", scene);
        dict_line("contexts", contexts);
    }
    static bool restoration(lc_plugin *p, void *s, lc_scene *scene, lc_dict *activity) {
        (void)p, (void)s;
        describe("stateRestorationActivity", scene);
        char title[32];
        snprintf(title, sizeof title, "save %d", ++restorations);
        host->dict->set_string(activity, "activityType", "com.example.restore");
        host->dict->set_string(activity, "title", title);
        return true;
    }
    static void will_continue(lc_plugin *p, void *s, lc_scene *scene, const char *type) {
        (void)p, (void)s;
        describe("willContinue", scene);
        printf("scp:   type %s\n", type);
    }
    static void continue_activity(lc_plugin *p, void *s, lc_scene *scene, const lc_dict *activity) {
        (void)p, (void)s;
        describe("continue", scene);
        dict_line("activity", activity);
    }
    static void did_fail(lc_plugin *p, void *s, lc_scene *scene, const char *type, const char *error) {
        (void)p, (void)s;
        describe("didFail", scene);
        printf("scp:   %s: %s\n", type, error);
    }
    static void restore_interaction(lc_plugin *p, void *s, lc_scene *scene, const lc_dict *activity) {
        (void)p, (void)s;
        describe("restoreInteraction", scene);
        dict_line("activity", activity);
    }
    static void did_update(lc_plugin *p, void *s, lc_scene *scene, const lc_dict *activity) {
        (void)p, (void)s;
        describe("didUpdate", scene);
        dict_line("activity", activity);
    }
    static const lc_plugin_delegate_t delegate = {
        .struct_size = sizeof(lc_plugin_delegate_t),
        .configuration_for_connecting = configuration, .did_discard_scene_sessions = discard,
        .scene_will_connect = will_connect, .scene_did_disconnect = did_disconnect, .scene_did_become_active = did_become_active,
        .scene_will_resign_active = will_resign_active, .scene_will_enter_foreground = will_enter_foreground,
        .scene_did_enter_background = did_enter_background, .scene_open_url_contexts = open_urls,
        .scene_state_restoration_activity = restoration, .scene_will_continue_user_activity = will_continue,
        .scene_continue_user_activity = continue_activity, .scene_did_fail_to_continue_user_activity = did_fail,
        .scene_did_update_user_activity = did_update, .scene_restore_interaction_state = restore_interaction,
    };
    static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
        (void)state; host = api; me = plugin;
        static int not_a_scene;
        lc_scene_state st;
        lc_status bad = host->scene_get_state(me, (const lc_scene *)&not_a_scene, &st);
        printf("scp: foreign pointer %d %s\n", bad, message());
        lc_status status = host->set_delegate(plugin, &delegate);
        const lc_name names[] = {LC_NAME_SCENE_WILL_CONNECT, LC_NAME_SCENE_DID_DISCONNECT, LC_NAME_SCENE_DID_ACTIVATE,
                                 LC_NAME_SCENE_WILL_DEACTIVATE, LC_NAME_SCENE_WILL_ENTER_FOREGROUND, LC_NAME_SCENE_DID_ENTER_BACKGROUND};
        for (int i = 0; status == LC_OK && i < 6; i++) status = host->observe_name(plugin, names[i], NULL, on_note, NULL, NULL);
        if (status == LC_OK) status = host->observe(plugin, "com.example.ping", NULL, on_ping, NULL, NULL);
        const lc_name app_names[] = {LC_NAME_DID_FINISH_LAUNCHING, LC_NAME_WILL_ENTER_FOREGROUND, LC_NAME_DID_BECOME_ACTIVE,
                                     LC_NAME_WILL_RESIGN_ACTIVE, LC_NAME_DID_ENTER_BACKGROUND};
        for (int i = 0; status == LC_OK && i < 5; i++) status = host->observe_name(plugin, app_names[i], NULL, on_app_note, NULL, NULL);
        return status;
    }
    static const lc_plugin_descriptor_t descriptor = {
        .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
        .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.isolated.scenes", .version = "1.0", .description = "scene fixture",
        .init = fixture_init,
    };
    LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
    """#

    static let scenario = """
    launch
    scene connect side
    open-url app://doc/7 scene=side
    continue-activity com.example.editing scene=main title=Draft doc=7
    continue-activity com.example.broken scene=side error=gone
    update-activity com.example.editing scene=main title=Draft2
    home
    foreground
    scene background side
    scene disconnect side
    scene connect side
    scene background side
    scene discard side
    scene connect side background
    terminate
    """

    func testAnIsolatedScenePluginSeesWhatItSeesInProcess() throws {
        let plugin = try IsolationFixtures.build(Self.source, named: "isolatedscenes")
        // An archive each: the scenes' state restoration saves there.
        func run(_ extra: [String]) throws -> IsolationTests.Run {
            let archive = try CBuild.temporaryFolder("isolated-scenes-archive")
            return try IsolationTests.run(["--scenes", "--archive", archive, "--plugin", plugin] + extra, script: Self.scenario)
        }
        let inProcess = try run([])
        let isolated = try run(["--isolate"])
        XCTAssertEqual(inProcess.status, 0, inProcess.output)
        XCTAssertEqual(isolated.status, 0, isolated.output)
        let lines = inProcess.printed["scp"] ?? []
        XCTAssertEqual(isolated.printed["scp"] ?? [], lines)
        XCTAssertEqual(isolated.trace, inProcess.trace)
        XCTAssertTrue(isolated.failures().isEmpty, isolated.output)
        let pings = inProcess.printed["ping"] ?? []
        XCTAssertEqual(isolated.printed["ping"] ?? [], pings)
        XCTAssertEqual(pings.filter { $0.hasPrefix("ping: filtered") }, ["ping: filtered from main handle=#1", "ping: filtered from main handle=#1"],
                       "a post with a scene as sender reaches the observer filtered on that scene: " + pings.joined(separator: "\n"))
        XCTAssertEqual(pings.filter { $0.hasPrefix("ping: any") }.count, 5, pings.joined(separator: "\n"))
        XCTAssertTrue(isolated.records.contains { $0.kind == "plugin" && $0.detail.hasSuffix("(isolated)") }, isolated.output)
        // What the lines must hold in both modes (so that equal lines are not equally empty).
        for expected in [
            "scp: foreign pointer -8 -",
            "scp: configuration for side app=active",
            "scp: willConnect id=side state=unattached app=active session=side config=Side Configuration handle=#2 find=0 same [0 0 0 0]",
            "scp: filtered id=side state=background app=active session=side config=Side Configuration handle=#2 find=0 same [0 0 0 0]",
            "scp: did_disconnect id=side state=unattached app=active session=side config=Side Configuration handle=#2 find=-8 [0 0 0 0]",
        ] {
            XCTAssertTrue(lines.contains(expected), "missing \(expected) in\n" + lines.joined(separator: "\n"))
        }
        // Decision 47, in both modes: side's configuration is asked for when its session is created and
        // again after the session was discarded, not when the kept session's scene reconnects.
        XCTAssertEqual(lines.filter { $0.hasPrefix("scp: configuration for ") }, [
            "scp: configuration for main app=background", "scp: configuration for side app=active", "scp: configuration for side app=active",
        ], lines.joined(separator: "\n"))
        // Readings 1 and 2 of issue 20, in both modes: the launch runs in the background; the
        // application leaves it with its scene (willEnterForeground, still background) and takes its
        // most active scene's state before that scene's "did" methods; "will" notifications come
        // before the change.
        func between(_ first: String, _ last: String) -> [String] {
            guard let start = lines.firstIndex(where: { $0.hasPrefix(first) }),
                  let end = lines[start...].firstIndex(where: { $0.hasPrefix(last) }) else { return [] }
            return Array(lines[start...end]).map { $0.replacingOccurrences(of: #" session=.*"#, with: "", options: .regularExpression) }
        }
        XCTAssertEqual(between("scp: didFinishLaunching", "scp: didBecomeActive"), [
            "scp: didFinishLaunching app=background",
            "scp: configuration for main app=background",
            "scp:   options {}",
            "scp: willConnect id=main state=unattached app=background",
            "scp:   options {}",
            "scp: sceneWillConnect id=main state=unattached app=background",
            "scp: will_enter_foreground id=main state=unattached app=background",
            "scp: sceneWillEnterForeground id=main state=unattached app=background",
            "scp: willEnterForeground app=background",
            "scp: did_become_active id=main state=foreground-active app=active",
            "scp: sceneDidActivate id=main state=foreground-active app=active",
            "scp: didBecomeActive app=active",
        ], lines.joined(separator: "\n"))
        XCTAssertEqual(between("scp: will_resign_active id=main", "scp: didEnterBackground"), [
            "scp: will_resign_active id=main state=foreground-active app=active",
            "scp: sceneWillDeactivate id=main state=foreground-active app=active",
            "scp: will_resign_active id=side state=foreground-active app=active",
            "scp: sceneWillDeactivate id=side state=foreground-active app=active",
            "scp: willResignActive app=active",
            "scp: did_enter_background id=main state=background app=inactive",
            "scp: sceneDidEnterBackground id=main state=background app=inactive",
            "scp: stateRestorationActivity id=main state=background app=inactive",
            "scp: did_enter_background id=side state=background app=background",
            "scp: sceneDidEnterBackground id=side state=background app=background",
            "scp: filtered id=side state=background app=background",
            "scp: didEnterBackground app=background",
        ], lines.joined(separator: "\n"))
        // The reconnection is a third handle; the filter on the first 'side' no longer matches it.
        XCTAssertTrue(lines.contains { $0.hasPrefix("scp: willConnect id=side") && $0.contains("handle=#3") }, lines.joined(separator: "\n"))
        let filteredLines = lines.filter { $0.hasPrefix("scp: filtered") }
        XCTAssertEqual(filteredLines.count, 2, lines.joined(separator: "\n"))
        XCTAssertTrue(filteredLines.allSatisfy { $0.contains("handle=#2") }, lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("scp: stateRestorationActivity id=side state=background") }, lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains(#"scp:   options {"stateRestorationActivity":{"activityType":"com.example.restore","title":"save 3","userInfo":{}}}"#),
                      "the activity saved when 'side' last went to the background reaches its reconnection: " + lines.joined(separator: "\n"))
        XCTAssertTrue(lines.contains { $0.hasPrefix("scp:   discarded") }, lines.joined(separator: "\n"))
    }

    /// Issue 20, reading 4 (decision 48), in both modes: a scene connected while the device is locked
    /// gets no restoration activity in its connection options; the archive is read when protected
    /// data becomes available (the unlock), and handed over in
    /// `scene:restoreInteractionStateWithUserActivity:` when the scene first comes to the foreground.
    func testNoRestorationWhileLockedInBothModes() throws {
        let plugin = try IsolationFixtures.build(Self.source, named: "isolatedscenes")
        let script = """
        launch
        scene connect side
        scene background side
        scene disconnect side
        lock
        scene connect side background
        unlock
        scene foreground side
        terminate
        """
        func run(_ extra: [String]) throws -> IsolationTests.Run {
            let archive = try CBuild.temporaryFolder("isolated-scenes-locked")
            return try IsolationTests.run(["--scenes", "--archive", archive, "--plugin", plugin] + extra, script: script)
        }
        let inProcess = try run([])
        let isolated = try run(["--isolate"])
        XCTAssertEqual(inProcess.status, 0, inProcess.output)
        XCTAssertEqual(isolated.status, 0, isolated.output)
        let lines = inProcess.printed["scp"] ?? []
        XCTAssertEqual(isolated.printed["scp"] ?? [], lines)
        XCTAssertEqual(isolated.trace, inProcess.trace)
        let text = lines.joined(separator: "\n")
        // side's three connections: the first (nothing saved yet), the second restoring "save 1"
        // (saved when it went to the background), the third — locked — with no activity.
        let connections = lines.indices.filter { lines[$0].hasPrefix("scp: willConnect id=side") }
        guard connections.count == 2 else { return XCTFail("two connections of side: " + text) }
        XCTAssertEqual(lines[connections[1] + 1], "scp:   options {}", "no restoration activity while locked: " + text)
        // Read at the unlock, handed over when side comes forward: "save 3", saved when it connected
        // into the background over "save 1" (the fixture counts every save: "save 2" is main's, at the lock).
        let restore = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("scp: restoreInteraction id=side state=foreground-inactive") }, text)
        XCTAssertEqual(lines[restore + 1], #"scp:   activity {"activityType":"com.example.restore","title":"save 3","userInfo":{}}"#, text)
        XCTAssertEqual(lines.filter { $0.hasPrefix("scp: restoreInteraction") }.count, 1, text)
        let events = inProcess.records.filter { $0.kind == "archive" && $0.scene == "side" }.map(\.name)
        XCTAssertEqual(events, ["saved", "deferred", "saved", "read", "saved"], inProcess.output)
    }

    /// `scene close` (decision 52), in both modes: a C plugin's scene delegate sees the swiped-away
    /// scene resign and disconnect with no background step, then the discarded session; closing the
    /// last scene ends the run cleanly.
    func testClosingScenesInTheAppSwitcherInBothModes() throws {
        let plugin = try IsolationFixtures.build(Self.source, named: "isolatedscenes")
        let script = "launch\nscene connect side\nscene close side\nscene close main\n"
        let (inProcess, _, lines) = try IsolationTests.runBothModes(["--scenes", "--plugin", plugin], script: script, printed: "scp")
        let closing = lines.drop { !$0.hasPrefix("scp: will_resign_active id=side") }
            .map { $0.replacingOccurrences(of: #" session=.*"#, with: "", options: .regularExpression) }
        XCTAssertEqual(Array(closing.prefix(7)), [
            "scp: will_resign_active id=side state=foreground-active app=active",
            "scp: sceneWillDeactivate id=side state=foreground-active app=active",
            "scp: did_disconnect id=side state=unattached app=active",
            "scp:   -",  // scene_find: gone from the connected scenes
            "scp: sceneDidDisconnect id=side state=unattached app=active",
            "scp:   -",
            #"scp:   discarded {"side":"Side Configuration"}"#,
        ], lines.joined(separator: "\n"))
        XCTAssertFalse(lines.contains { $0.hasPrefix("scp: did_enter_background") }, lines.joined(separator: "\n"))
        XCTAssertEqual(inProcess.records.last?.detail, "its last scene closed in the app switcher, after applicationWillTerminate:")
    }

    /// ABI 1.5's scene requests from a C plugin (decision 53), in both modes: checked at once (a
    /// refusal's status and words), performed after the callback that asked, in order, each traced
    /// naming the plugin.
    func testScenePluginRequestsInBothModes() throws {
        let plugin = try IsolationFixtures.build(#"""
            #include "lifecycle.h"
            #include <stdio.h>
            #include <string.h>
            #pragma weak lc_last_error_message
            static const char *message(void) { return lc_last_error_message ? lc_last_error_message() : "-"; }
            static const lc_host_api_t *host;
            static lc_plugin *me;
            static int asked;
            static const char *id_of(lc_scene *scene) { const char *id = "?"; host->scene_get_id(me, scene, &id); return id; }
            static void became_active(lc_plugin *p, void *s, lc_scene *scene) {
                (void)p, (void)s;
                printf("req: active %s\n", id_of(scene));
                if (strcmp(id_of(scene), "main") != 0 || asked++) return;
                lc_dict *activity = host->dict->create();
                host->dict->set_string(activity, "activityType", "com.example.compose");
                printf("req: activation new -> %d\n", host->request_scene_activation(me, NULL, activity));
                host->dict->destroy(activity);
                printf("req: refresh main -> %d\n", host->request_scene_refresh(me, "main"));
                lc_status bad = host->request_scene_destruction(me, "ghost");
                printf("req: destruction ghost -> %d %s\n", bad, message());
                fflush(stdout);
            }
            static void resigning(lc_plugin *p, void *s, lc_scene *scene) {
                (void)p, (void)s;
                if (strcmp(id_of(scene), "main") == 0) printf("req: destruction scene-1 -> %d\n", host->request_scene_destruction(me, "scene-1"));
                fflush(stdout);
            }
            static void connecting(lc_plugin *p, void *s, lc_scene *scene, const lc_dict *options) {
                (void)p, (void)s;
                printf("req: connect %s %s\n", id_of(scene), host->dict->json(options));
                fflush(stdout);
            }
            static void discarded(lc_plugin *p, void *s, const lc_dict *sessions) { (void)p, (void)s; printf("req: discarded %s\n", host->dict->json(sessions)); fflush(stdout); }
            static const lc_plugin_delegate_t delegate = {
                .struct_size = sizeof(lc_plugin_delegate_t), .scene_did_become_active = became_active,
                .scene_will_resign_active = resigning, .scene_will_connect = connecting, .did_discard_scene_sessions = discarded,
            };
            static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)state; host = api; me = plugin;
                return host->set_delegate(plugin, &delegate);
            }
            """# + IsolationFixtures.descriptorSource("com.example.scene.requests"), named: "scenerequests")
        let script = "launch\nwait 100ms\nexpect-scene scene-1 foreground-active\nscene deactivate main\nwait 100ms\nterminate\n"
        let (inProcess, _, lines) = try IsolationTests.runBothModes(["--scenes", "--plugin", plugin], script: script, printed: "req")
        XCTAssertEqual(lines, [
            "req: connect main {}",
            "req: active main",
            "req: activation new -> 0",
            "req: refresh main -> 0",
            "req: destruction ghost -> -8 -",  // LC_ERR_NOT_FOUND (the host program exports no lc_last_error_message)
            #"req: connect scene-1 {"userActivities":[{"activityType":"com.example.compose","userInfo":{}}]}"#,
            "req: active scene-1",
            "req: destruction scene-1 -> 0",
            #"req: discarded {"scene-1":"Default Configuration"}"#,
        ], inProcess.output)
        let requests = inProcess.records.filter { $0.kind == "scene-request" }.map { "\($0.name) [\($0.plugin)] {\($0.scene)}" }
        XCTAssertEqual(requests, ["activation [com.example.scene.requests] {scene-1}", "refresh [com.example.scene.requests] {main}",
                                  "destruction [com.example.scene.requests] {scene-1}"])
    }

    /// ABI 1.5's lists of scenes and sessions, the session role and userInfo, from a C plugin in both
    /// modes: the same lines (isolated, the scenes its process has heard of; the sessions and
    /// userInfo from the host), the userInfo kept with the session across a disconnection.
    func testScenePluginListsScenesAndSessionsInBothModes() throws {
        let plugin = try IsolationFixtures.build(#"""
            #include "lifecycle.h"
            #include <stdio.h>
            #include <string.h>
            static const lc_host_api_t *host;
            static lc_plugin *me;
            static void report(const char *when) {
                lc_scene *scenes[8];
                const char *sessions[8];
                size_t scene_count = 0, session_count = 0;
                lc_status a = host->scene_list(me, NULL, 0, &scene_count);
                lc_status b = host->scene_list(me, scenes, 8, &scene_count);
                lc_status c = host->session_list(me, sessions, 8, &session_count);
                printf("lists: %s [%d %d %d] scenes", when, a, b, c);
                for (size_t i = 0; i < scene_count && i < 8; i++) {
                    const char *id = "?", *role = "?";
                    host->scene_get_id(me, scenes[i], &id);
                    host->scene_get_session_role(me, scenes[i], &role);
                    printf(" %s(%s)", id, role);
                }
                printf(" sessions");
                for (size_t i = 0; i < session_count && i < 8; i++) {
                    const lc_dict *info = NULL;
                    lc_status d = host->session_get_user_info(me, sessions[i], &info);
                    printf(" %s=%s", sessions[i], d == LC_OK ? host->dict->json(info) : "?");
                }
                printf("\n");
                fflush(stdout);
            }
            static void became_active(lc_plugin *p, void *s, lc_scene *scene) {
                (void)p, (void)s;
                const char *id = "?";
                host->scene_get_id(me, scene, &id);
                lc_dict *info = host->dict->create();
                host->dict->set_int(info, "opened", strcmp(id, "main") == 0 ? 1 : 2);
                printf("lists: set %s -> %d\n", id, host->session_set_user_info(me, id, info));
                host->dict->destroy(info);
                printf("lists: set ghost -> %d\n", host->session_set_user_info(me, "ghost", NULL));
                report(id);
            }
            static void disconnected(lc_plugin *p, void *s, lc_scene *scene) { (void)p, (void)s, (void)scene; report("disconnect"); }
            static const lc_plugin_delegate_t delegate = {
                .struct_size = sizeof(lc_plugin_delegate_t), .scene_did_become_active = became_active, .scene_did_disconnect = disconnected,
            };
            static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)state; host = api; me = plugin;
                return host->set_delegate(plugin, &delegate);
            }
            """# + IsolationFixtures.descriptorSource("com.example.scene.lists"), named: "scenelists")
        let script = "launch\nscene connect side\nscene background side\nscene disconnect side\nterminate\n"
        let (inProcess, _, lines) = try IsolationTests.runBothModes(["--scenes", "--plugin", plugin], script: script, printed: "lists")
        XCTAssertEqual(lines, [
            "lists: set main -> 0",
            "lists: set ghost -> -8",
            #"lists: main [0 0 0] scenes main(application) sessions main={"opened":1}"#,
            "lists: set side -> 0",
            "lists: set ghost -> -8",
            #"lists: side [0 0 0] scenes main(application) side(application) sessions main={"opened":1} side={"opened":2}"#,
            #"lists: disconnect [0 0 0] scenes main(application) sessions main={"opened":1} side={"opened":2}"#,
        ], inProcess.output)
    }

    /// A scene delegate function that never returns in an isolated plugin: killed at the isolated-call
    /// budget and reported naming the call, like an application delegate's; the application goes on
    /// without its scene delegate (the next scene's connection calls nothing of it).
    func testAHangingSceneDelegateCallIsKilledAtItsBudgetAndReported() throws {
        let hanger = try IsolationFixtures.build("""
            #include "lifecycle.h"
            static void hang(lc_plugin *p, void *s, lc_scene *scene) { (void)p, (void)s, (void)scene; for (;;) {} }
            static const lc_plugin_delegate_t delegate = { .struct_size = sizeof(lc_plugin_delegate_t), .scene_did_become_active = hang };
            static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)state; return api->set_delegate(plugin, &delegate);
            }
            \(IsolationFixtures.descriptorSource("com.example.scene.hang"))
            """, named: "scenehang")
        let started = Date()
        let result = try IsolationTests.run(["--scenes", "--plugin", hanger, "--plugin", IsolationTests.example("Echo"),
                                             "--isolate", "com.example.scene.hang", "--isolate-budget", "0.5"],
                                            script: "launch\nscene connect side\nterminate\n")
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
        XCTAssertEqual(result.status, 7, result.output)
        let failure = try XCTUnwrap(result.failures().first, result.output)
        XCTAssertEqual(result.failures().count, 1)
        XCTAssertEqual(failure.name, "overran isolated-call budget")
        XCTAssertEqual(failure.plugin, "com.example.scene.hang")
        XCTAssertEqual(failure.detail, "did not return within its 0.500 s isolated-call budget: killed (SIGKILL); "
                       + "while handling sceneDidBecomeActive:; not restarted (policy never)")
        let delegateCalls = result.records.filter { $0.kind == "delegate" && $0.plugin == "com.example.scene.hang" }
        XCTAssertEqual(delegateCalls.map(\.scene), ["main"], "after the kill, 'side' connects without the plugin's scene delegate")
        XCTAssertEqual(result.printed["echo"], ["echo: didFinishLaunching", "echo: willEnterForeground", "echo: didBecomeActive",
                                                "echo: willResignActive", "echo: didEnterBackground", "echo: willTerminate"])
    }

    /// A process that answers `configurationForConnectingSceneSession` with no configuration name (a
    /// crafted `result` frame: not what the runner sends for any C answer) broke the protocol: cut off,
    /// the rule named; the scene connects with the default configuration.
    func testAConfigurationAnswerWithoutANameCutsTheProcessOff() throws {
        // result (0x8C) for call 1 (the first call that waits): answer 1, an empty dictionary, no encoding failure.
        let bytes = IsolationProtocolTests.frame(kind: 0x8C, word: 1, payload: [1] + IsolationProtocolTests.le32(0) + [0])
        let liar = try IsolationFixtures.build("""
            #include "lifecycle.h"
            #include <stdlib.h>
            #include <unistd.h>
            static const char *configuration(lc_plugin *p, void *s, const char *session_id, const lc_dict *options) {
                (void)p, (void)s, (void)session_id, (void)options;
                static const unsigned char bytes[] = {\(bytes.map { String($0) }.joined(separator: ", "))};
                if (write(3, bytes, sizeof bytes) != (ssize_t)sizeof bytes) abort();
                pause();
                return NULL;
            }
            static const lc_plugin_delegate_t delegate = { .struct_size = sizeof(lc_plugin_delegate_t), .configuration_for_connecting = configuration };
            static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)state; return api->set_delegate(plugin, &delegate);
            }
            \(IsolationFixtures.descriptorSource("com.example.scene.liar"))
            """, named: "sceneliar")
        let result = try IsolationTests.run(["--scenes", "--plugin", liar, "--isolate"], script: "launch\nexpect-scene main foreground-active\nterminate\n")
        XCTAssertEqual(result.status, 7, result.output)
        let failure = try XCTUnwrap(result.failures().first, result.output)
        XCTAssertEqual(failure.name, "protocol violation")
        XCTAssertEqual(failure.detail, "cut off (SIGKILL): the answer to application:configurationForConnectingSceneSession:options: names no "
                       + "configuration; while handling application:configurationForConnectingSceneSession:options:; not restarted (policy never)")
    }
}
