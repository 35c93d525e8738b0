// A plugin image exporting all 19 delegate functions of include/lifecycle.h, for FFIDelegateTests.
// Compiled by the test at run time: cc -shared -fPIC -I<repo>/include -o ... ffi_delegate_fixture.c -lpthread
//
// Every delegate function appends one line to a log (read with fixture_log) naming its arguments:
// the app pointer in hex, strings verbatim (or NULL), dictionaries as "dict" or "NULL". A plugin
// cannot link liblifecycle, so dictionary contents are checked on the host side: each dictionary
// argument is handed, during the call, to a hook the test installs (fixture_set_hook). Boolean
// answers are configurable per symbol; completion pointers are called now, twice, never, or from a
// new thread, as fixture_set_completion says.
#define LC_DECLARE_DELEGATE_FUNCTIONS
#include "lifecycle.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef void (*fixture_hook_fn)(const char *symbol, const lc_dict *dict, void *ctx);
typedef void (*completion_fn)(lc_fetch_result result);

enum {
    FIXTURE_COMPLETE_NOW = 0,       // call the completion once, inside the delegate function
    FIXTURE_COMPLETE_TWICE = 1,     // call it twice, inside the delegate function
    FIXTURE_COMPLETE_NEVER = 2,     // keep it (fixture_call_last_completion may call it later)
    FIXTURE_COMPLETE_ON_THREAD = 3, // call it once from a new thread, 20 ms later
};

static pthread_mutex_t fixture_lock = PTHREAD_MUTEX_INITIALIZER;
static char *log_text;
static size_t log_length, log_capacity;
static fixture_hook_fn hook;
static void *hook_ctx;
static int completion_mode;
static uint32_t completion_result;
static completion_fn last_completion;
static pthread_t threads[256];
static size_t thread_count;

static struct {
    const char *symbol;
    bool value;
} answers[] = {
    {"application_willFinishLaunchingWithOptions", true},
    {"application_didFinishLaunchingWithOptions", true},
    {"application_openURL", true},
    {"application_openURL_options", true},
    {"application_shouldSaveApplicationState", true},
    {"application_shouldRestoreApplicationState", true},
};

static void log_line(const char *format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    int n = vsnprintf(line, sizeof line - 1, format, args);
    va_end(args);
    if (n < 0) return;
    if ((size_t)n > sizeof line - 2) n = (int)(sizeof line - 2);
    line[n++] = '\n';
    line[n] = 0;
    pthread_mutex_lock(&fixture_lock);
    if (log_length + (size_t)n + 1 > log_capacity) {
        log_capacity = (log_length + (size_t)n + 1) * 2;
        log_text = realloc(log_text, log_capacity);
    }
    memcpy(log_text + log_length, line, (size_t)n + 1);
    log_length += (size_t)n;
    pthread_mutex_unlock(&fixture_lock);
}

static bool answer(const char *symbol) {
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++)
        if (strcmp(answers[i].symbol, symbol) == 0) return answers[i].value;
    return true;
}

static const char *dict_arg(const char *symbol, const lc_dict *dict) {
    if (hook) hook(symbol, dict, hook_ctx);
    return dict ? "dict" : "NULL";
}

static void *complete_later(void *arg) {
    completion_fn completion = (completion_fn)(uintptr_t)arg;
    usleep(20000);
    log_line("thread calls completion %" PRIu32, completion_result);
    completion(completion_result);
    return NULL;
}

static void handle_completion(completion_fn completion) {
    pthread_mutex_lock(&fixture_lock);
    last_completion = completion;
    pthread_mutex_unlock(&fixture_lock);
    if (!completion) return;
    switch (completion_mode) {
    case FIXTURE_COMPLETE_NOW:
        completion(completion_result);
        break;
    case FIXTURE_COMPLETE_TWICE:
        completion(completion_result);
        completion(completion_result);
        break;
    case FIXTURE_COMPLETE_ON_THREAD:
        if (thread_count < sizeof threads / sizeof threads[0] &&
            pthread_create(&threads[thread_count], NULL, complete_later, (void *)(uintptr_t)completion) == 0)
            thread_count++;
        break;
    default:
        break;
    }
}

// ---- Control, for the test

LC_EXPORT char *fixture_log(void) { // a malloc'd copy; the caller frees it
    pthread_mutex_lock(&fixture_lock);
    char *copy = strdup(log_text ? log_text : "");
    pthread_mutex_unlock(&fixture_lock);
    return copy;
}

LC_EXPORT void fixture_reset(void) {
    pthread_mutex_lock(&fixture_lock);
    log_length = 0;
    if (log_text) log_text[0] = 0;
    hook = NULL;
    hook_ctx = NULL;
    completion_mode = FIXTURE_COMPLETE_NOW;
    completion_result = LC_FETCH_NEW_DATA;
    last_completion = NULL;
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) answers[i].value = true;
    pthread_mutex_unlock(&fixture_lock);
}

