// sd-bus from libsystemd.so.0, loaded with dlopen: see include/session_bus.h. The few sd-bus
// prototypes are declared here, with sd-bus's own types kept opaque; <systemd/sd-bus.h> is not used.
// The variadic functions (sd_bus_message_read, sd_bus_call_method_async) are called with fixed
// argument types, as their prototypes in sd-bus.h say.
#define _GNU_SOURCE
#include "session_bus.h"

#include <dlfcn.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct sd_bus sd_bus;
typedef struct sd_bus_message sd_bus_message;
typedef struct sd_bus_slot sd_bus_slot;
typedef struct {
    const char *name;
    const char *message;
    int _need_free;
} sd_bus_error;
typedef int (*sd_bus_message_handler_t)(sd_bus_message *m, void *userdata, sd_bus_error *ret_error);

static struct {
    int (*bus_new)(sd_bus **ret);
    int (*bus_set_address)(sd_bus *bus, const char *address);
    int (*bus_set_bus_client)(sd_bus *bus, int b);
    int (*bus_start)(sd_bus *bus);
    int (*bus_open_system)(sd_bus **ret);
    int (*bus_get_fd)(sd_bus *bus);
    int (*bus_get_events)(sd_bus *bus);
    int (*bus_get_timeout)(sd_bus *bus, uint64_t *usec);
    int (*bus_process)(sd_bus *bus, sd_bus_message **r);
    void (*bus_close)(sd_bus *bus);
    sd_bus *(*bus_unref)(sd_bus *bus);
    int (*add_match_async)(sd_bus *bus, sd_bus_slot **slot, const char *match, sd_bus_message_handler_t callback,
                           sd_bus_message_handler_t install_callback, void *userdata);
    int (*call_method_async)(sd_bus *bus, sd_bus_slot **slot, const char *destination, const char *path,
                             const char *interface, const char *member, sd_bus_message_handler_t callback,
                             void *userdata, const char *types, ...);
    int (*message_read)(sd_bus_message *m, const char *types, ...);
    int (*enter_container)(sd_bus_message *m, char type, const char *contents);
    int (*exit_container)(sd_bus_message *m);
    int (*peek_type)(sd_bus_message *m, char *type, const char **contents);
    int (*skip)(sd_bus_message *m, const char *types);
    const char *(*get_path)(sd_bus_message *m);
    const char *(*get_sender)(sd_bus_message *m);
    const char *(*get_signature)(sd_bus_message *m, int complete);
    const sd_bus_error *(*get_error)(sd_bus_message *m);
} sd;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static char load_error[256];
static int load_result = -1;

static void load(void) {
    void *lib = dlopen("libsystemd.so.0", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char *why = dlerror();
        snprintf(load_error, sizeof load_error, "%s", why ? why : "libsystemd.so.0: cannot be loaded");
        return;
    }
#define SYM(field, name)                                                                       \
    do {                                                                                       \
        *(void **)&sd.field = dlsym(lib, name);                                                \
        if (!sd.field) {                                                                       \
            snprintf(load_error, sizeof load_error, "libsystemd.so.0 has no %s (systemd older than 240?)", name); \
            return;                                                                            \
        }                                                                                      \
    } while (0)
    SYM(bus_new, "sd_bus_new");
    SYM(bus_set_address, "sd_bus_set_address");
    SYM(bus_set_bus_client, "sd_bus_set_bus_client");
    SYM(bus_start, "sd_bus_start");
    SYM(bus_open_system, "sd_bus_open_system");
    SYM(bus_get_fd, "sd_bus_get_fd");
    SYM(bus_get_events, "sd_bus_get_events");
    SYM(bus_get_timeout, "sd_bus_get_timeout");
    SYM(bus_process, "sd_bus_process");
    SYM(bus_close, "sd_bus_close");
    SYM(bus_unref, "sd_bus_unref");
    SYM(add_match_async, "sd_bus_add_match_async");
    SYM(call_method_async, "sd_bus_call_method_async");
    SYM(message_read, "sd_bus_message_read");
    SYM(enter_container, "sd_bus_message_enter_container");
    SYM(exit_container, "sd_bus_message_exit_container");
    SYM(peek_type, "sd_bus_message_peek_type");
    SYM(skip, "sd_bus_message_skip");
    SYM(get_path, "sd_bus_message_get_path");
    SYM(get_sender, "sd_bus_message_get_sender");
    SYM(get_signature, "sd_bus_message_get_signature");
    SYM(get_error, "sd_bus_message_get_error");
#undef SYM
    load_result = 0;
}

