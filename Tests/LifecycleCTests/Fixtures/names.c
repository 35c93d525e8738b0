// ABI 1.1 interned names through liblifecycle.so: lc_name_intern, lc_name_string,
// lc_app_observe_name, lc_app_post_name (main thread and 4 posting threads). Prints what it saw; the
// test compares the output line for line.
//
//   cc -Wall -Werror names.c -I include -L <libdir> -llifecycle -Wl,-rpath,<libdir> -lpthread

#include <lifecycle.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static lc_app *app;

/// Prints a refused call: its status and the last error message.
static void refused(const char *what, lc_status status) {
    printf("%s -> %s: %s\n", what, lc_status_name(status), lc_last_error_message());
}

/// The dictionary being posted on the main thread: observers there get this very one, not a copy.
static const lc_dict *posted;

static void on_note(const lc_notification_t *note, void *ctx) {
    const char *value = NULL;
    if (note->user_info) lc_dict_get_string(note->user_info, "v", &value);
    const char *spelling = lc_name_string(note->name_id);
    printf("  %s got %s%s%s%s%s\n", (const char *)ctx, note->name,
           spelling && strcmp(spelling, note->name) == 0 ? "" : " (name_id does not match)", value ? " v=" : "", value ? value : "",
           note->user_info && note->user_info == posted ? " (the poster's dict)" : "");
}

// MARK: 4 posting threads

enum { THREADS = 4, POSTS = 2000 };
static lc_name threaded;
static long next_seq[THREADS];
static long delivered, disorder;

static void on_threaded(const lc_notification_t *note, void *ctx) {
    (void)ctx;
    int t = (int)(uintptr_t)note->sender - 1;
    int64_t seq = -1;
    if (t < 0 || t >= THREADS || !note->user_info || lc_dict_get_int(note->user_info, "seq", &seq) != LC_OK) {
        disorder++;
        return;
    }
    if (seq != next_seq[t]) disorder++;
    next_seq[t] = seq + 1;
    delivered++;
}

static lc_status thread_observe_status, thread_unknown_status;

static void *poster(void *arg) {
    int t = (int)(uintptr_t)arg;
    for (int64_t i = 0; i < POSTS; i++) {
        lc_dict *info = lc_dict_create();
        lc_dict_set_int(info, "seq", i);
        // Plain id posts, every fourth one by string: both keep this thread's order.
        lc_status s = i % 4 == 3 ? lc_app_post(app, "com.example.names.threaded", (const void *)(uintptr_t)(t + 1), info)
                                 : lc_app_post_name(app, threaded, (const void *)(uintptr_t)(t + 1), info);
        lc_dict_destroy(info);
        if (s != LC_OK) return (void *)1;
    }
    if (t == 0) {
        thread_observe_status = lc_app_observe_name(app, threaded, NULL, on_threaded, NULL, NULL);
        thread_unknown_status = lc_app_post_name(app, 0x7fffffff, NULL, NULL);
    }
    return NULL;
}

