// Loads plugins isolated through the C ABI (lc_app_load_plugin_with_options) and drives a short life:
// the trace's plugin-failed events and the options' checks, as a C program sees them.
//
//   isolated_plugins PLUGIN.so...    (each loaded isolated, restart on failure once)

#include <lifecycle.h>

#include <math.h>
#include <stdio.h>
#include <string.h>

static void trace(const lc_trace_event_t *e, void *ctx) {
    (void)ctx;
    if (strcmp(e->kind, "plugin-failed") == 0 || strcmp(e->kind, "plugin-restarted") == 0 || strcmp(e->kind, "action") == 0) {
        printf("%s %s [%s] %s\n", e->kind, e->name, e->observer ? e->observer : "", e->detail ? e->detail : "");
        fflush(stdout);
    }
}

static void refuse(lc_app *app, const char *path, lc_load_options_t options, const char *what) {
    lc_status status = lc_app_load_plugin_with_options(app, path, &options, NULL);
    printf("%s: %s %s\n", what, lc_status_name(status), lc_last_error_message());
}

int main(int argc, char **argv) {
    lc_app *app = NULL;
    if (lc_app_create(NULL, &app) != LC_OK) return printf("create: %s\n", lc_last_error_message()), 1;
    lc_app_set_trace(app, trace, NULL);
    for (int i = 1; i < argc; i++) {
        lc_load_options_t options = {.struct_size = sizeof options, .flags = LC_LOAD_ISOLATED,
                                     .restart_policy = LC_RESTART_ON_FAILURE, .restart_limit = 1, .call_budget = 2};
        lc_plugin *plugin = NULL;
        if (lc_app_load_plugin_with_options(app, argv[i], &options, &plugin) == LC_OK) {
            printf("loaded %s\n", lc_plugin_id(plugin));
        } else {
            printf("refused: %s\n", lc_last_error_message());
        }
        fflush(stdout);
    }
    refuse(app, argv[1], (lc_load_options_t){.struct_size = 4}, "short struct");
    refuse(app, argv[1], (lc_load_options_t){.struct_size = sizeof(lc_load_options_t), .flags = 6}, "unknown flags");
    refuse(app, argv[1], (lc_load_options_t){.struct_size = sizeof(lc_load_options_t), .flags = LC_LOAD_ISOLATED, .restart_policy = 9},
           "unknown policy");
    refuse(app, argv[1], (lc_load_options_t){.struct_size = sizeof(lc_load_options_t), .flags = LC_LOAD_ISOLATED, .call_budget = NAN},
           "NaN budget");
    refuse(app, argv[1], (lc_load_options_t){.struct_size = sizeof(lc_load_options_t), .flags = LC_LOAD_ISOLATED, .init_budget = 1e10},
           "huge budget");
    refuse(app, argv[1], (lc_load_options_t){.struct_size = sizeof(lc_load_options_t), .flags = LC_LOAD_ISOLATED}, "twice");

    lc_action_t launch = {.struct_size = sizeof launch, .kind = LC_ACTION_LAUNCH};
    lc_action_t home = {.struct_size = sizeof home, .kind = LC_ACTION_HOME};
    lc_action_t foreground = {.struct_size = sizeof foreground, .kind = LC_ACTION_FOREGROUND};
    lc_action_t terminate = {.struct_size = sizeof terminate, .kind = LC_ACTION_TERMINATE};
    lc_app_perform(app, &launch);
    lc_app_perform(app, &home);
    lc_app_run_for(app, 0.5); // the restart's back-off (100 ms)
    lc_app_perform(app, &foreground);
    lc_app_perform(app, &home);
    lc_app_run_for(app, 0.2);
    lc_app_perform(app, &foreground);
    lc_app_perform(app, &terminate);
    for (int i = 1; i < argc; i++) {
        lc_status status = lc_app_unload_plugin(app, i == 1 ? "org.applifecycle.echo" : "com.example.c.segv");
        printf("unload %d: %s\n", i, lc_status_name(status));
    }
    lc_app_destroy(app);
    return 0;
}