int lcs_bus_load(char *error, size_t capacity) {
    pthread_once(&load_once, load);
    if (load_result != 0 && error && capacity) snprintf(error, capacity, "%s", load_error);
    return load_result;
}

// What a match or a reply is about: its callbacks' userdata.
enum watch_kind {
    W_SESSION_SIGNAL, W_SESSION_PROPS, W_SLEEP, W_UPOWER_PROPS, W_PROFILE_PROPS, W_PROFILE_PROPS_UPOWER,
    W_SESSION_BY_PID, W_SESSION_AUTO, W_LOCKED_HINT, W_ON_BATTERY, W_PROFILE, W_PROFILE_UPOWER, W_COUNT
};

struct lcs_bus;
struct watch {
    struct lcs_bus *bus;
    enum watch_kind kind;
};

struct lcs_bus {
    sd_bus *bus;
    lcs_bus_handler handler;
    void *context;
    int32_t pid;
    char session[256];  // the session's object path, "" until known
    struct watch watches[W_COUNT];
    /// Bit `1 << kind` (LCS_BUS_LOCKED_HINT, LCS_BUS_ON_BATTERY, LCS_BUS_PROFILE): something newer than
    /// the start's `Get` of that property was heard — its PropertiesChanged, or for LockedHint the
    /// session's Lock or Unlock or PrepareForSleep(true) — so the `Get`'s answer, if it comes later, is
    /// older and is dropped.
    unsigned superseded;
};

static const char *LOGIN1 = "org.freedesktop.login1";
static const char *PROPS = "org.freedesktop.DBus.Properties";

static void emit(struct lcs_bus *b, int kind, int flag, const char *text, const char *fmt, ...) {
    lcs_bus_event event = {.kind = kind, .flag = flag};
    if (text) snprintf(event.text, sizeof event.text, "%s", text);
    va_list args;
    va_start(args, fmt);
    vsnprintf(event.detail, sizeof event.detail, fmt, args);
    va_end(args);
    b->handler(b->context, &event);
}

static const char *or_unknown(const char *s) { return s ? s : "?"; }

/// A bus string printed in a trace line: at most 64 bytes, printable ASCII ('?' for the rest).
static void printable(char *out, size_t capacity, const char *s) {
    size_t i = 0;
    for (; s && s[i] && i + 1 < capacity && i < 64; i++) out[i] = (s[i] >= 0x20 && s[i] < 0x7f) ? s[i] : '?';
    out[i] = 0;
}

static void malformed(struct lcs_bus *b, sd_bus_message *m, const char *what, const char *why) {
    char sender[80], path[80], signature[80];
    printable(sender, sizeof sender, or_unknown(sd.get_sender(m)));
    printable(path, sizeof path, or_unknown(sd.get_path(m)));
    printable(signature, sizeof signature, or_unknown(sd.get_signature(m, 1)));
    emit(b, LCS_BUS_MALFORMED, 0, NULL, "%s from %s on %s (signature '%s'): %s", what, sender, path, signature, why);
}

/// Whether `path` is the object of the session followed (known once logind answered).
static int is_our_session(const struct lcs_bus *b, const char *path) {
    return path && b->session[0] && strcmp(path, b->session) == 0;
}

static int has_signature(sd_bus_message *m, const char *expected) {
    const char *signature = sd.get_signature(m, 1);
    return signature && strcmp(signature, expected) == 0;
}

