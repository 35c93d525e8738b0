// A plugin implementing the application delegate's rows added after ABI 1.0 — application:openURL:
// options: (1.1), the scene-session and Handoff methods (1.2) — plus willFinishLaunching and the
// foreground pair, for HandoffPluginTests and HostTests' check. Compiled by the tests at run time:
//   cc -shared -fPIC -I<repo>/include -DFIXTURE_ID='"com.example.x"' [-DFIXTURE_TABLE | -DFIXTURE_STRUCT] handoff_fixture.c
// One source, three ways into the host's one delegate bridge:
//   (default)        ABI 1.0: the functions exported by name (dlsym), called through libffi;
//   FIXTURE_TABLE    ABI 1.1: an lc_plugin_delegate_t with its 1.2 fields, registered from init;
//   FIXTURE_STRUCT   an lc_delegate_t the test adds with lc_app_add_delegate (handoff_fill_delegate):
//                    it has no open_url_with_options field, so that row is missing on this path.
//
// Every function and observer appends one line to a log (handoff_log): the method, "[ok]" when its
// receiver is the expected one (the lc_app the test named with handoff_expect_app; for the table the
// lc_plugin and state init got; else what it got), the application's state read through the host API,
// and its arguments — strings verbatim, dictionaries rendered here key by key through the host's
// typed getters (lc_dict_get_*). Boolean answers and the configuration name are the test's to choose
// (handoff_set_answer, handoff_set_configuration). The log lines are the same on every path.
#ifndef FIXTURE_TABLE
#ifndef FIXTURE_STRUCT
#define LC_DECLARE_DELEGATE_FUNCTIONS
#endif
#endif
#include "lifecycle.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef FIXTURE_ID
#define FIXTURE_ID "com.example.handoff"
#endif

static const lc_host_api_t *host;
static lc_plugin *self;
static void *self_state;
static const void *expected_app;
static char log_text[16384];
static char configuration_name[128];
static bool configuration_is_null = true;

static struct {
    const char *name;
    bool value;
} answers[] = {{"willFinishLaunching", true}, {"openURL", true}, {"willContinueUserActivity", true}, {"continueUserActivity", true}};

static bool answer(const char *name) {
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++)
        if (strcmp(answers[i].name, name) == 0) return answers[i].value;
    return true;
}

// ---- The log

static void append(const char *format, ...) {
    size_t used = strlen(log_text);
    va_list args;
    va_start(args, format);
    vsnprintf(log_text + used, sizeof log_text - used, format, args);
    va_end(args);
}

static const char *state_name(void) {
    static const char *names[] = {"not-running", "inactive", "active", "background", "suspended"};
    lc_state state = host->state(self);
    return state < 5 ? names[state] : "?";
}

/// Begins a line: the method, the receiver check, the state.
static void begin(const char *method, const char *receiver) { append("%s [%s] state=%s", method, receiver, state_name()); }

static void dict_text(const lc_dict *dict);

/// One value of a list, read with the list getters.
static void list_text(const lc_list *list) {
    append("[");
    for (size_t i = 0; i < host->dict->list_count(list); i++) {
        if (i) append(",");
        const char *s;
        int64_t n;
        const lc_dict *d;
        switch (host->dict->list_type_at(list, i)) {
        case LC_VALUE_STRING: host->dict->list_get_string(list, i, &s); append("\"%s\"", s); break;
        case LC_VALUE_INT: host->dict->list_get_int(list, i, &n); append("%" PRId64, n); break;
        case LC_VALUE_DICT: host->dict->list_get_dict(list, i, &d); dict_text(d); break;
        default: append("?"); break;
        }
    }
    append("]");
}

/// A dictionary key by key (insertion order), each value read with its typed getter.
static void dict_text(const lc_dict *dict) {
    if (!dict) {
        append("NULL");
        return;
    }
    append("{");
    for (size_t i = 0; i < host->dict->count(dict); i++) {
        const char *key = host->dict->key_at(dict, i), *s;
        int64_t n;
        bool b;
        const lc_dict *d;
        const lc_list *l;
        append("%s%s=", i ? " " : "", key);
        switch (host->dict->type(dict, key)) {
        case LC_VALUE_STRING: host->dict->get_string(dict, key, &s); append("\"%s\"", s); break;
        case LC_VALUE_INT: host->dict->get_int(dict, key, &n); append("%" PRId64, n); break;
        case LC_VALUE_BOOL: host->dict->get_bool(dict, key, &b); append(b ? "true" : "false"); break;
        case LC_VALUE_DICT: host->dict->get_dict(dict, key, &d); dict_text(d); break;
        case LC_VALUE_LIST: host->dict->get_list(dict, key, &l); list_text(l); break;
        default: append("?"); break;
        }
    }
    append("}");
}

static bool answered(bool value) {
    append(" -> %s\n", value ? "true" : "false");
    return value;
}

// ---- The methods, whatever the path: `receiver` is "ok" or what was wrong with it

static bool will_finish_launching(const char *receiver, const lc_dict *options) {
    begin("willFinishLaunching", receiver);
    append(" options=");
    dict_text(options);
    return answered(answer("willFinishLaunching"));
}

