// Counts and failure reports: "FILE:LINE: what was expected", the events around it with their clock
// times, and the process's totals for lct_summary.

#define _GNU_SOURCE // strdup, open_memstream

#include "testkit_internal.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// At most this many events after the last match are listed in a report; the rest are counted.
#define LCT_REPORT_EVENTS 40u

static atomic_size_t total_checks;
static atomic_size_t total_failures;

void lct_count_failure(void) {
    atomic_fetch_add(&total_checks, 1);
    atomic_fetch_add(&total_failures, 1);
}

void lct_pass(lct_harness *harness) {
    harness->checks++;
    atomic_fetch_add(&total_checks, 1);
}

// Appends one event's line, "  #N   TIME s  kind name [observer] {scene} (detail)", to `out`.
static void describe(FILE *out, const lc_trace_event_t *event, size_t number, const char *note) {
    fprintf(out, "  #%-4zu %9.3f s  %s %s", number, event->time, event->kind ? event->kind : "?", event->name ? event->name : "");
    if (event->observer && *event->observer) fprintf(out, " [%s]", event->observer);
    if (event->scene && *event->scene) fprintf(out, " {%s}", event->scene);
    if (event->detail && *event->detail) fprintf(out, " (%s)", event->detail);
    fprintf(out, "%s\n", note);
}

static void describe_events(FILE *out, const lct_harness *h) {
    if (h->cursor > 0) describe(out, lct_event(h, h->cursor - 1), h->cursor, "   <- last match");
    size_t shown = 0;
    for (size_t i = h->cursor; i < h->event_count && shown < LCT_REPORT_EVENTS; i++, shown++) {
        describe(out, lct_event(h, i), i + 1, "");
    }
    size_t after = h->event_count - h->cursor;
    if (after == 0) fprintf(out, "  (no event recorded after it)\n");
    else if (after > shown) fprintf(out, "  ... and %zu more\n", after - shown);
}

void lct_fail(lct_harness *harness, const char *file, int line, bool with_events, const char *format, ...) {
    harness->checks++;
    harness->failures++;
    lct_count_failure();
    char *text = NULL;
    size_t length = 0;
    FILE *out = open_memstream(&text, &length);
    if (out == NULL) {
        fprintf(stderr, "%s:%d: a check failed (its report could not be made: out of memory)\n", file ? file : "?", line);
        return;
    }
    fprintf(out, "%s:%d: ", file ? file : "?", line);
    va_list arguments;
    va_start(arguments, format);
    vfprintf(out, format, arguments);
    va_end(arguments);
    fputc('\n', out);
    if (with_events) describe_events(out, harness);
    if (fclose(out) != 0 || text == NULL) {
        free(text);
        fprintf(stderr, "%s:%d: a check failed (its report could not be made: out of memory)\n", file ? file : "?", line);
        return;
    }
    free(harness->last_failure);
    harness->last_failure = text;
    if (!harness->quiet) {
        fputs(text, stderr);
        fflush(stderr);
    }
}

bool lct_given(lct_harness *harness, const char *text, const char *missing, const char *file, int line) {
    if (text != NULL && *text != '\0') return true;
    lct_fail(harness, file, line, false, "%s", missing);
    return false;
}

bool lct_lost_events(lct_harness *harness, const char *file, int line) {
    if (harness->lost_events == 0) return false;
    lct_fail(harness, file, line, false, "%zu trace events could not be recorded (out of memory): expectations cannot be checked",
             harness->lost_events);
    return true;
}

size_t lct_checks(const lct_harness *harness) { return harness ? harness->checks : 0; }
size_t lct_failures(const lct_harness *harness) { return harness ? harness->failures : 0; }
const char *lct_last_failure(const lct_harness *harness) { return harness ? harness->last_failure : ""; }

void lct_totals(size_t *checks, size_t *failures) {
    if (checks) *checks = atomic_load(&total_checks);
    if (failures) *failures = atomic_load(&total_failures);
}

int lct_summary(const char *name) {
    size_t checks = atomic_load(&total_checks), failures = atomic_load(&total_failures);
    printf("%s: %zu passed, %zu failed\n", name ? name : "lifecycle-testkit", checks - failures, failures);
    fflush(stdout);
    return failures == 0 && checks > 0 ? 0 : 1;
}
