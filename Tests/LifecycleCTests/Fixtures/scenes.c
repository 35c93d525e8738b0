// scenes.c: ABI 1.2's scenes and Handoff driven through the C ABI: a scene-based application, an
// lc_delegate_t with scene and Handoff functions, observers of the scene notifications that read the
// scene from note->sender, the scene actions, the trace's scene field, and every refusal.
#include <lifecycle.h>

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call)                                                                                 \
    do {                                                                                            \
        lc_status s_ = (call);                                                                      \
        if (s_ != LC_OK) {                                                                          \
            printf("%s: %s: %s\n", #call, lc_status_name(s_), lc_last_error_message());             \
            return 1;                                                                               \
        }                                                                                           \
    } while (0)

static lc_app *app;
static lc_scene *kept; // a handle kept past its scene's disconnection

static const char *scene_id(const lc_scene *scene) {
    const char *id = "?";
    lc_status status = lc_scene_get_id(scene, &id);
    return status == LC_OK ? id : lc_status_name(status);
}

static const char *scene_state(const lc_scene *scene) {
    lc_scene_state state = 99;
    if (lc_scene_get_state(scene, &state) != LC_OK) return "?";
    return lc_scene_state_name(state);
}

static void trace(const lc_trace_event_t *e, void *ctx) {
    (void)ctx;
    if (strcmp(e->kind, "action") && strcmp(e->kind, "scene-state") && strcmp(e->kind, "state")) return;
    printf("  %s %s", e->kind, e->name);
    if (e->scene) printf(" {%s}", e->scene);
    if (e->detail && *e->detail) printf(" (%s)", e->detail);
    printf("\n");
}

static void on_scene_note(const lc_notification_t *note, void *ctx) {
    (void)ctx;
    printf("    note %s (id %u) %s: %s\n", note->name, note->name_id, scene_id(note->sender), scene_state(note->sender));
}

static void on_app_note(const lc_notification_t *note, void *ctx) {
    (void)ctx;
    printf("    note %s\n", note->name);
}

static const char *configuration(lc_app *a, const char *session, const lc_dict *options, void *ctx) {
    (void)a, (void)options, (void)ctx;
    printf("    configurationForConnecting %s\n", session);
    return strcmp(session, "side") ? "Main Configuration" : NULL;
}

static void discarded(lc_app *a, const lc_dict *sessions, void *ctx) {
    (void)a, (void)ctx;
    printf("    didDiscardSceneSessions %s\n", lc_dict_json(sessions));
}

static void will_connect(lc_app *a, lc_scene *scene, const lc_dict *options, void *ctx) {
    (void)a, (void)ctx;
    const char *configuration = "?";
    lc_scene_get_configuration_name(scene, &configuration);
    printf("    willConnect %s (%s, %s) options %s\n", scene_id(scene), scene_state(scene), configuration, lc_dict_json(options));
}

static void did_disconnect(lc_app *a, lc_scene *scene, void *ctx) {
    (void)a, (void)ctx;
    printf("    didDisconnect %s (%s)\n", scene_id(scene), scene_state(scene));
}

static void did_become_active(lc_app *a, lc_scene *scene, void *ctx) {
    (void)ctx;
    printf("    sceneDidBecomeActive %s (%s; app %s)\n", scene_id(scene), scene_state(scene), lc_state_name(lc_app_state(a)));
}

static void will_resign_active(lc_app *a, lc_scene *scene, void *ctx) {
    (void)a, (void)ctx;
    printf("    sceneWillResignActive %s (%s)\n", scene_id(scene), scene_state(scene));
}

static void will_enter_foreground(lc_app *a, lc_scene *scene, void *ctx) {
    (void)ctx;
    printf("    sceneWillEnterForeground %s (%s; app %s)\n", scene_id(scene), scene_state(scene), lc_state_name(lc_app_state(a)));
}

static void did_enter_background(lc_app *a, lc_scene *scene, void *ctx) {
    (void)ctx;
    printf("    sceneDidEnterBackground %s (%s; app %s)\n", scene_id(scene), scene_state(scene), lc_state_name(lc_app_state(a)));
}

static void open_urls(lc_app *a, lc_scene *scene, const lc_dict *contexts, void *ctx) {
    (void)a, (void)ctx;
    printf("    openURLContexts %s %s\n", scene_id(scene), lc_dict_json(contexts));
}

static void will_continue(lc_app *a, lc_scene *scene, const char *type, void *ctx) {
    (void)a, (void)ctx;
    printf("    scene willContinueUserActivityWithType %s %s\n", scene_id(scene), type);
}

static void continue_activity(lc_app *a, lc_scene *scene, const lc_dict *activity, void *ctx) {
    (void)a, (void)ctx;
    printf("    scene continueUserActivity %s %s\n", scene_id(scene), lc_dict_json(activity));
}

static void fail_activity(lc_app *a, lc_scene *scene, const char *type, const char *error, void *ctx) {
    (void)a, (void)ctx;
    printf("    scene didFailToContinueUserActivity %s %s: %s\n", scene_id(scene), type, error);
}

static void update_activity(lc_app *a, lc_scene *scene, const lc_dict *activity, void *ctx) {
    (void)a, (void)ctx;
    printf("    scene didUpdateUserActivity %s %s\n", scene_id(scene), lc_dict_json(activity));
}

static bool app_will_continue(lc_app *a, const char *type, void *ctx) {
    (void)a, (void)ctx;
    printf("    application willContinueUserActivityWithType %s\n", type);
    return true;
}

static bool app_continue(lc_app *a, const lc_dict *activity, void *ctx) {
    (void)a, (void)ctx;
    printf("    application continueUserActivity %s\n", lc_dict_json(activity));
    return true;
}

static void app_fail(lc_app *a, const char *type, const char *error, void *ctx) {
    (void)a, (void)ctx;
    printf("    application didFailToContinueUserActivity %s: %s\n", type, error);
}

static void app_update(lc_app *a, const lc_dict *activity, void *ctx) {
    (void)a, (void)ctx;
    printf("    application didUpdateUserActivity %s\n", lc_dict_json(activity));
}

static lc_status perform(lc_action_kind kind, const char *scene) {
    lc_action_t action = {.struct_size = sizeof action, .kind = kind, .scene = scene};
    return lc_app_perform(app, &action);
}

static void refused(const char *what, lc_status status) {
    printf("%s -> %s: %s\n", what, lc_status_name(status), lc_last_error_message());
}

int main(void) {
    lc_config_t config;
    lc_config_init(&config);
    config.scene_manifest = LC_SCENE_MANIFEST;
    CHECK(lc_app_create(&config, &app));
    CHECK(lc_app_set_trace(app, trace, NULL));

    lc_delegate_t delegate = {
        .struct_size = sizeof delegate,
        .configuration_for_connecting = configuration,
        .did_discard_scene_sessions = discarded,
        .scene_will_connect = will_connect,
        .scene_did_disconnect = did_disconnect,
        .scene_did_become_active = did_become_active,
        .scene_will_resign_active = will_resign_active,
        .scene_will_enter_foreground = will_enter_foreground,
        .scene_did_enter_background = did_enter_background,
        .scene_open_url_contexts = open_urls,
        .scene_will_continue_user_activity = will_continue,
        .scene_continue_user_activity = continue_activity,
        .scene_did_fail_to_continue_user_activity = fail_activity,
        .scene_did_update_user_activity = update_activity,
    };
    CHECK(lc_app_add_delegate(app, "com.example.scenes", &delegate));
    const lc_name names[] = {LC_NAME_SCENE_WILL_CONNECT, LC_NAME_SCENE_DID_DISCONNECT, LC_NAME_SCENE_DID_ACTIVATE,
                             LC_NAME_SCENE_WILL_DEACTIVATE, LC_NAME_SCENE_WILL_ENTER_FOREGROUND, LC_NAME_SCENE_DID_ENTER_BACKGROUND};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) CHECK(lc_app_observe_name(app, names[i], NULL, on_scene_note, NULL, NULL));
    CHECK(lc_app_observe(app, "UISceneDidActivateNotification", NULL, on_scene_note, NULL, NULL)); // an alias
    CHECK(lc_app_observe(app, "didBecomeActive", NULL, on_app_note, NULL, NULL));
    CHECK(lc_app_observe(app, "didEnterBackground", NULL, on_app_note, NULL, NULL));
    CHECK(lc_app_observe(app, "willEnterForeground", NULL, on_app_note, NULL, NULL));
    CHECK(lc_app_observe(app, "willResignActive", NULL, on_app_note, NULL, NULL));

    printf("launch scene=main\n");
    CHECK(perform(LC_ACTION_LAUNCH, "main"));
    printf("connect side\n");
    CHECK(perform(LC_ACTION_SCENE_CONNECT, "side"));
    lc_scene *main_scene = NULL, *side = NULL;
    CHECK(lc_app_scene(app, "main", &main_scene));
    CHECK(lc_app_scene(app, "side", &side));
    const char *session = NULL, *configuration_name = NULL;
    CHECK(lc_scene_get_session_id(side, &session));
    CHECK(lc_scene_get_configuration_name(main_scene, &configuration_name));
    printf("lc_app_scene: main %s (%s, %s), side %s session %s\n", scene_id(main_scene), scene_state(main_scene),
           configuration_name, scene_id(side), session);
    printf("deactivate main\n");
    CHECK(perform(LC_ACTION_SCENE_DEACTIVATE, "main"));
    printf("activate main\n");
    CHECK(perform(LC_ACTION_SCENE_ACTIVATE, "main"));
    printf("background side\n");
    CHECK(perform(LC_ACTION_SCENE_BACKGROUND, "side"));
    printf("open-url in side\n");
    lc_action_t open = {.struct_size = sizeof open, .kind = LC_ACTION_OPEN_URL, .url = "app://doc/7", .source_application = "com.example.web", .scene = "side"};
    CHECK(lc_app_perform(app, &open));
    printf("continue-activity in main\n");
    lc_dict *activity = lc_dict_create(), *info = lc_dict_create();
    CHECK(lc_dict_set_string(activity, "activityType", "com.example.edit"));
    CHECK(lc_dict_set_string(activity, "title", "Draft"));
    CHECK(lc_dict_set_int(info, "doc", 7));
    CHECK(lc_dict_set_dict(activity, "userInfo", info));
    lc_action_t handoff = {.struct_size = sizeof handoff, .kind = LC_ACTION_CONTINUE_USER_ACTIVITY, .activity = activity, .scene = "main"};
    CHECK(lc_app_perform(app, &handoff));
    handoff.kind = LC_ACTION_FAIL_TO_CONTINUE_USER_ACTIVITY;
    handoff.error = "offline";
    CHECK(lc_app_perform(app, &handoff));
    handoff.kind = LC_ACTION_UPDATE_USER_ACTIVITY;
    handoff.scene = NULL; // the frontmost scene
    CHECK(lc_app_perform(app, &handoff));
    printf("background side, disconnect side, discard side\n");
    CHECK(perform(LC_ACTION_SCENE_BACKGROUND, "side"));
    kept = side;
    CHECK(perform(LC_ACTION_SCENE_DISCONNECT, "side"));
    printf("kept handle after disconnect: %s %s\n", scene_id(kept), scene_state(kept));
    CHECK(perform(LC_ACTION_SCENE_DISCARD, "side"));
    printf("connect side background\n");
    CHECK(perform(LC_ACTION_SCENE_CONNECT_BACKGROUND, "side"));
    lc_scene *again = NULL;
    CHECK(lc_app_scene(app, "side", &again));
    printf("a reconnection is a new handle: %s\n", again != kept ? "yes" : "no");
    printf("-- scene requests (1.5)\n");
    CHECK(lc_app_request_scene_refresh(app, "main"));
    CHECK(lc_app_request_scene_activation(app, "side", NULL));
    lc_scene_state side_state = 99;
    CHECK(lc_scene_get_state(again, &side_state));
    printf("asked, not yet performed: side %s\n", lc_scene_state_name(side_state));
    lc_app_dispatch_pending(app);
    CHECK(lc_scene_get_state(again, &side_state));
    printf("after a turn of the loop: side %s\n", lc_scene_state_name(side_state));
    refused("refresh ghost", lc_app_request_scene_refresh(app, "ghost"));
    refused("destruction NULL", lc_app_request_scene_destruction(app, NULL));
    lc_dict *not_activity = lc_dict_create();
    refused("activation with {}", lc_app_request_scene_activation(app, NULL, not_activity));
    lc_dict_destroy(not_activity);
    printf("-- lists, role, userInfo (1.5)\n");
    size_t count = 0;
    CHECK(lc_app_scenes(app, NULL, 0, &count));
    lc_scene *listed[4] = {0};
    CHECK(lc_app_scenes(app, listed, 1, &count));
    const char *first_id = "?", *role = "?";
    CHECK(lc_scene_get_id(listed[0], &first_id));
    CHECK(lc_scene_get_session_role(listed[0], &role));
    printf("scenes: %zu, the first %s (%s), the same handle as lc_app_scene's: %s\n", count, first_id, role,
           listed[0] == main_scene ? "yes" : "no");
    const char *ids[4] = {0};
    CHECK(lc_app_sessions(app, ids, 4, &count));
    printf("sessions: %zu:", count);
    for (size_t i = 0; i < count && i < 4; i++) printf(" %s", ids[i]);
    printf("\n");
    lc_dict *draft = lc_dict_create();
    lc_dict_set_string(draft, "draft", "chapter 3");
    CHECK(lc_app_set_session_user_info(app, "side", draft));
    lc_dict_destroy(draft);
    const lc_dict *kept = NULL;
    CHECK(lc_app_session_user_info(app, "side", &kept));
    printf("side's userInfo: %s\n", lc_dict_json(kept));
    refused("userInfo of ghost", lc_app_session_user_info(app, "ghost", &kept));
    refused("lc_app_scenes without count", lc_app_scenes(app, listed, 4, NULL));
    refused("lc_app_sessions NULL out", lc_app_sessions(app, NULL, 4, &count));
    printf("home\n");
    CHECK(lc_app_perform_simple(app, LC_ACTION_HOME));

    printf("-- refusals\n");
    refused("activate ghost", perform(LC_ACTION_SCENE_ACTIVATE, "ghost"));
    refused("disconnect ghost", perform(LC_ACTION_SCENE_DISCONNECT, "ghost"));
    refused("discard ghost", perform(LC_ACTION_SCENE_DISCARD, "ghost"));
    refused("connect without scene", perform(LC_ACTION_SCENE_CONNECT, NULL));
    refused("connect '.bad'", perform(LC_ACTION_SCENE_CONNECT, ".bad"));
    refused("activate main (suspended)", perform(LC_ACTION_SCENE_ACTIVATE, "main"));
    lc_action_t no_activity = {.struct_size = sizeof no_activity, .kind = LC_ACTION_CONTINUE_USER_ACTIVITY};
    refused("continue without activity", lc_app_perform(app, &no_activity));
    lc_dict *empty = lc_dict_create();
    no_activity.activity = empty;
    refused("continue with {}", lc_app_perform(app, &no_activity));
    no_activity.kind = LC_ACTION_FAIL_TO_CONTINUE_USER_ACTIVITY;
    no_activity.activity = activity;
    refused("fail without error", lc_app_perform(app, &no_activity));
    refused("kind 99", lc_app_perform_simple(app, 99));
    lc_scene *out = (lc_scene *)0x1;
    refused("lc_app_scene ghost", lc_app_scene(app, "ghost", &out));
    printf("out untouched: %s\n", out == (lc_scene *)0x1 ? "yes" : "no");
    refused("lc_app_scene NULL id", lc_app_scene(app, NULL, &out));
    refused("lc_app_scene NULL out", lc_app_scene(app, "main", NULL));
    refused("lc_app_scene NULL app", lc_app_scene(NULL, "main", &out));
    const char *id = NULL;
    refused("lc_scene_get_id NULL", lc_scene_get_id(NULL, &id));
    int not_a_scene = 0;
    refused("lc_scene_get_id foreign", lc_scene_get_id((const lc_scene *)&not_a_scene, &id));
    refused("lc_scene_get_state out NULL", lc_scene_get_state(main_scene, NULL));
    printf("lc_scene_state_name(9): %s\n", lc_scene_state_name(9));

    printf("-- a short (1.1) lc_action_t\n");
    lc_app *plain = NULL;
    CHECK(lc_app_create(NULL, &plain));
    lc_action_t short_launch = {.struct_size = offsetof(lc_action_t, scene), .kind = LC_ACTION_LAUNCH, .scene = "ignored"};
    CHECK(lc_app_perform(plain, &short_launch));
    printf("short launch of an application without scenes: %s\n", lc_state_name(lc_app_state(plain)));
    lc_delegate_t handoff_delegate = {.struct_size = sizeof handoff_delegate, .will_continue_user_activity = app_will_continue,
                                      .continue_user_activity = app_continue, .did_fail_to_continue_user_activity = app_fail,
                                      .did_update_user_activity = app_update};
    CHECK(lc_app_add_delegate(plain, "com.example.handoff", &handoff_delegate));
    lc_action_t plain_handoff = {.struct_size = sizeof plain_handoff, .kind = LC_ACTION_CONTINUE_USER_ACTIVITY, .activity = activity};
    CHECK(lc_app_perform(plain, &plain_handoff));
    plain_handoff.kind = LC_ACTION_FAIL_TO_CONTINUE_USER_ACTIVITY;
    plain_handoff.error = "offline";
    CHECK(lc_app_perform(plain, &plain_handoff));
    plain_handoff.kind = LC_ACTION_UPDATE_USER_ACTIVITY;
    CHECK(lc_app_perform(plain, &plain_handoff));
    short_launch.struct_size = sizeof short_launch;
    short_launch.kind = LC_ACTION_TERMINATE;
    CHECK(lc_app_perform(plain, &short_launch));
    short_launch.kind = LC_ACTION_LAUNCH;
    refused("scene= without scenes", lc_app_perform(plain, &short_launch));
    lc_action_t connect = {.struct_size = sizeof connect, .kind = LC_ACTION_SCENE_CONNECT, .scene = "main"};
    refused("scene connect without scenes", lc_app_perform(plain, &connect));
    lc_app_destroy(plain);

    printf("-- terminate, destroy\n");
    CHECK(lc_app_perform_simple(app, LC_ACTION_TERMINATE));
    printf("main after terminate: %s\n", scene_state(main_scene));
    lc_app_destroy(app);
    refused("lc_scene_get_id after lc_app_destroy", lc_scene_get_id(main_scene, &id));
    lc_dict_destroy(activity);
    lc_dict_destroy(info);
    lc_dict_destroy(empty);
    return 0;
}
