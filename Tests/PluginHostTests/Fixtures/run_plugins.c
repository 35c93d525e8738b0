// Loads the plugins named on the command line into one application and drives a scenario, printing
// the engine's trace interleaved with what the plugins print. Used by the tests to check the exact
// output real plugins produce.
//
//   run_plugins ARCHIVE_DIR PLUGIN.so...

#include <lifecycle.h>

#include <stdio.h>
#include <string.h>

static void trace(const lc_trace_event_t *e, void *ctx) {
    (void)ctx;
    if (strcmp(e->kind, "action") == 0) {
        printf("\n> %s%s%s\n", e->name, e->detail ? " " : "", e->detail ? e->detail : "");
    } else {
        printf("  %s %s%s%s%s\n", e->kind, e->name, e->observer && *e->observer ? " [" : "",
               e->observer && *e->observer ? e->observer : "", e->observer && *e->observer ? "]" : "");
    }
    fflush(stdout);
}

static int perform(lc_app *app, lc_action_t action) {
    action.struct_size = sizeof action;
    lc_status status = lc_app_perform(app, &action);
    if (status != LC_OK) printf("  error %s: %s\n", lc_status_name(status), lc_last_error_message());
    fflush(stdout);
    return status;
}

int main(int argc, char **argv) {
    if (argc < 2) return fprintf(stderr, "usage: run_plugins ARCHIVE_DIR PLUGIN.so...\n"), 2;
    lc_config_t config;
    lc_config_init(&config);
    config.archive_directory = argv[1];
    config.background_modes = LC_BACKGROUND_FETCH | LC_BACKGROUND_REMOTE_NOTIFICATION;
    lc_app *app = NULL;
    if (lc_app_create(&config, &app) != LC_OK) return printf("create: %s\n", lc_last_error_message()), 1;
    lc_app_set_trace(app, trace, NULL);

    for (int i = 2; i < argc; i++) {
        lc_plugin *plugin = NULL;
        if (lc_app_load_plugin(app, argv[i], &plugin) == LC_OK) {
            printf("loaded %s\n", lc_plugin_id(plugin));
        } else {
            printf("refused: %s\n", lc_last_error_message());
        }
        fflush(stdout);
    }

    lc_dict *payload = lc_dict_create();
    lc_dict_set_int(payload, "badge", 1);
    perform(app, (lc_action_t){.kind = LC_ACTION_LAUNCH});
    perform(app, (lc_action_t){.kind = LC_ACTION_MEMORY_WARNING, .memory_level = LC_MEMORY_CRITICAL});
    perform(app, (lc_action_t){.kind = LC_ACTION_HOME});
    lc_app_run_for(app, 0.3); // the background task ends on a timer; then the app suspends
    perform(app, (lc_action_t){.kind = LC_ACTION_TIME_CHANGE});
    perform(app, (lc_action_t){.kind = LC_ACTION_FOREGROUND});
    perform(app, (lc_action_t){.kind = LC_ACTION_LOCK});
    lc_app_run_for(app, 0.3);
    perform(app, (lc_action_t){.kind = LC_ACTION_UNLOCK});
    perform(app, (lc_action_t){.kind = LC_ACTION_OPEN_URL, .url = "greeter:hello", .source_application = "com.example.mail"});
    perform(app, (lc_action_t){.kind = LC_ACTION_HOME});
    lc_app_run_for(app, 0.3);
    perform(app, (lc_action_t){.kind = LC_ACTION_REMOTE_NOTIFICATION, .options = payload});
    lc_app_run_for(app, 0.3); // woken: didEnterBackground came first, and CacheTrimmer's task holds the app again
    perform(app, (lc_action_t){.kind = LC_ACTION_TERMINATE});
    perform(app, (lc_action_t){.kind = LC_ACTION_LAUNCH}); // StateKeeper restores its counter
    perform(app, (lc_action_t){.kind = LC_ACTION_TERMINATE});
    perform(app, (lc_action_t){.kind = LC_ACTION_PURGE}); // refused: not suspended
    lc_dict_destroy(payload);
    lc_app_destroy(app);
    return 0;
}
