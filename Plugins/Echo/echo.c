// Echo: observes every standard notification and prints it, one line each, to standard output.
//
// Build on its own:  cc -shared -fPIC -I include Plugins/Echo/echo.c -o libEcho.so

#include "lifecycle.h"

#include <stdio.h>

static const lc_host_api_t *host;

static const char *const names[] = {
    "didFinishLaunching", "didBecomeActive", "willResignActive", "didEnterBackground",
    "willEnterForeground", "willTerminate", "didReceiveMemoryWarning", "significantTimeChange",
    "protectedDataWillBecomeUnavailable", "protectedDataDidBecomeAvailable", "currentLocaleDidChange",
    "userDefaultsDidChange", "batteryLevelDidChange", "batteryStateDidChange", "orientationDidChange",
    "proximityStateDidChange", "accessoryDidConnect", "accessoryDidDisconnect", "screenDidConnect",
    "screenDidDisconnect", "screenModeDidChange", "ubiquityIdentityDidChange",
};

// [main-thread] Runs for every notification observed.
static void echo(const lc_notification_t *note, void *ctx) {
    (void)ctx;
    if (note->user_info && host->dict->count(note->user_info) > 0) {
        printf("echo: %s %s\n", note->name, host->dict->json(note->user_info));
    } else {
        printf("echo: %s\n", note->name);
    }
    fflush(stdout);
}

static lc_status echo_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
    (void)state;
    host = api;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        lc_status status = host->observe(plugin, names[i], NULL, echo, NULL, NULL);
        if (status != LC_OK) {
            host->set_error(plugin, "could not observe a standard notification");
            return status;
        }
    }
    return LC_OK;
}

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof(lc_plugin_descriptor_t),
    .magic = LC_PLUGIN_MAGIC,
    .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = LC_ABI_VERSION_MINOR,
    .id = "org.applifecycle.echo",
    .version = "1.0.0",
    .description = "Prints every standard notification",
    .init = echo_init,
    .deinit = NULL,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
