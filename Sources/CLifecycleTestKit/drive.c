// Driving the harness: loading, actions, the clock. Each call is a check.

#define _GNU_SOURCE // PATH_MAX, getcwd

#include "testkit_internal.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// How many rounds of ready work one call runs at most: work that keeps posting more is a bug of the
// plugin, reported, not a hang of the test.
#define LCT_SETTLE_ROUNDS 100000

// Runs the work that is due now (posts, perform_async, zero-delay timers) until none is left.
static lc_status settle(lct_harness *h, const char *file, int line) {
    for (int round = 0; round < LCT_SETTLE_ROUNDS; round++) {
        int ran = lc_app_dispatch_pending(h->app);
        if (ran < 0) {
            lct_fail(h, file, line, false, "running the due work failed: %s: %s", lc_status_name(ran), lc_last_error_message());
            return ran;
        }
        if (ran == 0) return LC_OK;
    }
    lct_fail(h, file, line, true, "the due work did not end: still more after %d rounds (work that posts itself again?)",
             LCT_SETTLE_ROUNDS);
    return LC_ERR_INTERNAL;
}

// Passes the check when `status` (the call's) and the settling after it are LC_OK; else fails it.
static lc_status finish(lct_harness *h, lc_status status, const char *file, int line, const char *what) {
    if (status != LC_OK) {
        lct_fail(h, file, line, false, "%s failed: %s: %s", what, lc_status_name(status), lc_last_error_message());
        return status;
    }
    status = settle(h, file, line);
    if (status == LC_OK) lct_pass(h);
    return status;
}

// Loads the plugin at `path` (made absolute against the working directory) with `options` (NULL: in
// this process); `name` is the caller's function, for the reports.
static lc_status load(lct_harness *harness, const char *path, const lc_load_options_t *options, const char *name,
                      const char *file, int line) {
    if (harness == NULL) return LC_ERR_INVALID_ARGUMENT;
    char missing[64];
    snprintf(missing, sizeof missing, "%s: no plugin path given", name);
    if (!lct_given(harness, path, missing, file, line)) return LC_ERR_INVALID_ARGUMENT;
    char absolute[PATH_MAX];
    if (*path == '/') {
        if (strlen(path) >= sizeof absolute) {
            lct_fail(harness, file, line, false, "%s: the path is %zu bytes long (at most %d)", name, strlen(path), PATH_MAX - 1);
            return LC_ERR_INVALID_ARGUMENT;
        }
        strcpy(absolute, path);
    } else {
        char folder[PATH_MAX];
        if (getcwd(folder, sizeof folder) == NULL) {
            lct_fail(harness, file, line, false, "%s: cannot make '%s' absolute: getcwd: %s", name, path, strerror(errno));
            return LC_ERR_SYSTEM;
        }
        int length = snprintf(absolute, sizeof absolute, "%s/%s", folder, path);
        if (length < 0 || (size_t)length >= sizeof absolute) {
            lct_fail(harness, file, line, false, "%s: '%s/%s' is longer than %d bytes", name, folder, path, PATH_MAX - 1);
            return LC_ERR_INVALID_ARGUMENT;
        }
    }
    char what[PATH_MAX + 32];
    snprintf(what, sizeof what, "%s(%s)", name, absolute);
    return finish(harness, lc_app_load_plugin_with_options(harness->app, absolute, options, NULL), file, line, what);
}

lc_status lct_load_at(lct_harness *harness, const char *path, const char *file, int line) {
    return load(harness, path, NULL, "lct_load", file, line);
}

lc_status lct_load_isolated_at(lct_harness *harness, const char *path, const char *file, int line) {
    lc_load_options_t options = {.struct_size = sizeof options, .flags = LC_LOAD_ISOLATED};
    return load(harness, path, &options, "lct_load_isolated", file, line);
}

lc_status lct_perform_at(lct_harness *harness, lc_action_kind kind, const char *file, int line) {
    if (harness == NULL) return LC_ERR_INVALID_ARGUMENT;
    char what[48];
    snprintf(what, sizeof what, "lct_perform(action kind %u)", (unsigned)kind);
    return finish(harness, lc_app_perform_simple(harness->app, kind), file, line, what);
}

lc_status lct_perform_action_at(lct_harness *harness, const lc_action_t *action, const char *file, int line) {
    if (harness == NULL) return LC_ERR_INVALID_ARGUMENT;
    char what[48];
    if (action == NULL) snprintf(what, sizeof what, "lct_perform_action(NULL)");
    else snprintf(what, sizeof what, "lct_perform_action(action kind %u)", (unsigned)action->kind);
    return finish(harness, lc_app_perform(harness->app, action), file, line, what);
}

lc_status lct_advance_at(lct_harness *harness, double seconds, const char *file, int line) {
    if (harness == NULL) return LC_ERR_INVALID_ARGUMENT;
    char what[64];
    snprintf(what, sizeof what, "lct_advance(%g)", seconds);
    if (!isfinite(seconds) || seconds < 0) {
        lct_fail(harness, file, line, false, "%s: seconds must be a finite number >= 0", what);
        return LC_ERR_INVALID_ARGUMENT;
    }
    lc_status status = harness->manual_clock ? lc_app_advance(harness->app, seconds) : lc_app_run_for(harness->app, seconds);
    return finish(harness, status, file, line, what);
}
