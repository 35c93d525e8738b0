// ABI 1.7 through liblifecycle.so: the manual clock (lc_config_t.clock = LC_CLOCK_MANUAL,
// lc_app_advance, lc_app_clock_seconds). A background task's expiry, a completion handler's timeout,
// the launch and hang watchdog (lc_app_advance from inside a callback standing for a slow one), the
// order of timers falling due in one advance, and the refusals. Prints what it saw, with the clock's
// readings; the test compares the output line for line. The virtual time adds up to minutes; the
// program says whether its wall time stayed under a second.
//
//   cc -Wall -Werror manual_clock.c -I include -L <libdir> -llifecycle -Wl,-rpath,<libdir> -o manual_clock

#include <lifecycle.h>

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "check.h"

static lc_app *app;

static void traced(const lc_trace_event_t *e, void *ctx) {
    (void)ctx;
    bool by = e->observer && e->observer[0];
    printf("  %7.3f %s %s%s%s%s%s\n", e->time, e->kind, e->name, by ? " by " : "", by ? e->observer : "",
           e->detail ? ": " : "", e->detail ? e->detail : "");
}

static void on_watchdog(const lc_watchdog_report_t *r, void *ctx) {
    (void)ctx;
    printf("  on_watchdog at %.3f: budget %s, event %s, %.3f s of %.3f s\n", lc_app_clock_seconds(app), r->budget_name, r->event,
           r->elapsed_seconds, r->budget_seconds);
}

static lc_app *make_app(lc_watchdog_policy policy) {
    lc_config_t config;
    lc_config_init(&config);
    config.background_modes = LC_BACKGROUND_FETCH;
    config.clock = LC_CLOCK_MANUAL;
    config.watchdog_policy = policy;
    config.on_watchdog = on_watchdog;
    lc_app *made;
    CHECK(lc_app_create(&config, &made));
    CHECK(lc_app_set_trace(made, traced, NULL));
    return made;
}

/// An application on the manual clock with one delegate, `id`.
static lc_app *make_app_with(lc_watchdog_policy policy, const char *id, const lc_delegate_t *delegate) {
    lc_app *made = make_app(policy);
    CHECK(lc_app_add_delegate(made, id, delegate));
    return made;
}

static void advance(double seconds) {
    printf(" advance %g\n", seconds);
    CHECK(lc_app_advance(app, seconds));
    printf(" clock %.3f, state %s\n", lc_app_clock_seconds(app), lc_state_name(lc_app_state(app)));
}

// A background task whose expiration handler does not end it: the watchdog ends it at 30 s.
static void expiring(void *ctx) {
    (void)ctx;
    printf("  expiration handler at %.3f, %.3f s left\n", lc_app_clock_seconds(app), lc_app_background_time_remaining(app));
}

static void begin_upload(lc_app *a, void *ctx) {
    (void)ctx;
    lc_task_id task;
    CHECK(lc_app_begin_background_task(a, "upload", expiring, NULL, &task));
}

static void background_task(void) {
    printf("a background task (30 s of background time, the warning 5 s before):\n");
    lc_delegate_t delegate = {.struct_size = sizeof delegate, .did_enter_background = begin_upload};
    app = make_app_with(LC_WATCHDOG_TERMINATE, "com.example.uploader", &delegate);
    CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
    advance(10);
    CHECK(lc_app_perform_simple(app, LC_ACTION_HOME));
    advance(24.9);
    printf(" %.3f s left\n", lc_app_background_time_remaining(app));
    advance(0.1);
    advance(4.9);
    printf(" %.3f s left\n", lc_app_background_time_remaining(app));
    advance(0.1);
    lc_app_destroy(app);
}

// perform_fetch that never calls its completion handler: timed out after completion_handler_budget.
static void fetch(lc_app *a, void (*complete)(void *, lc_fetch_result), void *completion, void *ctx) {
    (void)a, (void)complete, (void)completion, (void)ctx;
    printf("  perform_fetch at %.3f: the completion handler is never called\n", lc_app_clock_seconds(app));
}

static void completion_timeout(void) {
    printf("a background fetch whose completion handler is never called (30 s):\n");
    lc_delegate_t delegate = {.struct_size = sizeof delegate, .perform_fetch = fetch};
    app = make_app_with(LC_WATCHDOG_REPORT, "com.example.fetcher", &delegate);
    CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH_BACKGROUND));
    CHECK(lc_app_perform_simple(app, LC_ACTION_FETCH));
    advance(29.9);
    advance(0.1);
    lc_app_destroy(app);
}

// A slow callback: lc_app_advance from inside it moves the clock while it runs.
static bool slow_launch(lc_app *a, const lc_dict *options, void *ctx) {
    (void)a, (void)options, (void)ctx;
    printf("  did_finish_launching advances 6 s from inside\n");
    CHECK(lc_app_advance(app, 6));
    printf("  did_finish_launching returns at %.3f\n", lc_app_clock_seconds(app));
    return true;
}

