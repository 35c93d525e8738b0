// ABI 1.3 through liblifecycle.so: the hang budget (lc_config_t.hang_budget, a 1.2-sized config
// keeping the default) and the nesting limit of posts (LC_ERR_NESTING_LIMIT), with an observer
// beside the re-posting one that keeps getting its notifications. Prints what it saw; the test
// compares the output line for line.
//
//   cc -Wall -Werror robustness.c -I include -L <libdir> -llifecycle -Wl,-rpath,<libdir> -o robustness

#include <lifecycle.h>

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

static void on_watchdog(const lc_watchdog_report_t *r, void *ctx) {
    (void)ctx;
    printf("  on_watchdog: budget %s, event %s, observer '%s', %.3f s budget, at least the budget: %s, policy %s\n",
           r->budget_name, r->event, r->observer, r->budget_seconds, r->elapsed_seconds >= r->budget_seconds ? "yes" : "no",
           r->policy == LC_WATCHDOG_REPORT ? "report" : "terminate");
    fflush(stdout);
}

static void slow(const lc_notification_t *n, void *ctx) {
    (void)n, (void)ctx;
    usleep(500000);
}

static void traced(const lc_trace_event_t *e, void *ctx) {
    (void)ctx;
    if (strcmp(e->kind, "watchdog") == 0 || strcmp(e->kind, "error") == 0) {
        printf("  trace: %s %s (%s)\n", e->kind, e->name, e->detail ? e->detail : "");
    }
}

/// Posts com.example.slow once on an application made with `config` and says what the watchdog did.
static void run_slow(const char *title, const lc_config_t *config) {
    printf("%s\n", title);
    lc_app *app;
    CHECK(lc_app_create(config, &app));
    CHECK(lc_app_set_trace(app, traced, NULL));
    CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
    CHECK(lc_app_observe(app, "com.example.slow", NULL, slow, NULL, NULL));
    CHECK(lc_app_post(app, "com.example.slow", NULL, NULL));
    printf("  post returned\n");
    CHECK(lc_app_run_for(app, 0.05));  // the watchdog's report reaches the trace on the next turn at the latest
    lc_app_destroy(app);
}

static lc_app *app;
static lc_name again;
static int depth, deepest, beside;
static lc_status first_failure = LC_OK;
static int failed_at;
static char failure_message[512];

static void repost(const lc_notification_t *n, void *ctx) {
    (void)n, (void)ctx;
    depth++;
    if (depth > deepest) deepest = depth;
    if (depth < 100000) {
        lc_status s = depth % 2 ? lc_app_post_name(app, again, NULL, NULL) : lc_app_post(app, "com.example.again", NULL, NULL);
        if (s != LC_OK && first_failure == LC_OK) {
            first_failure = s;
            failed_at = depth;
            snprintf(failure_message, sizeof failure_message, "%s", lc_last_error_message());
        }
    }
    depth--;
}

static void count(const lc_notification_t *n, void *ctx) {
    (void)n, (void)ctx;
    beside++;
}

int main(void) {
    uint32_t major, minor;
    lc_abi_version(&major, &minor);
    printf("abi %u.%u\n", major, minor);
    printf("%s: %s\n", lc_status_name(LC_ERR_NESTING_LIMIT), lc_status_message(LC_ERR_NESTING_LIMIT));

    lc_config_t config;
    lc_config_init(&config);
    printf("default hang_budget %.0f\n", config.hang_budget);
    config.watchdog_policy = LC_WATCHDOG_REPORT;
    config.on_watchdog = on_watchdog;
    config.hang_budget = 0.2;
    run_slow("hang_budget 0.2, an observer taking 0.5 s:", &config);
    config.struct_size = (uint32_t)offsetof(lc_config_t, hang_budget);  // a 1.2 program's struct
    run_slow("a 1.2-sized lc_config_t (the default 5 s), the same observer:", &config);

    printf("an observer re-posting from its own callback, 100000 deep:\n");
    CHECK(lc_app_create(NULL, &app));
    CHECK(lc_app_set_trace(app, traced, NULL));
    CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
    CHECK(lc_name_intern("com.example.again", &again));
    CHECK(lc_app_observe_name(app, again, NULL, repost, NULL, NULL));
    CHECK(lc_app_observe_name(app, again, NULL, count, NULL, NULL));
    lc_status outer = lc_app_post_name(app, again, NULL, NULL);
    printf("  outer post: %s; deepest %d; the one beside it called %d times\n", lc_status_name(outer), deepest, beside);
    printf("  first refusal at depth %d: %s: %s\n", failed_at, lc_status_name(first_failure), failure_message);
    beside = 0;
    CHECK(lc_app_post_name(app, again, NULL, NULL));
    printf("  again: the one beside it called %d times\n", beside);
    lc_app_destroy(app);
    return 0;
}