static void ask_property(struct lcs_bus *b, const char *destination, const char *path, const char *interface,
                         const char *property, enum watch_kind kind);

/// One property value in a variant (the reader is before it): LockedHint and OnBattery are 'b',
/// ActiveProfile 's' of at most LCS_BUS_MAX_PROFILE bytes. Returns 0, or a static reason.
static const char *read_value(struct lcs_bus *b, sd_bus_message *m, const char *property, int event_kind) {
    char type = 0;
    const char *contents = NULL;
    if (sd.peek_type(m, &type, &contents) <= 0 || type != 'v' || !contents) return "no variant";
    if (event_kind == LCS_BUS_PROFILE) {
        if (strcmp(contents, "s") != 0) return "ActiveProfile is not a string";
        const char *value = NULL;
        if (sd.enter_container(m, 'v', "s") < 0 || sd.message_read(m, "s", &value) < 0 || !value) return "unreadable ActiveProfile";
        if (strlen(value) > LCS_BUS_MAX_PROFILE) return "ActiveProfile is longer than 63 bytes";
        char text[LCS_BUS_MAX_PROFILE + 1];
        printable(text, sizeof text, value);
        if (strcmp(text, value) != 0) return "ActiveProfile has bytes that are not printable ASCII";
        emit(b, event_kind, 0, text, "%s", property);
    } else {
        if (strcmp(contents, "b") != 0) return event_kind == LCS_BUS_ON_BATTERY ? "OnBattery is not a boolean" : "LockedHint is not a boolean";
        int value = 0;
        if (sd.enter_container(m, 'v', "b") < 0 || sd.message_read(m, "b", &value) < 0) return "unreadable boolean";
        emit(b, event_kind, value ? 1 : 0, NULL, "%s", property);
    }
    sd.exit_container(m);
    return NULL;
}

/// PropertiesChanged(sa{sv}as) of `interface`: the one watched property, if it is there.
static void properties_changed(struct lcs_bus *b, sd_bus_message *m, const char *interface, const char *property,
                               int event_kind) {
    const char *why = NULL;
    const char *name = NULL;
    if (!has_signature(m, "sa{sv}as")) {
        why = "not sa{sv}as";
    } else if (sd.message_read(m, "s", &name) < 0 || !name) {
        why = "unreadable interface name";
    } else if (strcmp(name, interface) != 0) {
        return;  // another interface on the same object
    } else if (sd.enter_container(m, 'a', "{sv}") < 0) {
        why = "unreadable changed properties";
    } else {
        int count = 0;
        for (;;) {
            int r = sd.enter_container(m, 'e', "sv");
            if (r == 0) break;
            if (r < 0 || ++count > 256) { why = r < 0 ? "unreadable entry" : "more than 256 properties"; break; }
            const char *key = NULL;
            if (sd.message_read(m, "s", &key) < 0 || !key) { why = "unreadable property name"; break; }
            if (strcmp(key, property) == 0) {
                if ((why = read_value(b, m, "PropertiesChanged", event_kind))) break;
                b->superseded |= 1u << event_kind;
            } else if (sd.skip(m, "v") < 0) {
                why = "unreadable value";
                break;
            }
            if (sd.exit_container(m) < 0) { why = "unreadable entry end"; break; }
        }
    }
    if (why) malformed(b, m, "PropertiesChanged", why);
}