int main(void) {
    // MARK: Interning
    lc_name name = 0, alias = 0, custom = 0, again = 0;
    CHECK(lc_name_intern("didEnterBackground", &name));
    CHECK(lc_name_intern("UIApplicationDidEnterBackgroundNotification", &alias));
    printf("didEnterBackground %u, alias %u, constant %d\n", name, alias, LC_NAME_DID_ENTER_BACKGROUND);
    CHECK(lc_name_intern("com.example.names.a", &custom));
    CHECK(lc_name_intern("com.example.names.a", &again));
    printf("custom above the standard ids: %s, interned once: %s\n", custom > LC_NAME_UBIQUITY_IDENTITY_DID_CHANGE ? "yes" : "no",
           custom == again ? "yes" : "no");
    printf("strings: '%s' '%s' '%s' %s %s\n", lc_name_string(alias), lc_name_string(custom),
           lc_name_string(LC_NAME_UBIQUITY_IDENTITY_DID_CHANGE), lc_name_string(0) ? "?" : "NULL",
           lc_name_string(0xffffffffu) ? "?" : "NULL");
    int roundtrips = 0;
    for (lc_name id = 1; id <= LC_NAME_UBIQUITY_IDENTITY_DID_CHANGE; id++) {
        lc_name back = 0;
        if (lc_name_intern(lc_name_string(id), &back) == LC_OK && back == id) roundtrips++;
    }
    printf("standard names that round-trip: %d\n", roundtrips);
    lc_name untouched = 77;
    refused("intern didEnterBackgrond", lc_name_intern("didEnterBackgrond", &untouched));
    refused("intern UIApplicationDidBecomeActiveNotificaton", lc_name_intern("UIApplicationDidBecomeActiveNotificaton", &untouched));
    refused("intern ''", lc_name_intern("", &untouched));
    refused("intern 'com.example.has space'", lc_name_intern("com.example.has space", &untouched));
    refused("intern '\\xff.x'", lc_name_intern("\xff.x", &untouched));
    refused("intern NULL", lc_name_intern(NULL, &untouched));
    refused("intern out NULL", lc_name_intern("didBecomeActive", NULL));
    printf("out untouched on error: %u\n", untouched);

    // MARK: Main thread
    CHECK(lc_app_create(NULL, &app));
    CHECK(lc_app_perform_simple(app, LC_ACTION_LAUNCH));
    lc_name b;
    CHECK(lc_name_intern("com.example.names.b", &b));
    lc_observer_token first, second;
    static int sender;
    CHECK(lc_app_observe_name(app, custom, NULL, on_note, "first", &first));
    CHECK(lc_app_observe(app, "com.example.names.a", NULL, on_note, "second", &second));
    CHECK(lc_app_observe_name(app, b, &sender, on_note, "filtered", NULL));
    CHECK(lc_app_observe_name(app, custom, NULL, on_note, "third", NULL));
    printf("post_name a\n");
    CHECK(lc_app_post_name(app, custom, NULL, NULL));
    printf("post a (string)\n");
    CHECK(lc_app_post(app, "com.example.names.a", NULL, NULL));
    printf("post_name b from the sender, with user_info\n");
    lc_dict *info = lc_dict_create();
    CHECK(lc_dict_set_string(info, "v", "hello"));
    posted = info;
    CHECK(lc_app_post_name(app, b, &sender, info));
    posted = NULL;
    lc_dict_destroy(info);
    printf("post_name b from another sender\n");
    CHECK(lc_app_post_name(app, b, NULL, NULL));
    CHECK(lc_app_remove_observer(app, first));
    printf("post_name a after removing first\n");
    CHECK(lc_app_post_name(app, custom, NULL, NULL));
    CHECK(lc_app_observe_name(app, LC_NAME_DID_RECEIVE_MEMORY_WARNING, NULL, on_note, "standard", NULL));
    printf("memory warning\n");
    CHECK(lc_app_perform_simple(app, LC_ACTION_MEMORY_WARNING));

    // MARK: Unknown ids and bad arguments
    refused("post_name 0", lc_app_post_name(app, 0, NULL, NULL));
    refused("post_name 4000000000", lc_app_post_name(app, 4000000000u, NULL, NULL));
    refused("observe_name 123456", lc_app_observe_name(app, 123456, NULL, on_note, "x", NULL));
    refused("observe_name fn NULL", lc_app_observe_name(app, custom, NULL, NULL, NULL, NULL));
    refused("post_name app NULL", lc_app_post_name(NULL, custom, NULL, NULL));
    refused("observe_name app NULL", lc_app_observe_name(NULL, custom, NULL, on_note, "x", NULL));

    // MARK: 4 threads
    CHECK(lc_name_intern("com.example.names.threaded", &threaded));
    CHECK(lc_app_observe_name(app, threaded, NULL, on_threaded, NULL, NULL));
    pthread_t threads[THREADS];
    for (int t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, poster, (void *)(uintptr_t)t);
    int failed = 0;
    for (int t = 0; t < THREADS; t++) {
        void *result;
        pthread_join(threads[t], &result);
        failed += result != NULL;
    }
    for (int i = 0; i < 500 && delivered + disorder < THREADS * POSTS; i++) CHECK(lc_app_run_for(app, 0.01));
    printf("threads: %d failed posts, %ld delivered, %ld out of order, last seqs %ld %ld %ld %ld\n", failed, delivered, disorder,
           next_seq[0] - 1, next_seq[1] - 1, next_seq[2] - 1, next_seq[3] - 1);
    printf("observe_name from a thread: %s; unknown id from a thread: %s\n", lc_status_name(thread_observe_status),
           lc_status_name(thread_unknown_status));

    lc_app_destroy(app);
    return 0;
}
