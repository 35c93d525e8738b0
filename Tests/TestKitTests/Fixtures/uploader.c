// uploader.c: begins a background task when the application enters the background and ends it only in
// the task's expiration handler, when the background time runs out (docs/writing-a-plugin.md,
// "Testing your plugin": the 30 s test).
#include "lifecycle.h"

static const lc_host_api_t *host;
static lc_plugin *self;
static lc_task_id upload;

static void on_expiring(void *ctx) {
    (void)ctx;
    host->end_background_task(self, upload); // out of time: stop, as iOS asks
    upload = 0;
}

static void on_background(const lc_notification_t *note, void *ctx) {
    (void)note, (void)ctx;
    if (upload == 0) host->begin_background_task(self, "upload", on_expiring, NULL, &upload);
}

static lc_status uploader_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
    (void)state;
    host = api;
    self = plugin;
    upload = 0;
    return host->observe(plugin, "didEnterBackground", NULL, on_background, NULL, NULL);
}

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof(lc_plugin_descriptor_t),
    .magic = LC_PLUGIN_MAGIC,
    .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = LC_ABI_VERSION_MINOR,
    .id = "com.example.uploader",
    .version = "1.0.0",
    .description = "Uploads in a background task until the background time runs out",
    .init = uploader_init,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