static void will_enter_foreground(const char *receiver) {
    begin("applicationWillEnterForeground", receiver);
    append("\n");
}

static void did_become_active(const char *receiver) {
    begin("applicationDidBecomeActive", receiver);
    append("\n");
}

#ifndef FIXTURE_STRUCT // lc_delegate_t has no open_url_with_options
static bool open_url_with_options(const char *receiver, const char *url, const lc_dict *options) {
    begin("openURL:options:", receiver);
    append(" url=%s options=", url);
    dict_text(options);
    return answered(answer("openURL"));
}
#endif

static const char *configuration_for_connecting(const char *receiver, const char *session, const lc_dict *options) {
    begin("configurationForConnecting", receiver);
    append(" session=%s options=", session);
    dict_text(options);
    append(" -> %s\n", configuration_is_null ? "NULL" : configuration_name);
    return configuration_is_null ? NULL : configuration_name;
}

static void did_discard_scene_sessions(const char *receiver, const lc_dict *sessions) {
    begin("didDiscardSceneSessions", receiver);
    append(" sessions=");
    dict_text(sessions);
    append("\n");
}

static bool will_continue_user_activity(const char *receiver, const char *type) {
    begin("willContinueUserActivity", receiver);
    append(" type=%s", type);
    return answered(answer("willContinueUserActivity"));
}

static bool continue_user_activity(const char *receiver, const lc_dict *activity) {
    begin("continueUserActivity", receiver);
    // The activity's type through its own getter first (a string), then the whole dictionary.
    const char *type = "(missing)";
    host->dict->get_string(activity, "activityType", &type);
    append(" type=%s activity=", type);
    dict_text(activity);
    return answered(answer("continueUserActivity"));
}

static void did_fail_to_continue(const char *receiver, const char *type, const char *error) {
    begin("didFailToContinueUserActivity", receiver);
    append(" type=%s error=%s\n", type, error);
}

static void did_update_user_activity(const char *receiver, const lc_dict *activity) {
    begin("didUpdateUserActivity", receiver);
    append(" activity=");
    dict_text(activity);
    append("\n");
}

static void observed(const lc_notification_t *note, void *ctx) {
    (void)ctx;
    append("note %s state=%s\n", note->name, state_name());
}

// ---- Receivers

static char receiver_text[128];

#ifndef FIXTURE_TABLE
/// "ok" when `app` (and `ctx`) are the expected ones, else what they were.
static const char *app_receiver(const void *app, const void *ctx, const void *expected_ctx) {
    if (app == expected_app && ctx == expected_ctx) return "ok";
    snprintf(receiver_text, sizeof receiver_text, "app %p ctx %p", app, ctx);
    return receiver_text;
}
#endif