static int on_signal(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
    (void)ret_error;
    struct watch *w = userdata;
    struct lcs_bus *b = w->bus;
    const char *path = sd.get_path(m);
    switch (w->kind) {
    case W_SESSION_PROPS:
        if (!is_our_session(b, path)) return 0;
        properties_changed(b, m, "org.freedesktop.login1.Session", "LockedHint", LCS_BUS_LOCKED_HINT);
        return 0;
    case W_SLEEP: {
        int sleeping = 0;
        if (!has_signature(m, "b") || sd.message_read(m, "b", &sleeping) < 0) {
            malformed(b, m, "PrepareForSleep", "not one boolean");
            return 0;
        }
        if (sleeping) b->superseded |= 1u << LCS_BUS_LOCKED_HINT;  // a lock, newer than the start's LockedHint
        emit(b, LCS_BUS_SLEEP, sleeping ? 1 : 0, NULL, "PrepareForSleep");
        return 0;
    }
    case W_UPOWER_PROPS:
        properties_changed(b, m, "org.freedesktop.UPower", "OnBattery", LCS_BUS_ON_BATTERY);
        return 0;
    case W_PROFILE_PROPS:
        properties_changed(b, m, "net.hadess.PowerProfiles", "ActiveProfile", LCS_BUS_PROFILE);
        return 0;
    case W_PROFILE_PROPS_UPOWER:
        properties_changed(b, m, "org.freedesktop.UPower.PowerProfiles", "ActiveProfile", LCS_BUS_PROFILE);
        return 0;
    default:
        return 0;
    }
}

// Lock and Unlock are sent to every session's object: only ours counts.
static int session_signal(sd_bus_message *m, struct watch *w, lcs_bus_event_kind kind, const char *member) {
    struct lcs_bus *b = w->bus;
    if (!is_our_session(b, sd.get_path(m))) return 0;  // another session's
    if (!has_signature(m, "")) {
        char why[64];
        snprintf(why, sizeof why, "%s takes no arguments", member);
        malformed(b, m, member, why);
        return 0;
    }
    b->superseded |= 1u << LCS_BUS_LOCKED_HINT;  // newer than the start's LockedHint, whatever it says
    emit(b, kind, kind == LCS_BUS_LOCK ? 1 : 0, NULL, "%s", member);
    return 0;
}

static int on_lock(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    return session_signal(m, userdata, LCS_BUS_LOCK, "Lock");
}

static int on_unlock(sd_bus_message *m, void *userdata, sd_bus_error *e) {
    (void)e;
    return session_signal(m, userdata, LCS_BUS_UNLOCK, "Unlock");
}

static int on_installed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
    (void)ret_error;
    struct watch *w = userdata;
    const sd_bus_error *error = sd.get_error(m);
    if (error && error->name) {
        char why[120];
        printable(why, sizeof why, error->message ? error->message : error->name);
        emit(w->bus, LCS_BUS_PROBLEM, 0, NULL, "a match could not be installed: %s", why);
    }
    return 0;
}

