// StateKeeper: preserves a counter through the state archive and guards a "protected" file.
//
// * Counts how often the application became active; the count is saved in its archive
//   (application_shouldSaveApplicationState / ..._willEncodeRestorableStateWithCoder) and read back
//   at the next launch (..._shouldRestoreApplicationState / ..._didDecodeRestorableStateWithCoder).
// * Keeps a file open, as an app keeps a file with complete data protection; it closes it on
//   protectedDataWillBecomeUnavailable and reopens it on protectedDataDidBecomeAvailable.
//   The file is $LC_STATEKEEPER_FILE, or /tmp/statekeeper-protected.txt.
//
// Build on its own:  cc -shared -fPIC -I include Plugins/StateKeeper/state_keeper.c -o libStateKeeper.so

#define LC_DECLARE_DELEGATE_FUNCTIONS
#include "lifecycle.h"

#include <stdio.h>
#include <stdlib.h>

static const lc_host_api_t *host;
static int64_t counter;
static FILE *protected_file;

static const char *protected_path(void) {
    const char *path = getenv("LC_STATEKEEPER_FILE");
    return path && *path ? path : "/tmp/statekeeper-protected.txt";
}

static void open_protected(void) {
    if (!protected_file) protected_file = fopen(protected_path(), "a");
    printf("statekeeper: protected file %s\n", protected_file ? "open" : "could not be opened");
    fflush(stdout);
}

static void close_protected(void) {
    if (protected_file) {
        fclose(protected_file);
        protected_file = NULL;
    }
    printf("statekeeper: protected file closed\n");
    fflush(stdout);
}

static void on_unavailable(const lc_notification_t *note, void *ctx) { (void)note, (void)ctx; close_protected(); }
static void on_available(const lc_notification_t *note, void *ctx) { (void)note, (void)ctx; open_protected(); }

void applicationDidBecomeActive(lc_app *app) {
    (void)app;
    counter++;
    if (protected_file) {
        fprintf(protected_file, "active %lld\n", (long long)counter);
        fflush(protected_file);
    }
    printf("statekeeper: active %lld times\n", (long long)counter);
    fflush(stdout);
}

bool application_shouldSaveApplicationState(lc_app *app, lc_dict *coder) {
    (void)app;
    host->dict->set_int(coder, "version", 1);
    return true;
}

void application_willEncodeRestorableStateWithCoder(lc_app *app, lc_dict *coder) {
    (void)app;
    host->dict->set_int(coder, "counter", counter);
}

bool application_shouldRestoreApplicationState(lc_app *app, const lc_dict *coder) {
    (void)app;
    int64_t version = 0;
    return host->dict->get_int(coder, "version", &version) == LC_OK && version == 1;
}

void application_didDecodeRestorableStateWithCoder(lc_app *app, const lc_dict *coder) {
    (void)app;
    if (host->dict->get_int(coder, "counter", &counter) == LC_OK) {
        printf("statekeeper: restored counter %lld\n", (long long)counter);
        fflush(stdout);
    }
}

static lc_status keeper_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
    (void)state;
    host = api;
    counter = 0;
    lc_status status = host->observe(plugin, "protectedDataWillBecomeUnavailable", NULL, on_unavailable, NULL, NULL);
    if (status == LC_OK) status = host->observe(plugin, "protectedDataDidBecomeAvailable", NULL, on_available, NULL, NULL);
    if (status != LC_OK) return status;
    open_protected();
    return LC_OK;
}

static void keeper_deinit(void *state) {
    (void)state;
    if (protected_file) fclose(protected_file);
    protected_file = NULL;
}

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof(lc_plugin_descriptor_t),
    .magic = LC_PLUGIN_MAGIC,
    .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = LC_ABI_VERSION_MINOR,
    .id = "org.applifecycle.statekeeper",
    .version = "1.0.0",
    .description = "Preserves a counter across launches; closes its protected file while locked",
    .init = keeper_init,
    .deinit = keeper_deinit,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