#if defined(FIXTURE_TABLE)
// ABI 1.1: the table, each function checking it got this plugin's handle and state.
static const char *table_receiver(lc_plugin *plugin, void *state) {
    if (plugin == self && state == self_state) return "ok";
    snprintf(receiver_text, sizeof receiver_text, "plugin %p state %p", (void *)plugin, state);
    return receiver_text;
}
#define R table_receiver(p, s)
static bool t_will_finish(lc_plugin *p, void *s, const lc_dict *o) { return will_finish_launching(R, o); }
static void t_will_enter_foreground(lc_plugin *p, void *s) { will_enter_foreground(R); }
static void t_did_become_active(lc_plugin *p, void *s) { did_become_active(R); }
static bool t_open_url(lc_plugin *p, void *s, const char *url, const lc_dict *o) { return open_url_with_options(R, url, o); }
static const char *t_configuration(lc_plugin *p, void *s, const char *session, const lc_dict *o) {
    return configuration_for_connecting(R, session, o);
}
static void t_discard(lc_plugin *p, void *s, const lc_dict *sessions) { did_discard_scene_sessions(R, sessions); }
static bool t_will_continue(lc_plugin *p, void *s, const char *type) { return will_continue_user_activity(R, type); }
static bool t_continue(lc_plugin *p, void *s, const lc_dict *a) { return continue_user_activity(R, a); }
static void t_fail(lc_plugin *p, void *s, const char *type, const char *error) { did_fail_to_continue(R, type, error); }
static void t_update(lc_plugin *p, void *s, const lc_dict *a) { did_update_user_activity(R, a); }
#undef R
static const lc_plugin_delegate_t table = {
    .struct_size = sizeof(lc_plugin_delegate_t),
    .will_finish_launching = t_will_finish,
    .will_enter_foreground = t_will_enter_foreground,
    .did_become_active = t_did_become_active,
    .open_url_with_options = t_open_url,
    .configuration_for_connecting = t_configuration,
    .did_discard_scene_sessions = t_discard,
    .will_continue_user_activity = t_will_continue,
    .continue_user_activity = t_continue,
    .did_fail_to_continue_user_activity = t_fail,
    .did_update_user_activity = t_update,
};
#elif defined(FIXTURE_STRUCT)
// lc_delegate_t: lc_app_add_delegate's struct, each function checking its app and ctx.
static int struct_ctx; // the ctx: its address
#define R app_receiver(a, c, &struct_ctx)
static bool d_will_finish(lc_app *a, const lc_dict *o, void *c) { return will_finish_launching(R, o); }
static void d_will_enter_foreground(lc_app *a, void *c) { will_enter_foreground(R); }
static void d_did_become_active(lc_app *a, void *c) { did_become_active(R); }
static const char *d_configuration(lc_app *a, const char *session, const lc_dict *o, void *c) {
    return configuration_for_connecting(R, session, o);
}
static void d_discard(lc_app *a, const lc_dict *sessions, void *c) { did_discard_scene_sessions(R, sessions); }
static bool d_will_continue(lc_app *a, const char *type, void *c) { return will_continue_user_activity(R, type); }
static bool d_continue(lc_app *a, const lc_dict *activity, void *c) { return continue_user_activity(R, activity); }
static void d_fail(lc_app *a, const char *type, const char *error, void *c) { did_fail_to_continue(R, type, error); }
static void d_update(lc_app *a, const lc_dict *activity, void *c) { did_update_user_activity(R, activity); }
#undef R
LC_EXPORT void handoff_fill_delegate(lc_delegate_t *d) {
    *d = (lc_delegate_t){
        .struct_size = sizeof(lc_delegate_t),
        .ctx = &struct_ctx,
        .will_finish_launching = d_will_finish,
        .will_enter_foreground = d_will_enter_foreground,
        .did_become_active = d_did_become_active,
        .configuration_for_connecting = d_configuration,
        .did_discard_scene_sessions = d_discard,
        .will_continue_user_activity = d_will_continue,
        .continue_user_activity = d_continue,
        .did_fail_to_continue_user_activity = d_fail,
        .did_update_user_activity = d_update,
    };
}
#else
// ABI 1.0: exported by name, each function checking its app.
#define R app_receiver(app, NULL, NULL)
bool application_willFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) { return will_finish_launching(R, options); }
void applicationWillEnterForeground(lc_app *app) { will_enter_foreground(R); }
void applicationDidBecomeActive(lc_app *app) { did_become_active(R); }
bool application_openURL_options(lc_app *app, const char *url, const lc_dict *options) {
    return open_url_with_options(R, url, options);
}
const char *application_configurationForConnectingSceneSession_options(lc_app *app, const char *session_id, const lc_dict *options) {
    return configuration_for_connecting(R, session_id, options);
}
void application_didDiscardSceneSessions(lc_app *app, const lc_dict *sessions) { did_discard_scene_sessions(R, sessions); }
bool application_willContinueUserActivityWithType(lc_app *app, const char *activity_type) {
    return will_continue_user_activity(R, activity_type);
}
bool application_continueUserActivity_restorationHandler(lc_app *app, const lc_dict *activity) {
    return continue_user_activity(R, activity);
}
void application_didFailToContinueUserActivityWithType_error(lc_app *app, const char *activity_type, const char *error) {
    did_fail_to_continue(R, activity_type, error);
}
void application_didUpdateUserActivity(lc_app *app, const lc_dict *activity) { did_update_user_activity(R, activity); }
#undef R
#endif

// ---- The test's controls

/// The lc_app the functions must receive (exported functions and lc_delegate_t).
LC_EXPORT void handoff_expect_app(const void *app) { expected_app = app; }
/// What a boolean method answers from now on; -1 when `name` is not one of them.
LC_EXPORT int handoff_set_answer(const char *name, bool value) {
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++)
        if (strcmp(answers[i].name, name) == 0) return answers[i].value = value, 0;
    return -1;
}
/// The configuration name answered from now on (copied); NULL answers NULL (the default).
LC_EXPORT void handoff_set_configuration(const char *name) {
    configuration_is_null = name == NULL;
    snprintf(configuration_name, sizeof configuration_name, "%s", name ? name : "");
}
LC_EXPORT const char *handoff_log(void) { return log_text; }
/// Empties the log and restores the answers (every one true, the configuration NULL).
LC_EXPORT void handoff_reset(void) {
    log_text[0] = 0;
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) answers[i].value = true;
    handoff_set_configuration(NULL);
}

// ---- The plugin

static lc_status plugin_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
    host = api;
    self = plugin;
    self_state = &self_state; // any address: the table's functions must get it back
    *state = self_state;
    static const char *names[] = {"didFinishLaunching", "didBecomeActive", "willResignActive", "didEnterBackground", "willEnterForeground"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        lc_observer_token token;
        lc_status status = host->observe(plugin, names[i], NULL, observed, NULL, &token);
        if (status != LC_OK) return status;
    }
#ifdef FIXTURE_TABLE
    return host->set_delegate(plugin, &table);
#else
    return LC_OK;
#endif
}

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof(lc_plugin_descriptor_t),
    .magic = LC_PLUGIN_MAGIC,
    .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = LC_ABI_VERSION_MINOR,
    .id = FIXTURE_ID,
    .version = "1.2.0",
    .description = "Handoff, scene-session and openURL:options: delegate functions",
    .init = plugin_init,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