LC_EXPORT void fixture_set_hook(fixture_hook_fn fn, void *ctx) {
    hook = fn;
    hook_ctx = ctx;
}

LC_EXPORT int fixture_set_return(const char *symbol, bool value) {
    for (size_t i = 0; i < sizeof answers / sizeof answers[0]; i++) {
        if (strcmp(answers[i].symbol, symbol) == 0) {
            answers[i].value = value;
            return 0;
        }
    }
    return -1;
}

LC_EXPORT void fixture_set_completion(int mode, uint32_t result) {
    completion_mode = mode;
    completion_result = result;
}

LC_EXPORT void fixture_call_last_completion(uint32_t result) {
    pthread_mutex_lock(&fixture_lock);
    completion_fn completion = last_completion;
    pthread_mutex_unlock(&fixture_lock);
    if (completion) completion(result);
}

LC_EXPORT completion_fn fixture_last_completion(void) {
    pthread_mutex_lock(&fixture_lock);
    completion_fn completion = last_completion;
    pthread_mutex_unlock(&fixture_lock);
    return completion;
}

LC_EXPORT void fixture_join_threads(void) {
    for (size_t i = 0; i < thread_count; i++) pthread_join(threads[i], NULL);
    thread_count = 0;
}

// ---- The 19 delegate functions

#define APP "app=%" PRIxPTR
#define P(app) ((uintptr_t)(app))

bool application_willFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) {
    const char *symbol = __func__;
    bool result = answer(symbol);
    log_line("%s " APP " options=%s -> %d", symbol, P(app), dict_arg(symbol, options), result);
    return result;
}

bool application_didFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) {
    const char *symbol = __func__;
    bool result = answer(symbol);
    log_line("%s " APP " options=%s -> %d", symbol, P(app), dict_arg(symbol, options), result);
    return result;
}

#define NOTIFY(name) \
    void name(lc_app *app) { log_line("%s " APP, __func__, P(app)); }
NOTIFY(applicationDidBecomeActive)
NOTIFY(applicationWillResignActive)
NOTIFY(applicationDidEnterBackground)
NOTIFY(applicationWillEnterForeground)
NOTIFY(applicationWillTerminate)
NOTIFY(applicationDidReceiveMemoryWarning)
NOTIFY(applicationSignificantTimeChange)
NOTIFY(applicationProtectedDataWillBecomeUnavailable)
NOTIFY(applicationProtectedDataDidBecomeAvailable)

bool application_openURL(lc_app *app, const char *url, const char *source_app, const lc_dict *annotation) {
    const char *symbol = __func__;
    bool result = answer(symbol);
    log_line("%s " APP " url=%s source=%s annotation=%s -> %d", symbol, P(app), url ? url : "NULL",
             source_app ? source_app : "NULL", dict_arg(symbol, annotation), result);
    return result;
}

bool application_openURL_options(lc_app *app, const char *url, const lc_dict *options) {
    const char *symbol = __func__;
    bool result = answer(symbol);
    log_line("%s " APP " url=%s options=%s -> %d", symbol, P(app), url ? url : "NULL", dict_arg(symbol, options), result);
    return result;
}

void application_performFetchWithCompletionHandler(lc_app *app, void (*completion)(lc_fetch_result result)) {
    log_line("%s " APP " completion=%s", __func__, P(app), completion ? "fn" : "NULL");
    handle_completion(completion);
}

void application_didReceiveRemoteNotification_fetchCompletionHandler(lc_app *app, const lc_dict *user_info,
                                                                     void (*completion)(lc_fetch_result result)) {
    const char *symbol = __func__;
    log_line("%s " APP " user_info=%s completion=%s", symbol, P(app), dict_arg(symbol, user_info),
             completion ? "fn" : "NULL");
    handle_completion(completion);
}

void application_didReceiveRemoteNotification(lc_app *app, const lc_dict *user_info) {
    const char *symbol = __func__;
    log_line("%s " APP " user_info=%s", symbol, P(app), dict_arg(symbol, user_info));
}

bool application_shouldSaveApplicationState(lc_app *app, lc_dict *coder) {
    const char *symbol = __func__;
    bool result = answer(symbol);
    log_line("%s " APP " coder=%s -> %d", symbol, P(app), dict_arg(symbol, coder), result);
    return result;
}

bool application_shouldRestoreApplicationState(lc_app *app, const lc_dict *coder) {
    const char *symbol = __func__;
    bool result = answer(symbol);
    log_line("%s " APP " coder=%s -> %d", symbol, P(app), dict_arg(symbol, coder), result);
    return result;
}

void application_willEncodeRestorableStateWithCoder(lc_app *app, lc_dict *coder) {
    const char *symbol = __func__;
    log_line("%s " APP " coder=%s", symbol, P(app), dict_arg(symbol, coder));
}

void application_didDecodeRestorableStateWithCoder(lc_app *app, const lc_dict *coder) {
    const char *symbol = __func__;
    log_line("%s " APP " coder=%s", symbol, P(app), dict_arg(symbol, coder));
}
