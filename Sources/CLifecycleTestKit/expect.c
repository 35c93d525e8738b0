// Expectations: the next matching event after the cursor, read from the events' typed fields.

#include "testkit_internal.h"

#include <stdio.h>
#include <string.h>

typedef struct match {
    const char *kind;     // the event's kind, exactly
    const char *or_kind;  // or this one (NULL: none)
    const char *name;     // NULL: any
    const char *observer; // NULL: any
    bool selector;        // name is a delegate selector or its C function name
    bool by_state;        // match the `state` field instead of the name
    lc_state state;
} match;

static bool same(const char *a, const char *b) { return a != NULL && b != NULL && strcmp(a, b) == 0; }

// Whether the traced selector `traced` ("application:openURL:options:") is `wanted`, given either as
// the selector or as lifecycle.h's function name for it ("application_openURL_options"): the
// selector with each ':' a '_' and the last one dropped.
static bool same_selector(const char *traced, const char *wanted) {
    if (traced == NULL) return false;
    if (strcmp(traced, wanted) == 0) return true;
    size_t length = strlen(traced);
    if (length == 0 || traced[length - 1] != ':' || strlen(wanted) != length - 1) return false;
    for (size_t i = 0; i + 1 < length; i++) {
        char c = traced[i] == ':' ? '_' : traced[i];
        if (c != wanted[i]) return false;
    }
    return true;
}

static bool matches(const lc_trace_event_t *event, const match *m) {
    if (!same(event->kind, m->kind) && !same(event->kind, m->or_kind)) return false;
    if (m->observer != NULL && !same(event->observer, m->observer)) return false;
    if (m->by_state) return event->state == m->state;
    if (m->name == NULL) return true;
    return m->selector ? same_selector(event->name, m->name) : same(event->name, m->name);
}

// Finds the first event after the cursor that matches; moves the cursor past it and passes, or fails
// with `expected` and the events after the cursor.
static bool expect(lct_harness *h, const match *m, const char *expected, const char *file, int line) {
    if (lct_lost_events(h, file, line)) return false;
    for (size_t i = h->cursor; i < h->event_count; i++) {
        if (matches(lct_event(h, i), m)) {
            h->cursor = i + 1;
            lct_pass(h);
            return true;
        }
    }
    if (h->cursor == 0) lct_fail(h, file, line, true, "expected %s; not recorded", expected);
    else lct_fail(h, file, line, true, "expected %s; not recorded after event #%zu", expected, h->cursor);
    return false;
}

bool lct_expect_delegate_at(lct_harness *harness, const char *selector, const char *file, int line) {
    if (harness == NULL) return false;
    if (!lct_given(harness, selector, "lct_expect_delegate: no selector given", file, line)) return false;
    match m = {.kind = "delegate", .name = selector, .selector = true};
    char expected[320];
    snprintf(expected, sizeof expected, "delegate %.255s", selector);
    return expect(harness, &m, expected, file, line);
}

bool lct_expect_notification_at(lct_harness *harness, lc_name name, const char *file, int line) {
    if (harness == NULL) return false;
    const char *spelled = lc_name_string(name);
    if (spelled == NULL) {
        lct_fail(harness, file, line, false, "lct_expect_notification: %u is not a notification name (LC_NAME_… or an "
                 "lc_name_intern id)", (unsigned)name);
        return false;
    }
    match m = {.kind = "notification", .or_kind = "posted", .name = spelled};
    char expected[320];
    snprintf(expected, sizeof expected, "notification %s", spelled);
    return expect(harness, &m, expected, file, line);
}

bool lct_expect_notification_named_at(lct_harness *harness, const char *name, const char *file, int line) {
    if (harness == NULL) return false;
    lc_name id = 0;
    lc_status status = lc_name_intern(name, &id);
    if (status != LC_OK) {
        lct_fail(harness, file, line, false, "lct_expect_notification_named: %s: %s", lc_status_name(status), lc_last_error_message());
        return false;
    }
    return lct_expect_notification_at(harness, id, file, line);
}

bool lct_expect_state_at(lct_harness *harness, lc_state state, const char *file, int line) {
    if (harness == NULL) return false;
    if (state > LC_STATE_SUSPENDED) {
        lct_fail(harness, file, line, false, "lct_expect_state: %u is not an lc_state (0 to %d)", (unsigned)state, LC_STATE_SUSPENDED);
        return false;
    }
    match m = {.kind = "state", .by_state = true, .state = state};
    char expected[64];
    snprintf(expected, sizeof expected, "state %s", lc_state_name(state));
    return expect(harness, &m, expected, file, line);
}

bool lct_expect_event_at(lct_harness *harness, const char *kind, const char *name, const char *observer, const char *file,
                         int line) {
    if (harness == NULL) return false;
    if (!lct_given(harness, kind, "lct_expect_event: no kind given", file, line)) return false;
    match m = {.kind = kind, .name = name, .observer = observer};
    char expected[800];
    snprintf(expected, sizeof expected, "%.255s %.255s [%.255s]", kind, name ? name : "(any name)", observer ? observer : "any observer");
    return expect(harness, &m, expected, file, line);
}

bool lct_expect_nothing_more_at(lct_harness *harness, const char *file, int line) {
    if (harness == NULL) return false;
    if (lct_lost_events(harness, file, line)) return false;
    for (size_t i = harness->cursor; i < harness->event_count; i++) {
        if (!same(lct_event(harness, i)->kind, "action")) {
            if (harness->cursor == 0) lct_fail(harness, file, line, true, "expected nothing more; recorded:");
            else lct_fail(harness, file, line, true, "expected nothing more after event #%zu; recorded:", harness->cursor);
            return false;
        }
    }
    lct_pass(harness);
    return true;
}

bool lct_expect_true_at(lct_harness *harness, bool condition, const char *text, const char *file, int line) {
    if (harness == NULL) return false;
    if (!condition) {
        lct_fail(harness, file, line, false, "expected %s; it is false", text ? text : "(no text)");
        return false;
    }
    lct_pass(harness);
    return true;
}