/// A method's reply: an error is a PROBLEM (the service is absent), a reply of the wrong type MALFORMED.
static int on_reply(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
    (void)ret_error;
    struct watch *w = userdata;
    struct lcs_bus *b = w->bus;
    const sd_bus_error *error = sd.get_error(m);
    if (error && error->name) {
        char why[160];
        printable(why, sizeof why, error->message ? error->message : error->name);
        switch (w->kind) {
        case W_SESSION_BY_PID:
            // Not in a session by PID (a service, a container): the caller's session, if any.
            sd.call_method_async(b->bus, NULL, LOGIN1, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                 "GetSession", on_reply, &b->watches[W_SESSION_AUTO], "s", "auto");
            return 0;
        case W_SESSION_AUTO:
            emit(b, LCS_BUS_PROBLEM, 0, NULL, "logind: no session for this process (%s); lock and unlock are off", why);
            return 0;
        case W_PROFILE:
            // The older name first; the daemon's newer name next.
            ask_property(b, "org.freedesktop.UPower.PowerProfiles", "/org/freedesktop/UPower/PowerProfiles",
                         "org.freedesktop.UPower.PowerProfiles", "ActiveProfile", W_PROFILE_UPOWER);
            return 0;
        case W_PROFILE_UPOWER:
            emit(b, LCS_BUS_PROBLEM, 0, NULL, "power-profiles: ActiveProfile cannot be read (%s)", why);
            return 0;
        case W_ON_BATTERY:
            emit(b, LCS_BUS_PROBLEM, 0, NULL, "UPower: OnBattery cannot be read (%s)", why);
            return 0;
        case W_LOCKED_HINT:
            emit(b, LCS_BUS_PROBLEM, 0, NULL, "logind: LockedHint cannot be read (%s)", why);
            return 0;
        default:
            return 0;
        }
    }
    switch (w->kind) {
    case W_SESSION_BY_PID:
    case W_SESSION_AUTO: {
        const char *path = NULL;
        if (!has_signature(m, "o") || sd.message_read(m, "o", &path) < 0 || !path) {
            malformed(b, m, "GetSession reply", "not one object path");
            return 0;
        }
        if (strlen(path) >= sizeof b->session) {
            malformed(b, m, "GetSession reply", "the session's path is longer than 255 bytes");
            return 0;
        }
        snprintf(b->session, sizeof b->session, "%s", path);
        char text[64];
        printable(text, sizeof text, path);
        emit(b, LCS_BUS_SESSION, 0, text, "GetSession");
        ask_property(b, LOGIN1, b->session, "org.freedesktop.login1.Session", "LockedHint", W_LOCKED_HINT);
        return 0;
    }
    case W_LOCKED_HINT:
    case W_ON_BATTERY:
    case W_PROFILE:
    case W_PROFILE_UPOWER: {
        int kind = w->kind == W_LOCKED_HINT ? LCS_BUS_LOCKED_HINT : w->kind == W_ON_BATTERY ? LCS_BUS_ON_BATTERY : LCS_BUS_PROFILE;
        // Answered after a newer change was heard (the change was sent before the service read the
        // value, or the value is not what the change says, as LockedHint after a Lock): older, dropped.
        if (b->superseded & (1u << kind)) return 0;
        const char *why = has_signature(m, "v") ? read_value(b, m, "Get", kind) : "not one variant";
        if (why) malformed(b, m, "Get reply", why);
        return 0;
    }
    default:
        return 0;
    }
}

static void ask_property(struct lcs_bus *b, const char *destination, const char *path, const char *interface,
                         const char *property, enum watch_kind kind) {
    int r = sd.call_method_async(b->bus, NULL, destination, path, PROPS, "Get", on_reply, &b->watches[kind], "ss",
                                 interface, property);
    if (r < 0) emit(b, LCS_BUS_PROBLEM, 0, NULL, "%s: Get(%s) cannot be sent: %s", destination, property, strerror(-r));
}

static int add_match(struct lcs_bus *b, const char *rule, sd_bus_message_handler_t callback, enum watch_kind kind) {
    return sd.add_match_async(b->bus, NULL, rule, callback, on_installed, &b->watches[kind]);
}

