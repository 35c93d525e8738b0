// Greeter: implements delegate functions only (no observers). The host finds each with dlsym and
// calls it through libffi.
//
// * Answers NO from willFinishLaunching when the launch options carry "refuse": true, so a URL
//   the app was launched to open is not handed to openURL (the launch itself goes on).
// * Opens only URLs whose scheme is "greeter:".
// * Completes background fetches and remote notifications at once, with "new data".
//
// Build on its own:  cc -shared -fPIC -I include Plugins/Greeter/greeter.c -o libGreeter.so

#define LC_DECLARE_DELEGATE_FUNCTIONS
#include "lifecycle.h"

#include <stdio.h>
#include <string.h>

static const lc_host_api_t *host;

static void say(const char *what) {
    printf("greeter: %s\n", what);
    fflush(stdout);
}

bool application_willFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) {
    (void)app;
    bool refuse = false;
    host->dict->get_bool(options, "refuse", &refuse);
    say(refuse ? "launch refused" : "hello");
    return !refuse;
}

bool application_didFinishLaunchingWithOptions(lc_app *app, const lc_dict *options) {
    (void)app, (void)options;
    return true;
}

bool application_openURL(lc_app *app, const char *url, const char *source_app, const lc_dict *annotation) {
    (void)app, (void)annotation;
    bool mine = strncmp(url, "greeter:", 8) == 0;
    printf("greeter: open %s from %s: %s\n", url, source_app ? source_app : "(unknown)", mine ? "yes" : "no");
    fflush(stdout);
    return mine;
}

void applicationDidEnterBackground(lc_app *app) { (void)app, say("see you"); }
void applicationWillEnterForeground(lc_app *app) { (void)app, say("welcome back"); }
void applicationWillTerminate(lc_app *app) { (void)app, say("goodbye"); }

void application_performFetchWithCompletionHandler(lc_app *app, void (*completion)(lc_fetch_result result)) {
    (void)app;
    say("fetching");
    completion(LC_FETCH_NEW_DATA);
}

void application_didReceiveRemoteNotification_fetchCompletionHandler(lc_app *app, const lc_dict *user_info,
                                                                      void (*completion)(lc_fetch_result result)) {
    (void)app;
    printf("greeter: push %s\n", host->dict->json(user_info));
    fflush(stdout);
    completion(LC_FETCH_NEW_DATA);
}

static lc_status greeter_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
    (void)plugin, (void)state;
    host = api;
    return LC_OK;
}

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof(lc_plugin_descriptor_t),
    .magic = LC_PLUGIN_MAGIC,
    .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = LC_ABI_VERSION_MINOR,
    .id = "org.applifecycle.greeter",
    .version = "1.0.0",
    .description = "Delegate functions only, called through libffi",
    .init = greeter_init,
    .deinit = NULL,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
