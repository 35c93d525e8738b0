#pragma once

// AppLifecycle test kit — tests for plugins, in C.
//
// A harness is one application (lc_app) on a manual clock, with your plugin loaded into it and every
// trace event it makes recorded. A test drives it with actions and clock steps, and states what the
// plugin must have made happen, in order:
//
//     lct_harness *h = NULL;
//     lct_harness_create(NULL, &h);                    // manual clock, default budgets
//     lct_load(h, "./libmine.so");
//     lct_perform(h, LC_ACTION_LAUNCH);
//     lct_perform(h, LC_ACTION_HOME);
//     lct_expect_delegate(h, "applicationDidEnterBackground");
//     lct_expect_notification(h, LC_NAME_DID_ENTER_BACKGROUND);
//     lct_advance(h, 30);                              // 30 s of background time, at once
//     lct_expect_event(h, "background-task", "end", "com.example.mine");
//     lct_expect_state(h, LC_STATE_SUSPENDED);
//     lct_harness_destroy(h);
//     return lct_summary("mine");                      // "mine: 8 passed, 0 failed"; 0 or 1
//
// Link: cc test.c $(pkg-config --cflags --libs lifecycle-testkit). The kit is a small library over
// the public C ABI of lifecycle.h (the one engine, liblifecycle.so); it has no engine of its own.
//
// Checks. Every lct_ call below that a test writes is a check, and counts: it passes or fails
// (lct_harness_create counts only when it fails; the accessors do not count). A
// failure prints one report to standard error (unless lct_options_t.quiet) naming the caller's
// file:line (the macros pass __FILE__ and __LINE__), what was expected, and the events recorded around
// it with their times on the clock; the test goes on. lct_summary prints the counts and gives an exit
// status, so a plain `main` or any C test runner can use the kit.
//
// Expectations are ordered. The harness keeps a cursor in the recorded events: an expectation looks
// for its event after the cursor, skipping any other events, and moves the cursor to it; found
// nowhere after the cursor, it fails and the cursor stays. Matching reads the typed fields of
// lc_trace_event_t (kind, name, observer, state), never a rendering of them.
//
// The clock. By default the application runs on the manual clock (lc_config_t.clock =
// LC_CLOCK_MANUAL): no timer, budget or deadline falls due until lct_advance moves the clock, and
// then each runs in deadline order at its own deadline. A test of 30 s of background time takes no
// real time, and gives the same trace every run.
//
// Threads: a harness belongs to the thread that created it (the application's main thread); every
// function on it is [main-thread] in lifecycle.h's sense. lct_totals and lct_summary are [thread-safe].

#include "lifecycle.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LCT_VERSION_MAJOR 1
#define LCT_VERSION_MINOR 0

/// A harness: an application, its recorded events, the cursor and the counts.
typedef struct lct_harness lct_harness;

/// How lct_harness_create makes the harness. Zero fields take the defaults; a shorter (older) struct's
/// missing tail counts as zero.
typedef struct lct_options {
    uint32_t struct_size;       // sizeof(lct_options_t); at least 4
    uint32_t real_clock;        // 0 (the default): the manual clock; 1: the monotonic clock (lct_advance
                                // then runs the loop for that long, in real time)
    const lc_config_t *config;  // NULL: lc_config_init's defaults; else read during the call (budgets,
                                // background modes, watchdog policy, …). Its `clock` is not read: real_clock decides.
    uint32_t quiet;             // 1: failures are counted and kept (lct_last_failure) but not printed
} lct_options_t;

