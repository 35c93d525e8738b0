// sessions_test.c: the Sessions plugin under the test kit (docs/writing-a-plugin.md, "Testing your
// plugin"). A plain main: each test makes its own harness; lct_summary gives the exit status.
//
//   cc sessions_test.c $(pkg-config --cflags --libs lifecycle-testkit) -o sessions_test
//   ./sessions_test "$PWD/libSessions.so"

#include <lifecycle_testkit.h>

#include <stdio.h>

// The "sessions" count of the last org.applifecycle.sessions.started the plugin posted.
static void on_started(const lc_notification_t *note, void *ctx) {
    lc_dict_get_int(note->user_info, "sessions", ctx);
}

// Every activation starts a session: the delegate table's didBecomeActive, then the plugin's post
// (a plugin's own post is not in the trace: lct_observe records it).
static void test_each_activation_starts_a_session(const char *plugin) {
    lct_harness *h = NULL;
    if (lct_harness_create(NULL, &h) != LC_OK) return; // reported, and counted as a failure
    int64_t sessions = 0;
    lc_app_observe(lct_app(h), "org.applifecycle.sessions.started", NULL, on_started, &sessions, NULL);
    lct_observe(h, "org.applifecycle.sessions.started");
    lct_load(h, plugin);
    lct_perform(h, LC_ACTION_LAUNCH);
    lct_expect_delegate(h, "applicationDidBecomeActive");
    lct_expect_notification_named(h, "org.applifecycle.sessions.started");
    lct_perform(h, LC_ACTION_HOME);
    lct_expect_notification(h, LC_NAME_DID_ENTER_BACKGROUND);
    lct_expect_state(h, LC_STATE_SUSPENDED);
    lct_perform(h, LC_ACTION_FOREGROUND);
    lct_expect_delegate(h, "applicationDidBecomeActive");
    lct_expect_notification_named(h, "org.applifecycle.sessions.started"); // posted from inside the delegate call,
    lct_expect_notification(h, LC_NAME_DID_BECOME_ACTIVE);                  // so before the engine's notification
    lct_expect_nothing_more(h);
    lct_expect_true(h, sessions == 2); // the second post's userInfo: {"sessions": 2}
    lct_harness_destroy(h);
}

// A background fetch is completed by the plugin's timer, 0.01 s later on the clock: not before, and
// then the application, which the open fetch held in the background, is suspended.
static void test_a_fetch_completes_on_the_plugins_timer(const char *plugin) {
    lc_config_t config;
    lc_config_init(&config);
    config.background_modes = LC_BACKGROUND_FETCH;
    lct_options_t options = {.struct_size = sizeof options, .config = &config};
    lct_harness *h = NULL;
    if (lct_harness_create(&options, &h) != LC_OK) return;
    lct_load(h, plugin);
    lct_perform(h, LC_ACTION_FETCH); // not running: launched into the background for it
    lct_expect_delegate(h, "application_performFetchWithCompletionHandler");
    lct_advance(h, 0.005);
    lct_expect_nothing_more(h); // half-way to the timer: still open, still in the background
    lct_advance(h, 0.005);
    lct_expect_event(h, "completion", "application:performFetchWithCompletionHandler:", "org.applifecycle.sessions");
    lct_expect_state(h, LC_STATE_SUSPENDED);
    lct_expect_nothing_more(h);
    lct_harness_destroy(h);
}

int main(int argc, char **argv) {
    if (argc != 2) return fprintf(stderr, "usage: sessions_test /absolute/path/to/libSessions.so\n"), 2;
    test_each_activation_starts_a_session(argv[1]);
    test_a_fetch_completes_on_the_plugins_timer(argv[1]);
    return lct_summary("sessions_test");
}
