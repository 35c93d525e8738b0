// lc_app_reload_plugin (ABI 1.7) through liblifecycle.so. ReloadABITests.swift builds the plugin of
// Tests/HostTests/Fixtures/reload_fixture.c three times and passes the files: PLUGIN_A, PLUGIN_B (the
// new build) and PLUGIN_F (its init fails); NOT_PLUGIN is a text file. Prints what it sees, one line
// at a time; the test compares every line.
#include "check.h"

#include <string.h>

#define ID "com.example.reloadable"

/// The reload's own trace events and the plugin's delegate calls (the state handed over).
static void on_trace(const lc_trace_event_t *event, void *ctx) {
    (void)ctx;
    if (strcmp(event->kind, "plugin-reload") != 0 && strcmp(event->kind, "delegate") != 0) return;
    printf("  trace: %s %s [%s] (%s)\n", event->kind, event->name, event->observer ? event->observer : "",
           event->detail ? event->detail : "");
}

/// Reloads and prints the status and, for a failure, the message.
static lc_status reload(lc_app *app, const char *id, const char *path, lc_reload_flags flags, lc_plugin **out) {
    lc_status status = lc_app_reload_plugin(app, id, path, flags, out);
    if (status == LC_OK) {
        printf("reload %s: LC_OK\n", path ? "B" : "(same file)");
    } else {
        printf("%s: %s\n", lc_status_name(status), lc_last_error_message());
    }
    return status;
}

/// An observer of the post the plugin makes from inside its own callback: reloads it from there.
static void echoed(const lc_notification_t *notification, void *ctx) {
    (void)notification;
    lc_app *app = ctx;
    printf("from inside its callback: ");
    lc_plugin *out = NULL;
    reload(app, ID, NULL, LC_RELOAD_FORCE, &out);
}

int main(void) {
    printf("abi %d.%d\n", LC_ABI_VERSION_MAJOR, LC_ABI_VERSION_MINOR);
    lc_app *app = NULL;
    CHECK(lc_app_create(NULL, &app));
    CHECK(lc_app_set_trace(app, on_trace, NULL));
    lc_plugin *a = NULL;
    CHECK(lc_app_load_plugin(app, PLUGIN_A, &a));

    lc_plugin *out = NULL;
    reload(app, NULL, NULL, 0, &out);
    reload(app, "com.example.nothing", NULL, 0, &out);
    reload(app, "nodots", NULL, 0, &out);
    reload(app, ID, NULL, 0x6, &out);
    reload(app, ID, "relative.so", 0, &out);
    reload(app, ID, NOT_PLUGIN, 0, &out);
    reload(app, ID, PLUGIN_F, 0, &out);
    printf("still loaded: %s, same handle: %s\n", lc_plugin_id(a), out == NULL ? "yes" : "no");

    if (reload(app, ID, PLUGIN_B, LC_RELOAD_FORCE, &out) == LC_OK) {
        printf("new handle: %s, id %s\n", out != a && out != NULL ? "yes" : "no", lc_plugin_id(out));
    }
    CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
    CHECK(lc_app_observe(app, "com.example.echoed", NULL, echoed, app, NULL));
    CHECK(lc_app_post(app, "com.example.echo", NULL, NULL));
    CHECK(lc_app_unload_plugin(app, ID));
    printf("unloaded; reload now: ");
    reload(app, ID, NULL, 0, &out);
    lc_app_destroy(app);
    return 0;
}