/// Creates a harness: an application on the calling thread (which becomes its main thread), with the
/// trace recorded from the start. `*out` is owned by the caller (lct_harness_destroy). Errors:
/// LC_ERR_INVALID_ARGUMENT (NULL out, struct_size below 4, real_clock or quiet other than 0 or 1, a
/// config lc_app_create refuses), LC_ERR_SYSTEM (out of memory); nothing is created. A failure counts as
/// a failed check in the process totals and is reported like one (to standard error unless quiet, and
/// in lct_create_failure), naming the field: "FILE:LINE: lct_harness_create: options->real_clock is 2; 0 (the
/// manual clock) or 1 (the monotonic clock)". A success is not counted.
/// [thread-safe: the caller's thread becomes the main thread]
#define lct_harness_create(options, out) lct_harness_create_at((options), (out), __FILE__, __LINE__)
LC_EXPORT lc_status lct_harness_create_at(const lct_options_t *options, lct_harness **out, const char *file, int line);
/// The report of the calling thread's last failed lct_harness_create ("" if none). Owned by the
/// library, valid until the next failed lct_harness_create on this thread. [thread-safe]
LC_EXPORT const char *lct_create_failure(void);
/// Destroys the application (its plugins' deinit run) and the harness. NULL is ignored. The counts
/// stay in the process totals (lct_summary). [main-thread]
LC_EXPORT void lct_harness_destroy(lct_harness *harness);
/// The harness's application, for any lc_app_* call the kit does not wrap (its events are recorded
/// like the others'). Owned by the harness; NULL for NULL. [main-thread]
LC_EXPORT lc_app *lct_app(lct_harness *harness);

// ---------------------------------------------------------------------------------------------
// Driving. Each is a check (fails when the call fails, the report giving the lc_status and
// lc_last_error_message()) and returns the lc_status. After an action or a clock step, the work
// already due (posts, lc_app_perform_async, zero-delay timers) is run before the call returns.
// A NULL harness returns LC_ERR_INVALID_ARGUMENT and counts nothing. [main-thread]

/// Loads the plugin at `path` (made absolute against the working directory) in the harness's process.
#define lct_load(h, path) lct_load_at((h), (path), __FILE__, __LINE__)
LC_EXPORT lc_status lct_load_at(lct_harness *harness, const char *path, const char *file, int line);
/// Loads the plugin at `path` isolated, in a process of its own (lc_app_load_plugin_with_options with
/// LC_LOAD_ISOLATED; the plugin runner found as lifecycle.h's "Isolated plugins" says: $LC_PLUGIN_RUNNER,
/// the installed one, or lifecycle-plugin-runner beside the library in a build folder). On the manual clock the
/// application waits for an isolated plugin's answers before each action returns and before each move
/// of the clock, so the events are the in-process ones, at the same clock times.
#define lct_load_isolated(h, path) lct_load_isolated_at((h), (path), __FILE__, __LINE__)
LC_EXPORT lc_status lct_load_isolated_at(lct_harness *harness, const char *path, const char *file, int line);
/// Observes the notification `name` for the test: each delivery is recorded as an event of kind
/// "posted" (name: the canonical name; detail: the userInfo's JSON, or NULL), in order among the
/// trace's events. The trace has the engine's own notifications (kind "notification"); a plugin's posts
/// (custom names, lc_app_post) are not in it, so a test that expects one observes its name first.
#define lct_observe(h, name) lct_observe_at((h), (name), __FILE__, __LINE__)
LC_EXPORT lc_status lct_observe_at(lct_harness *harness, const char *name, const char *file, int line);
/// Performs an action with no arguments (lc_app_perform_simple).
#define lct_perform(h, kind) lct_perform_at((h), (kind), __FILE__, __LINE__)
LC_EXPORT lc_status lct_perform_at(lct_harness *harness, lc_action_kind kind, const char *file, int line);
/// Performs an action with its arguments (lc_app_perform).
#define lct_perform_action(h, action) lct_perform_action_at((h), (action), __FILE__, __LINE__)
LC_EXPORT lc_status lct_perform_action_at(lct_harness *harness, const lc_action_t *action, const char *file, int line);
/// Moves the clock forward by `seconds` (finite, >= 0): every timer, budget and deadline that falls
/// due runs, in deadline order, at its own deadline (lc_app_advance). With real_clock, runs the loop
/// for that long instead (lc_app_run_for).
#define lct_advance(h, seconds) lct_advance_at((h), (seconds), __FILE__, __LINE__)
LC_EXPORT lc_status lct_advance_at(lct_harness *harness, double seconds, const char *file, int line);

// ---------------------------------------------------------------------------------------------
// Expectations. Each is a check and returns whether it passed (false, counting nothing, for a NULL
// harness). [main-thread]

