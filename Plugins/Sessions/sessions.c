// Sessions: the ABI 1.1 way. No global state and no exported delegate functions: init allocates a
// state of its own and registers a delegate table (lc_plugin_delegate_t) with host->set_delegate.
// Every delegate function receives (plugin, state), so the same shared object loaded into two
// applications keeps two separate counts.
//
// * Counts foreground sessions: each didBecomeActive starts one, and posts
//   "org.applifecycle.sessions.started" with {"sessions": n} (sender NULL).
// * Logs the number when the application enters the background.
// * Completes a background fetch later, from a timer: it keeps the (complete, token) pair in its
//   state. A token is never reused, so a late or repeated call can never complete another request.
//
// Build on its own:  cc -shared -fPIC -I include Plugins/Sessions/sessions.c -o libSessions.so

#include "lifecycle.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct sessions {
    const lc_host_api_t *host;
    lc_plugin *plugin;
    int64_t count;
    lc_complete_fn complete; // the open fetch, if any
    lc_completion_token token;
} sessions;

static void did_become_active(lc_plugin *plugin, void *state) {
    sessions *s = state;
    s->count++;
    lc_dict *info = s->host->dict->create();
    s->host->dict->set_int(info, "sessions", s->count);
    s->host->post(plugin, "org.applifecycle.sessions.started", NULL, info);
    s->host->dict->destroy(info);
}

static void did_enter_background(lc_plugin *plugin, void *state) {
    sessions *s = state;
    char line[64];
    snprintf(line, sizeof line, "%lld session(s) so far", (long long)s->count);
    s->host->log(plugin, LC_LOG_INFO, line);
}

static void finish_fetch(void *state) {
    sessions *s = state;
    if (s->complete == NULL) return;
    lc_status status = s->complete(s->plugin, s->token, LC_FETCH_NO_DATA);
    if (status != LC_OK) s->host->log(s->plugin, LC_LOG_WARNING, "the fetch had already ended");
    s->complete = NULL;
}

static void perform_fetch(lc_plugin *plugin, void *state, lc_complete_fn complete, lc_completion_token token) {
    sessions *s = state;
    if (s->complete != NULL) finish_fetch(s); // one at a time
    s->complete = complete;
    s->token = token;
    if (s->host->add_timer(plugin, 0.01, finish_fetch, s, NULL) != LC_OK) finish_fetch(s);
}

static const lc_plugin_delegate_t delegate = {
    .struct_size = sizeof(lc_plugin_delegate_t),
    .did_become_active = did_become_active,
    .did_enter_background = did_enter_background,
    .perform_fetch = perform_fetch,
};

static lc_status sessions_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
    sessions *s = calloc(1, sizeof *s);
    if (s == NULL) {
        host->set_error(plugin, "out of memory");
        return LC_ERR_SYSTEM;
    }
    s->host = host;
    s->plugin = plugin;
    lc_status status = host->set_delegate(plugin, &delegate);
    if (status != LC_OK) {
        free(s);
        return status;
    }
    *state = s;
    return LC_OK;
}

static void sessions_deinit(void *state) { free(state); } // timers and the open fetch are gone by now

static const lc_plugin_descriptor_t descriptor = {
    .struct_size = sizeof(lc_plugin_descriptor_t),
    .magic = LC_PLUGIN_MAGIC,
    .abi_major = LC_ABI_VERSION_MAJOR,
    .abi_minor = 1, // needs the 1.1 delegate table
    .id = "org.applifecycle.sessions",
    .version = "1.0.0",
    .description = "ABI 1.1 delegate table with per-instance state",
    .init = sessions_init,
    .deinit = sessions_deinit,
};

LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
