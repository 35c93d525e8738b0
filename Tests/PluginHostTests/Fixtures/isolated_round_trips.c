// A C program that asks an isolated plugin one question per action, pinned to one CPU with its
// runner (the runner takes the loading thread's CPUs): each action must be one round trip, with no
// sync frame after the answer. The plugin prints, at each call, the number of the frame it is running
// (read from its progress page); the test checks they follow each other.
#define _GNU_SOURCE
#include "lifecycle.h"
#include <sched.h>
#include <stdio.h>

int main(int argc, char **argv) {
    if (argc < 2) return 2;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(0, &one);
    if (sched_setaffinity(0, sizeof one, &one) != 0) { perror("sched_setaffinity"); return 1; }
    lc_app *app = NULL;
    if (lc_app_create(NULL, &app) != LC_OK) { printf("create: %s\n", lc_last_error_message()); return 1; }
    lc_load_options_t options = {.struct_size = sizeof options, .flags = LC_LOAD_ISOLATED};
    if (lc_app_load_plugin_with_options(app, argv[1], &options, NULL) != LC_OK) { printf("load: %s\n", lc_last_error_message()); return 1; }
    if (lc_app_perform_simple(app, LC_ACTION_LAUNCH) != LC_OK) { printf("launch: %s\n", lc_last_error_message()); return 1; }
    lc_action_t action = {.struct_size = sizeof action, .kind = LC_ACTION_OPEN_URL, .url = "app://frames/1"};
    for (int i = 0; i < 50; i++) {
        if (lc_app_perform(app, &action) != LC_OK) { printf("open-url: %s\n", lc_last_error_message()); return 1; }
    }
    lc_app_destroy(app);
    return 0;
}
