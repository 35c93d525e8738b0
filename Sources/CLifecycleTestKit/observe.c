// lct_observe: a notification the trace does not have (a plugin's own post) recorded as it is delivered.

#include "testkit_internal.h"

#include <stdio.h>

static void on_posted(const lc_notification_t *note, void *ctx) {
    lct_harness *h = ctx;
    lc_trace_event_t event = {
        .struct_size = sizeof event,
        .kind = "posted",
        .name = note->name,
        .state = lc_app_state(h->app),
        .detail = note->user_info ? lc_dict_json(note->user_info) : NULL,
    };
    lct_record(&event, h);
}

lc_status lct_observe_at(lct_harness *harness, const char *name, const char *file, int line) {
    if (harness == NULL) return LC_ERR_INVALID_ARGUMENT;
    lc_status status = lc_app_observe(harness->app, name, NULL, on_posted, harness, NULL);
    if (status != LC_OK) {
        lct_fail(harness, file, line, false, "lct_observe(%.255s) failed: %s: %s", name ? name : "NULL", lc_status_name(status),
                 lc_last_error_message());
        return status;
    }
    lct_pass(harness);
    return LC_OK;
}
