#pragma once

// The harness's insides, shared by the kit's files (harness.c: the application and the recorded
// events; drive.c: actions and the clock; expect.c: matching; report.c: counts and reports).

#include "lifecycle_testkit.h"

#include <stdbool.h>
#include <stddef.h>

// The kit's own functions between its files: not exported from liblifecycle-testkit.so.
#define LCT_INTERNAL __attribute__((visibility("hidden")))

// Events are kept in blocks of this many, so that an event's address never changes once recorded.
#define LCT_BLOCK_EVENTS 256u

struct lct_harness {
    lc_app *app;
    bool manual_clock;
    bool quiet;
    lc_trace_event_t **blocks; // each LCT_BLOCK_EVENTS events; strings owned by the harness
    size_t block_count;
    size_t event_count;
    size_t lost_events;        // events that could not be copied (out of memory): every later check fails
    size_t cursor;             // the index of the first event after the last match
    size_t checks;
    size_t failures;
    char *last_failure;        // "" until a failure
};

/// Records a copy of `event` (its time the clock's) after the others: the trace callback, and lct_observe's observer.
LCT_INTERNAL void lct_record(const lc_trace_event_t *event, void *harness);
/// The recorded event at `index` (< event_count).
LCT_INTERNAL const lc_trace_event_t *lct_event(const lct_harness *harness, size_t index);

/// Counts a failed check in the process totals only (a harness that could not be made).
LCT_INTERNAL void lct_count_failure(void);
/// Counts a check that passed.
LCT_INTERNAL void lct_pass(lct_harness *harness);
/// Counts a failed check and prints (unless quiet) its report: "FILE:LINE: WHAT", then, when
/// `with_events`, the last matched event and those recorded after it.
LCT_INTERNAL void lct_fail(lct_harness *harness, const char *file, int line, bool with_events, const char *format, ...)
    __attribute__((format(printf, 5, 6)));
/// Whether `text` is given (not NULL, not empty); if not, fails the check (at file:line) with `missing`.
LCT_INTERNAL bool lct_given(lct_harness *harness, const char *text, const char *missing, const char *file, int line);
/// Whether events were lost; if so, fails the check (at file:line) saying how many.
LCT_INTERNAL bool lct_lost_events(lct_harness *harness, const char *file, int line);
