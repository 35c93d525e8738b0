// The harness: its application on the manual clock, and every trace event recorded with its strings.

#define _GNU_SOURCE // strdup, open_memstream

#include "testkit_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *copy(const char *text) { return text ? strdup(text) : NULL; }

static void free_event(lc_trace_event_t *event) {
    free((char *)event->kind);
    free((char *)event->name);
    free((char *)event->observer);
    free((char *)event->detail);
    free((char *)event->scene);
}

// The trace callback (and lct_observe's observer): copies the event (its time replaced by the clock's) into the next slot.
void lct_record(const lc_trace_event_t *event, void *ctx) {
    lct_harness *h = ctx;
    if (h->event_count == h->block_count * LCT_BLOCK_EVENTS) {
        lc_trace_event_t **blocks = realloc(h->blocks, (h->block_count + 1) * sizeof *blocks);
        if (blocks == NULL) {
            h->lost_events++;
            return;
        }
        h->blocks = blocks;
        blocks[h->block_count] = calloc(LCT_BLOCK_EVENTS, sizeof **blocks);
        if (blocks[h->block_count] == NULL) {
            h->lost_events++;
            return;
        }
        h->block_count++;
    }
    lc_trace_event_t kept = {
        .struct_size = sizeof kept,
        .seq = event->seq,
        .time = lc_app_clock_seconds(h->app),
        .kind = copy(event->kind),
        .name = copy(event->name),
        .state = event->state,
        .observer = copy(event->observer),
        .detail = copy(event->detail),
        .scene = copy(event->scene),
    };
    if ((event->kind && !kept.kind) || (event->name && !kept.name) || (event->observer && !kept.observer)
        || (event->detail && !kept.detail) || (event->scene && !kept.scene)) {
        free_event(&kept);
        h->lost_events++;
        return;
    }
    h->blocks[h->event_count / LCT_BLOCK_EVENTS][h->event_count % LCT_BLOCK_EVENTS] = kept;
    h->event_count++;
}

const lc_trace_event_t *lct_event(const lct_harness *harness, size_t index) {
    return &harness->blocks[index / LCT_BLOCK_EVENTS][index % LCT_BLOCK_EVENTS];
}

// The report of the calling thread's last failed lct_harness_create.
static _Thread_local char create_failure[1024];

const char *lct_create_failure(void) { return create_failure; }

// Counts and reports a failed lct_harness_create: "FILE:LINE: lct_harness_create: WHY".
static lc_status refuse(bool quiet, lc_status status, const char *file, int line, const char *format, ...)
    __attribute__((format(printf, 5, 6)));
static lc_status refuse(bool quiet, lc_status status, const char *file, int line, const char *format, ...) {
    lct_count_failure();
    int used = snprintf(create_failure, sizeof create_failure, "%s:%d: lct_harness_create: ", file ? file : "?", line);
    if (used < 0 || (size_t)used >= sizeof create_failure - 2) used = 0;
    va_list arguments;
    va_start(arguments, format);
    vsnprintf(create_failure + used, sizeof create_failure - 1 - (size_t)used, format, arguments);
    va_end(arguments);
    strcat(create_failure, "\n");
    if (!quiet) {
        fputs(create_failure, stderr);
        fflush(stderr);
    }
    return status;
}

lc_status lct_harness_create_at(const lct_options_t *options, lct_harness **out, const char *file, int line) {
    // The options as given, a shorter struct's tail as zero.
    lct_options_t given = {.struct_size = sizeof given};
    if (options != NULL) {
        if (options->struct_size < sizeof(uint32_t)) {
            return refuse(false, LC_ERR_INVALID_ARGUMENT, file, line, "options->struct_size is %u; at least 4 (sizeof(lct_options_t))",
                          (unsigned)options->struct_size);
        }
        memcpy(&given, options, options->struct_size < sizeof given ? options->struct_size : sizeof given);
    }
    bool quiet = given.quiet == 1;
    if (out == NULL) return refuse(quiet, LC_ERR_INVALID_ARGUMENT, file, line, "out is NULL");
    if (given.real_clock > 1) {
        return refuse(quiet, LC_ERR_INVALID_ARGUMENT, file, line, "options->real_clock is %u; 0 (the manual clock) or 1 (the monotonic clock)",
                      (unsigned)given.real_clock);
    }
    if (given.quiet > 1) return refuse(false, LC_ERR_INVALID_ARGUMENT, file, line, "options->quiet is %u; 0 or 1", (unsigned)given.quiet);
    lc_config_t config;
    lc_config_init(&config);
    if (given.config != NULL) {
        uint32_t size = given.config->struct_size;
        if (size < sizeof(uint32_t)) {
            return refuse(quiet, LC_ERR_INVALID_ARGUMENT, file, line, "options->config->struct_size is %u; sizeof(lc_config_t)",
                          (unsigned)size);
        }
        memcpy(&config, given.config, size < sizeof config ? size : sizeof config);
        config.struct_size = sizeof config;
    }
    config.clock = given.real_clock ? LC_CLOCK_MONOTONIC : LC_CLOCK_MANUAL;

    lct_harness *h = calloc(1, sizeof *h);
    if (h == NULL || (h->last_failure = strdup("")) == NULL) {
        free(h);
        return refuse(quiet, LC_ERR_SYSTEM, file, line, "out of memory");
    }
    h->manual_clock = !given.real_clock;
    h->quiet = quiet;
    lc_status status = lc_app_create(&config, &h->app);
    if (status == LC_OK) status = lc_app_set_trace(h->app, lct_record, h);
    if (status != LC_OK) {
        refuse(quiet, status, file, line, "%s: %s", lc_status_name(status), lc_last_error_message());
        lct_harness_destroy(h);
        return status;
    }
    *out = h;
    return LC_OK;
}

void lct_harness_destroy(lct_harness *harness) {
    if (harness == NULL) return;
    if (harness->app) {
        // Events of the end (plugins' deinit) are not kept: nothing can expect them any more.
        lc_app_set_trace(harness->app, NULL, NULL);
        lc_app_destroy(harness->app);
    }
    for (size_t i = 0; i < harness->event_count; i++) free_event((lc_trace_event_t *)lct_event(harness, i));
    for (size_t b = 0; b < harness->block_count; b++) free(harness->blocks[b]);
    free(harness->blocks);
    free(harness->last_failure);
    free(harness);
}

lc_app *lct_app(lct_harness *harness) { return harness ? harness->app : NULL; }

size_t lct_event_count(const lct_harness *harness) { return harness ? harness->event_count : 0; }

const lc_trace_event_t *lct_event_at(const lct_harness *harness, size_t index) {
    return harness && index < harness->event_count ? lct_event(harness, index) : NULL;
}
