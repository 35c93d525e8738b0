// A plugin reloaded in place by the reload tests (ReloadTests.swift). Built several times:
// -DBUILD='"A"' / '"B"' changes what it writes; -DFAIL_INIT makes its init register an observer and
// then fail, -DHOLD_ON_ENCODE makes it begin a background task while it encodes its state, -DFAIL_IN_HOST only in the host's own process (`lifecycle-host run`: it passes the host's
// scan, which runs it in a `plugin-runner` process, and fails beside the old instance); -DCOUNTER makes it the other plugin, com.example.counter, which only counts.
// Every line goes to the file named by $RELOAD_LOG, one write() each, after the writing process's pid
// (the host scans each file in a process of its own first: its init runs there too).
#define LC_DECLARE_DELEGATE_FUNCTIONS
#include "lifecycle.h"
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef BUILD
#define BUILD "A"
#endif
#ifdef COUNTER
#define PLUGIN_ID "com.example.counter"
#define WHO "counter"
#else
#define PLUGIN_ID "com.example.reloadable"
#define WHO BUILD
#endif

static const lc_host_api_t *host;
static lc_plugin *self;
static long long seen;
static lc_task_id held;
/// The completion handler of a fetch, kept until `com.example.release` (NULL: none pending).
static void (*fetched)(lc_fetch_result);

__attribute__((format(printf, 1, 2))) static void note(const char *format, ...) {
    const char *path = getenv("RELOAD_LOG");
    if (!path) return;
    char line[256];
    int length = snprintf(line, sizeof line, "%d ", (int)getpid());
    va_list args;
    va_start(args, format);
    length += vsnprintf(line + length, sizeof line - (size_t)length, format, args);
    va_end(args);
    int fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
    if (fd < 0) return;
    if (write(fd, line, (size_t)length) < 0) { /* the test sees the line missing */ }
    close(fd);
}

static void tick(const lc_notification_t *n, void *ctx) { (void)n, (void)ctx; seen++; }

__attribute__((unused)) static void hold(const lc_notification_t *n, void *ctx) {
    (void)n, (void)ctx;
    if (!held && host->begin_background_task(self, "hold", NULL, NULL, &held) == LC_OK) note("hold " WHO "\n");
}

__attribute__((unused)) static void release(const lc_notification_t *n, void *ctx) {
    (void)n, (void)ctx;
    if (held && host->end_background_task(self, held) == LC_OK) note("release " WHO "\n");
    held = 0;
    if (fetched) {
        void (*done)(lc_fetch_result) = fetched;
        fetched = NULL;
        note("fetched " WHO "\n");
        done(LC_FETCH_NEW_DATA);
    }
}

/// Whether this process is `lifecycle-host run` (not a scan's or runner's `plugin-runner`).
__attribute__((unused)) static bool in_host_process(void) {
    char command[256] = {0};
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0) return false;
    ssize_t length = read(fd, command, sizeof command - 1);
    close(fd);
    if (length <= 0) return false;
    size_t first = strlen(command);  // argv[0], then argv[1] after its NUL
    return (ssize_t)first + 1 < length && strcmp(command + first + 1, "run") == 0;
}

/// Posts com.example.echoed from inside its own callback (the C ABI test reloads from an observer of it).
__attribute__((unused)) static void echo(const lc_notification_t *n, void *ctx) {
    (void)n, (void)ctx;
    host->post(self, "com.example.echoed", NULL, NULL);
}

static lc_status fixture_init(const lc_host_api_t *h, lc_plugin *plugin, void **state) {
    (void)state;
    host = h;
    self = plugin;
    lc_status status = h->observe(plugin, "com.example.tick", NULL, tick, NULL, NULL);
    if (status != LC_OK) return status;
#if defined(FAIL_INIT) || defined(FAIL_IN_HOST)
#ifdef FAIL_IN_HOST
    if (!in_host_process()) return LC_OK;
#endif
    note("init " WHO " failing\n");
    h->set_error(plugin, "build " BUILD " refuses to start");
    return LC_ERR_PLUGIN_REFUSED;
#else
#ifndef COUNTER
    if ((status = h->observe(plugin, "com.example.hold", NULL, hold, NULL, NULL)) != LC_OK) return status;
    if ((status = h->observe(plugin, "com.example.release", NULL, release, NULL, NULL)) != LC_OK) return status;
    if ((status = h->observe(plugin, "com.example.echo", NULL, echo, NULL, NULL)) != LC_OK) return status;
#endif
    note("init " WHO "\n");
    return LC_OK;
#endif
}

static void fixture_deinit(void *state) {
    (void)state;
    note("deinit " WHO " seen=%lld\n", seen);
}

void applicationWillTerminate(lc_app *app) {
    (void)app;
    note("terminate " WHO " seen=%lld\n", seen);
}

#ifndef COUNTER
void application_performFetchWithCompletionHandler(lc_app *app, void (*done)(lc_fetch_result)) {
    (void)app;
    fetched = done;  // completed at com.example.release
    note("fetch " WHO "\n");
}

bool application_shouldSaveApplicationState(lc_app *app, lc_dict *coder) {
    (void)app, (void)coder;
    note("save " WHO "\n");
    return true;
}

bool application_shouldRestoreApplicationState(lc_app *app, const lc_dict *coder) {
    (void)app;
    const char *build = "";
    host->dict->get_string(coder, "build", &build);
    note("restore? " WHO " from %s\n", build);
    return true;
}

void application_willEncodeRestorableStateWithCoder(lc_app *app, lc_dict *coder) {
    (void)app;
    host->dict->set_int(coder, "seen", seen);
    host->dict->set_string(coder, "build", BUILD);
    note("encode " WHO " seen=%lld\n", seen);
#ifdef HOLD_ON_ENCODE
    lc_task_id task = 0;
    if (host->begin_background_task(self, "encode-hold", NULL, NULL, &task) == LC_OK) note("hold on encode " WHO "\n");
#endif
}

void application_didDecodeRestorableStateWithCoder(lc_app *app, const lc_dict *coder) {
    (void)app;
    int64_t value = -1;
    host->dict->get_int(coder, "seen", &value);
    seen = value;
    note("decode " WHO " seen=%lld\n", seen);
}
#endif

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = LC_ABI_VERSION_MINOR, .id = PLUGIN_ID, .version = "1.0-" WHO, .description = "reload fixture",
    .init = fixture_init, .deinit = fixture_deinit,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