int lcs_bus_open(const char *address, int32_t pid, lcs_bus_handler handler, void *context, lcs_bus **out,
                 char *error, size_t capacity) {
    *out = NULL;
    if (lcs_bus_load(error, capacity) != 0) return -ENOENT;
    struct lcs_bus *b = calloc(1, sizeof *b);
    if (!b) return -ENOMEM;
    b->handler = handler;
    b->context = context;
    b->pid = pid;
    for (int i = 0; i < W_COUNT; i++) b->watches[i] = (struct watch){.bus = b, .kind = (enum watch_kind)i};
    int r;
    const char *step;
    if (address) {
        step = "sd_bus_new";
        r = sd.bus_new(&b->bus);
        if (r >= 0) { step = "sd_bus_set_address"; r = sd.bus_set_address(b->bus, address); }
        if (r >= 0) { step = "sd_bus_set_bus_client"; r = sd.bus_set_bus_client(b->bus, 1); }
        if (r >= 0) { step = "sd_bus_start"; r = sd.bus_start(b->bus); }
    } else {
        step = "sd_bus_open_system";
        r = sd.bus_open_system(&b->bus);
    }
    if (r >= 0) {
        step = "sd_bus_add_match_async";
        const char *login1 = "type='signal',sender='org.freedesktop.login1',";
        char rule[512];
        snprintf(rule, sizeof rule, "%sinterface='org.freedesktop.login1.Session',member='Lock'", login1);
        r = add_match(b, rule, on_lock, W_SESSION_SIGNAL);
        if (r >= 0) {
            snprintf(rule, sizeof rule, "%sinterface='org.freedesktop.login1.Session',member='Unlock'", login1);
            r = add_match(b, rule, on_unlock, W_SESSION_SIGNAL);
        }
        if (r >= 0) {
            snprintf(rule, sizeof rule, "%sinterface='%s',member='PropertiesChanged',arg0='org.freedesktop.login1.Session'", login1, PROPS);
            r = add_match(b, rule, on_signal, W_SESSION_PROPS);
        }
        if (r >= 0) {
            snprintf(rule, sizeof rule, "%spath='/org/freedesktop/login1',interface='org.freedesktop.login1.Manager',member='PrepareForSleep'", login1);
            r = add_match(b, rule, on_signal, W_SLEEP);
        }
        if (r >= 0) {
            snprintf(rule, sizeof rule, "type='signal',sender='org.freedesktop.UPower',path='/org/freedesktop/UPower',interface='%s',member='PropertiesChanged',arg0='org.freedesktop.UPower'", PROPS);
            r = add_match(b, rule, on_signal, W_UPOWER_PROPS);
        }
        if (r >= 0) {
            snprintf(rule, sizeof rule, "type='signal',sender='net.hadess.PowerProfiles',path='/net/hadess/PowerProfiles',interface='%s',member='PropertiesChanged',arg0='net.hadess.PowerProfiles'", PROPS);
            r = add_match(b, rule, on_signal, W_PROFILE_PROPS);
        }
        if (r >= 0) {
            snprintf(rule, sizeof rule, "type='signal',sender='org.freedesktop.UPower.PowerProfiles',path='/org/freedesktop/UPower/PowerProfiles',interface='%s',member='PropertiesChanged',arg0='org.freedesktop.UPower.PowerProfiles'", PROPS);
            r = add_match(b, rule, on_signal, W_PROFILE_PROPS_UPOWER);
        }
    }
    if (r >= 0) {
        step = "sd_bus_call_method_async";
        r = sd.call_method_async(b->bus, NULL, LOGIN1, "/org/freedesktop/login1", "org.freedesktop.login1.Manager",
                                 "GetSessionByPID", on_reply, &b->watches[W_SESSION_BY_PID], "u", (uint32_t)pid);
    }
    if (r < 0) {
        if (error && capacity) snprintf(error, capacity, "%s failed: %s (errno %d)", step, strerror(-r), -r);
        lcs_bus_close(b);
        return r;
    }
    ask_property(b, "org.freedesktop.UPower", "/org/freedesktop/UPower", "org.freedesktop.UPower", "OnBattery", W_ON_BATTERY);
    ask_property(b, "net.hadess.PowerProfiles", "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles", "ActiveProfile", W_PROFILE);
    *out = b;
    return 0;
}

int lcs_bus_fd(lcs_bus *bus) { return sd.bus_get_fd(bus->bus); }

int lcs_bus_events(lcs_bus *bus) { return sd.bus_get_events(bus->bus); }

uint64_t lcs_bus_timeout(lcs_bus *bus) {
    uint64_t usec = UINT64_MAX;
    if (sd.bus_get_timeout(bus->bus, &usec) < 0) return UINT64_MAX;
    return usec;
}

int lcs_bus_process(lcs_bus *bus, int limit) {
    for (int i = 0; i < limit; i++) {
        int r = sd.bus_process(bus->bus, NULL);
        if (r <= 0) return r;
    }
    return 1;
}

void lcs_bus_close(lcs_bus *bus) {
    if (!bus) return;
    if (bus->bus) {
        sd.bus_close(bus->bus);
        sd.bus_unref(bus->bus);
    }
    free(bus);
}