static void slow_observer(const lc_notification_t *n, void *ctx) {
    double seconds = *(const double *)ctx;
    (void)n;
    printf("  observer advances %g s from inside\n", seconds);
    CHECK(lc_app_advance(app, seconds));
}

static void late_timer(void *ctx) {
    (void)ctx;
    printf("  timer due at 7 runs at %.3f, after the callback that passed it\n", lc_app_clock_seconds(app));
}

static void watchdog(void) {
    printf("the launch and hang budgets (5 s each), a callback advancing the clock:\n");
    lc_delegate_t delegate = {.struct_size = sizeof delegate, .did_finish_launching = slow_launch};
    app = make_app_with(LC_WATCHDOG_REPORT, "com.example.slow", &delegate);
    CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
    static double quick = 4.9, slow = 5.5;
    CHECK(lc_app_observe(app, "com.example.quick", NULL, slow_observer, &quick, NULL));
    CHECK(lc_app_observe(app, "com.example.slow", NULL, slow_observer, &slow, NULL));
    lc_source_id timer;
    CHECK(lc_app_add_timer(app, 1, late_timer, NULL, &timer));  // due at 7
    CHECK(lc_app_post(app, "com.example.quick", NULL, NULL));
    CHECK(lc_app_post(app, "com.example.slow", NULL, NULL));
    printf(" posts returned at %.3f\n", lc_app_clock_seconds(app));
    advance(0);
    lc_app_destroy(app);
}

// Timers added out of order, two with one deadline; the first adds a due timer and posts work.
static void said(void *ctx) { printf("  %s at %.3f\n", (const char *)ctx, lc_app_clock_seconds(app)); }

static void first(void *ctx) {
    said(ctx);
    lc_source_id source;
    CHECK(lc_app_add_timer(app, 0, said, "  a 0 s timer added by the 1 s timer", &source));
    CHECK(lc_app_perform_async(app, said, "  work posted by the 1 s timer"));
}

static void timers(void) {
    printf("timers falling due in one advance:\n");
    app = make_app(LC_WATCHDOG_REPORT);
    CHECK(lc_app_set_trace(app, NULL, NULL));
    lc_source_id source;
    CHECK(lc_app_add_timer(app, 3, said, "timer 3 s", &source));
    CHECK(lc_app_add_timer(app, 2, said, "timer 2 s (added first)", &source));
    CHECK(lc_app_add_timer(app, 1, first, "timer 1 s", &source));
    CHECK(lc_app_add_timer(app, 2, said, "timer 2 s (added second)", &source));
    CHECK(lc_app_add_timer(app, 5.5, said, "timer 5.5 s", &source));
    advance(5);
    printf(" next timeout %d ms\n", lc_app_next_timeout_ms(app));
    advance(0.5);
    printf(" next timeout %d ms\n", lc_app_next_timeout_ms(app));
    lc_app_destroy(app);
}

static void refusal(lc_app *a, double seconds) {
    lc_status s = lc_app_advance(a, seconds);
    printf(" advance %g: %s: %s\n", seconds, lc_status_name(s), lc_last_error_message());
}

static void refusals(void) {
    printf("refusals:\n");
    app = make_app(LC_WATCHDOG_REPORT);
    refusal(app, NAN);
    refusal(app, -1);
    refusal(app, INFINITY);
    refusal(app, 1e300);
    refusal(app, 9223372037);
    printf(" clock %.3f\n", lc_app_clock_seconds(app));
    CHECK(lc_app_advance(app, 9223372036));
    printf(" the largest advance: clock %.0f\n", lc_app_clock_seconds(app));
    lc_app_destroy(app);
    lc_app *monotonic;
    CHECK(lc_app_create(NULL, &monotonic));
    refusal(monotonic, 1);
    lc_app_destroy(monotonic);
    lc_config_t config;
    lc_config_init(&config);
    printf(" default clock %d\n", (int)config.clock);
    config.clock = (lc_clock)2;
    lc_status s = lc_app_create(&config, &monotonic);
    printf(" clock 2: %s: %s\n", lc_status_name(s), lc_last_error_message());
    config.clock = LC_CLOCK_MANUAL;
    config.struct_size = (uint32_t)offsetof(lc_config_t, clock);  // a 1.6 program's struct: monotonic
    CHECK(lc_app_create(&config, &monotonic));
    refusal(monotonic, 1);
    lc_app_destroy(monotonic);
}

static double wall(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(void) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    double start = wall();
    background_task();
    completion_timeout();
    watchdog();
    timers();
    double elapsed = wall() - start;
    refusals();
    printf("about 110 s of virtual time in under 1 s of wall time: %s\n", elapsed < 1 ? "yes" : "no");
    if (elapsed >= 1) printf("  (took %.3f s)\n", elapsed);
    return 0;
}
