// A C program that embeds the engine through liblifecycle.so and checks what it observes:
// launch -> Home -> return -> posts from another thread (nested loop via lc_app_fd) -> terminate.
// Prints "ok" and exits 0, or prints what differed and exits 1.
//
//   cc embed_cycle.c $(pkg-config --cflags --libs lifecycle) -lpthread

#include <lifecycle.h>

#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char observed[8192];
static int pings;

static void record(const char *line) {
    strncat(observed, line, sizeof observed - strlen(observed) - 2);
    strcat(observed, "\n");
}

static void recordf(lc_app *app, const char *what) {
    char line[256];
    snprintf(line, sizeof line, "%s (%s)", what, lc_state_name(lc_app_state(app)));
    record(line);
}

#define CHECK(call)                                                                                     \
    do {                                                                                                \
        lc_status s_ = (call);                                                                          \
        if (s_ != LC_OK) {                                                                              \
            printf("%s failed: %s: %s\n", #call, lc_status_name(s_), lc_last_error_message());          \
            return 1;                                                                                   \
        }                                                                                               \
    } while (0)

static void on_note(const lc_notification_t *note, void *ctx) {
    (void)ctx;
    char line[256];
    const char *source = NULL;
    if (note->user_info && lc_dict_get_string(note->user_info, "source", &source) == LC_OK) {
        snprintf(line, sizeof line, "note %s source=%s", note->name, source);
    } else {
        snprintf(line, sizeof line, "note %s", note->name);
    }
    record(line);
}

static void on_ping(const lc_notification_t *note, void *ctx) {
    (void)note, (void)ctx;
    pings++;
    record("note com.example.ping");
}

static bool will_finish(lc_app *app, const lc_dict *options, void *ctx) {
    (void)options, (void)ctx;
    recordf(app, "delegate willFinishLaunching");
    return true;
}
static bool did_finish(lc_app *app, const lc_dict *options, void *ctx) {
    (void)ctx;
    const char *source = NULL;
    lc_dict_get_string(options, "source", &source);
    char what[128];
    snprintf(what, sizeof what, "delegate didFinishLaunching source=%s", source ? source : "?");
    recordf(app, what);
    return true;
}
static void did_become_active(lc_app *app, void *ctx) { (void)ctx, recordf(app, "delegate didBecomeActive"); }
static void will_resign_active(lc_app *app, void *ctx) { (void)ctx, recordf(app, "delegate willResignActive"); }
static void did_enter_background(lc_app *app, void *ctx) { (void)ctx, recordf(app, "delegate didEnterBackground"); }
static void will_enter_foreground(lc_app *app, void *ctx) { (void)ctx, recordf(app, "delegate willEnterForeground"); }
static void will_terminate(lc_app *app, void *ctx) { (void)ctx, recordf(app, "delegate willTerminate"); }

static void *poster(void *arg) {
    lc_app *app = arg;
    for (int i = 0; i < 3; i++) lc_app_post(app, "com.example.ping", NULL, NULL);
    return NULL;
}

int main(void) {
    lc_config_t config;
    lc_config_init(&config);
    lc_app *app = NULL;
    CHECK(lc_app_create(&config, &app));

    lc_delegate_t delegate = {
        .struct_size = sizeof delegate,
        .will_finish_launching = will_finish,
        .did_finish_launching = did_finish,
        .did_become_active = did_become_active,
        .will_resign_active = will_resign_active,
        .did_enter_background = did_enter_background,
        .will_enter_foreground = will_enter_foreground,
        .will_terminate = will_terminate,
    };
    CHECK(lc_app_add_delegate(app, "c.embedder", &delegate));
    const char *names[] = {"didFinishLaunching", "didBecomeActive", "willResignActive",
                           "didEnterBackground", "UIApplicationWillEnterForegroundNotification", "willTerminate"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) CHECK(lc_app_observe(app, names[i], NULL, on_note, NULL, NULL));
    CHECK(lc_app_observe(app, "com.example.ping", NULL, on_ping, NULL, NULL));

    lc_dict *options = lc_dict_create();
    CHECK(lc_dict_set_string(options, "source", "c"));
    lc_action_t launch = {.struct_size = sizeof launch, .kind = LC_ACTION_LAUNCH, .options = options};
    CHECK(lc_app_perform(app, &launch));
    lc_dict_destroy(options);
    if (lc_app_state(app) != LC_STATE_ACTIVE) return printf("not active after launch\n"), 1;

    CHECK(lc_app_perform_simple(app, LC_ACTION_HOME));
    if (lc_app_state(app) != LC_STATE_SUSPENDED) return printf("not suspended after home\n"), 1;
    CHECK(lc_app_perform_simple(app, LC_ACTION_FOREGROUND));

    // Posts from another thread arrive on this thread when it dispatches: nest the loop in poll().
    pthread_t thread;
    pthread_create(&thread, NULL, poster, app);
    pthread_join(thread, NULL);
    struct pollfd pfd = {.fd = lc_app_fd(app), .events = POLLIN};
    for (int round = 0; pings < 3 && round < 100; round++) {
        poll(&pfd, 1, 100);
        if (lc_app_dispatch_pending(app) < 0) return printf("dispatch failed: %s\n", lc_last_error_message()), 1;
    }

    CHECK(lc_app_perform_simple(app, LC_ACTION_TERMINATE));

    // Errors: a code plus a sentence that names the action and the state; NULLs are refused.
    lc_status status = lc_app_perform_simple(app, LC_ACTION_HOME);
    const char *expected_error =
        "action 'home' is not allowed while the application is not-running: only a foreground application can be switched away from";
    if (status != LC_ERR_ILLEGAL_ACTION || strcmp(lc_last_error_message(), expected_error) != 0) {
        return printf("wrong error: %s: %s\n", lc_status_name(status), lc_last_error_message()), 1;
    }
    if (lc_app_perform(NULL, &launch) != LC_ERR_INVALID_ARGUMENT) return printf("NULL app accepted\n"), 1;
    if (lc_app_observe(app, "didEnterBackgrond", NULL, on_note, NULL, NULL) != LC_ERR_UNKNOWN_NAME) {
        return printf("misspelt name accepted\n"), 1;
    }

    const char *expected =
        "delegate willFinishLaunching (inactive)\n"
        "delegate didFinishLaunching source=c (inactive)\n"
        "note didFinishLaunching source=c\n"
        "delegate didBecomeActive (active)\n"
        "note didBecomeActive\n"
        "delegate willResignActive (active)\n"
        "note willResignActive\n"
        "delegate didEnterBackground (background)\n"
        "note didEnterBackground\n"
        "note willEnterForeground\n"
        "delegate willEnterForeground (background)\n"
        "delegate didBecomeActive (active)\n"
        "note didBecomeActive\n"
        "note com.example.ping\n"
        "note com.example.ping\n"
        "note com.example.ping\n"
        "delegate willResignActive (active)\n"
        "note willResignActive\n"
        "delegate didEnterBackground (background)\n" // terminate goes through the background (as on iOS)
        "note didEnterBackground\n"
        "delegate willTerminate (background)\n"
        "note willTerminate\n";
    if (strcmp(observed, expected) != 0) {
        printf("observed:\n%s\nexpected:\n%s", observed, expected);
        return 1;
    }
    lc_app_destroy(app);
    puts("ok");
    return 0;
}