/// The next delegate call of the selector, by any delegate: its Objective-C selector as traced
/// ("applicationDidEnterBackground:", "application:didFinishLaunchingWithOptions:") or the name of the
/// delegate function in lifecycle.h ("applicationDidEnterBackground",
/// "application_didFinishLaunchingWithOptions").
#define lct_expect_delegate(h, selector) lct_expect_delegate_at((h), (selector), __FILE__, __LINE__)
LC_EXPORT bool lct_expect_delegate_at(lct_harness *harness, const char *selector, const char *file, int line);
/// The next delivery of the notification `name` (LC_NAME_…, or a custom name's lc_name_intern id): an
/// event of kind "notification" (the engine's), or "posted" (a name lct_observe observes).
#define lct_expect_notification(h, name) lct_expect_notification_at((h), (name), __FILE__, __LINE__)
LC_EXPORT bool lct_expect_notification_at(lct_harness *harness, lc_name name, const char *file, int line);
/// The next delivery of the notification spelled `name` (a standard short name, a UIKit alias, or a
/// custom dotted name: lc_name_intern's rules; a name it refuses fails the check with its message).
#define lct_expect_notification_named(h, name) lct_expect_notification_named_at((h), (name), __FILE__, __LINE__)
LC_EXPORT bool lct_expect_notification_named_at(lct_harness *harness, const char *name, const char *file, int line);
/// The next change of the application's state to `state` (a `state` event whose state field it is).
#define lct_expect_state(h, state) lct_expect_state_at((h), (state), __FILE__, __LINE__)
LC_EXPORT bool lct_expect_state_at(lct_harness *harness, lc_state state, const char *file, int line);
/// The next event of `kind` ("background-task", "completion", "watchdog", … : lifecycle.md, "Reading
/// a trace") named `name`, whose observer is `observer` (a delegate or plugin id); NULL `name` or
/// `observer`: any.
#define lct_expect_event(h, kind, name, observer) lct_expect_event_at((h), (kind), (name), (observer), __FILE__, __LINE__)
LC_EXPORT bool lct_expect_event_at(lct_harness *harness, const char *kind, const char *name, const char *observer,
                                   const char *file, int line);
/// No event after the cursor but actions (the test's own inputs): everything the plugin and the engine
/// did has been expected.
#define lct_expect_nothing_more(h) lct_expect_nothing_more_at((h), __FILE__, __LINE__)
LC_EXPORT bool lct_expect_nothing_more_at(lct_harness *harness, const char *file, int line);

/// Any condition of the test's own (a value an observer of the test saw, a plugin's output): passes
/// when `condition` is true; the report quotes its source text.
#define lct_expect_true(h, condition) lct_expect_true_at((h), (condition), #condition, __FILE__, __LINE__)
LC_EXPORT bool lct_expect_true_at(lct_harness *harness, bool condition, const char *text, const char *file, int line);

// ---------------------------------------------------------------------------------------------
// Counts and reports

/// The checks this harness counted, and how many failed. [main-thread]
LC_EXPORT size_t lct_checks(const lct_harness *harness);
LC_EXPORT size_t lct_failures(const lct_harness *harness);
/// The report of the harness's last failure ("" if none), as printed. Owned by the harness, valid
/// until its next failure or its destruction. [main-thread]
LC_EXPORT const char *lct_last_failure(const lct_harness *harness);
/// The events recorded so far, in order. Owned by the harness; an event and its strings stay valid
/// until the harness is destroyed. Its `time` is the clock's (lc_app_clock_seconds when it was
/// recorded). `index` from 0; NULL past the end. [main-thread]
LC_EXPORT size_t lct_event_count(const lct_harness *harness);
LC_EXPORT const lc_trace_event_t *lct_event_at(const lct_harness *harness, size_t index);

/// Every harness's checks and failures in this process so far. [thread-safe]
LC_EXPORT void lct_totals(size_t *checks, size_t *failures);
/// Prints "NAME: N passed, M failed" (every harness of the process so far) to standard output and
/// returns the exit status for main: 0 when nothing failed (and something was checked), else 1.
/// `name` may be NULL ("lifecycle-testkit"). [thread-safe]
LC_EXPORT int lct_summary(const char *name);

#ifdef __cplusplus
}
#endif
