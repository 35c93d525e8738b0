// A fake logind, UPower and power-profiles daemon on a private bus, for SessionEventsTests: it owns
// org.freedesktop.login1, org.freedesktop.UPower and net.hadess.PowerProfiles, answers
// GetSessionByPID / GetSession and the properties LockedHint, OnBattery and ActiveProfile (Get,
// GetAll), and emits what standard input asks for, one command a line:
//   lock | unlock | sleep 0|1 | battery 0|1 | profile NAME | hint 0|1
//   bad-sleep (PrepareForSleep with a string) | bad-battery (OnBattery as a string)
//   long-profile (a 200-byte ActiveProfile) | other-lock (Lock on another session's object)
//   release-hint (answers the session's property Gets held since the start, with "hold-hint")
// With a fifth argument "hold-hint", a Get of the session's properties is not answered until
// release-hint: a start read answered late, after signals sent meanwhile.
// It prints "ready" once it owns the names, "sent CMD" after each command, and ends on end of input.
// Built by the test with cc and `pkg-config --cflags --libs libsystemd`.
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

static int locked_hint = 0, on_battery = 0;
/// With "hold-hint": the session's property Gets held (referenced) until release-hint.
static int holding = 0, held_count = 0;
static sd_bus_message *held[8];
static char profile[256] = "balanced";
static const char *SESSION = "/org/freedesktop/login1/session/_31";

static int get_session(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)userdata; (void)error;
    return sd_bus_reply_method_return(m, "o", SESSION);
}

static int get_bool(sd_bus *bus, const char *path, const char *interface, const char *property,
                    sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    (void)bus; (void)path; (void)interface; (void)property; (void)error;
    return sd_bus_message_append(reply, "b", *(int *)userdata);
}

static int get_profile(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error) {
    (void)bus; (void)path; (void)interface; (void)property; (void)userdata; (void)error;
    return sd_bus_message_append(reply, "s", profile);
}

static const sd_bus_vtable manager[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_METHOD("GetSessionByPID", "u", "o", get_session, 0),
    SD_BUS_METHOD("GetSession", "s", "o", get_session, 0),
    SD_BUS_SIGNAL("PrepareForSleep", "b", 0),
    SD_BUS_VTABLE_END};

static const sd_bus_vtable session[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("LockedHint", "b", get_bool, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_SIGNAL("Lock", "", 0),
    SD_BUS_SIGNAL("Unlock", "", 0),
    SD_BUS_VTABLE_END};

static const sd_bus_vtable upower[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("OnBattery", "b", get_bool, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_VTABLE_END};

static const sd_bus_vtable profiles[] = {
    SD_BUS_VTABLE_START(0),
    SD_BUS_PROPERTY("ActiveProfile", "s", get_profile, 0, SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE),
    SD_BUS_VTABLE_END};

/// Holds a Get of the session's properties while `holding` (the bus's filter sees every message first).
static int hold_filter(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)userdata; (void)error;
    if (!holding || held_count == 8 || !sd_bus_message_is_method_call(m, "org.freedesktop.DBus.Properties", "Get")) return 0;
    const char *path = sd_bus_message_get_path(m);
    if (!path || strcmp(path, SESSION) != 0) return 0;
    held[held_count++] = sd_bus_message_ref(m);
    return 1;  // answered later, by release-hint
}

/// PropertiesChanged(interface, {name: value of `type`}, []) on `path`, the value as `type` says.
static int changed(sd_bus *bus, const char *path, const char *interface, const char *name, const char *type,
                   int number, const char *text) {
    sd_bus_message *m = NULL;
    int r = sd_bus_message_new_signal(bus, &m, path, "org.freedesktop.DBus.Properties", "PropertiesChanged");
    if (r >= 0) r = sd_bus_message_append(m, "s", interface);
    if (r >= 0) r = sd_bus_message_open_container(m, 'a', "{sv}");
    if (r >= 0) r = sd_bus_message_open_container(m, 'e', "sv");
    if (r >= 0) r = sd_bus_message_append(m, "s", name);
    if (r >= 0) r = sd_bus_message_open_container(m, 'v', type);
    if (r >= 0) r = type[0] == 'b' ? sd_bus_message_append(m, "b", number) : sd_bus_message_append(m, "s", text);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_close_container(m);
    if (r >= 0) r = sd_bus_message_append(m, "as", 0);
    if (r >= 0) r = sd_bus_send(bus, m, NULL);
    sd_bus_message_unref(m);
    return r;
}

static int command(sd_bus *bus, char *line) {
    line[strcspn(line, "\n")] = 0;
    int n = 0;
    char word[256] = "";
    if (strcmp(line, "lock") == 0) return sd_bus_emit_signal(bus, SESSION, "org.freedesktop.login1.Session", "Lock", "");
    if (strcmp(line, "unlock") == 0) return sd_bus_emit_signal(bus, SESSION, "org.freedesktop.login1.Session", "Unlock", "");
    if (strcmp(line, "release-hint") == 0) {
        int r = 0;
        holding = 0;
        for (int i = 0; i < held_count; i++) {
            if (r >= 0) r = sd_bus_reply_method_return(held[i], "v", "b", locked_hint);
            sd_bus_message_unref(held[i]);
        }
        held_count = 0;
        return r;
    }
    if (strcmp(line, "other-lock") == 0)
        return sd_bus_emit_signal(bus, "/org/freedesktop/login1/session/_32", "org.freedesktop.login1.Session", "Lock", "");
    if (sscanf(line, "sleep %d", &n) == 1)
        return sd_bus_emit_signal(bus, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep", "b", n);
    if (strcmp(line, "bad-sleep") == 0)
        return sd_bus_emit_signal(bus, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", "PrepareForSleep", "s", "yes");
    if (sscanf(line, "hint %d", &n) == 1) {
        locked_hint = n;
        return changed(bus, SESSION, "org.freedesktop.login1.Session", "LockedHint", "b", n, NULL);
    }
    if (sscanf(line, "battery %d", &n) == 1) {
        on_battery = n;
        return changed(bus, "/org/freedesktop/UPower", "org.freedesktop.UPower", "OnBattery", "b", n, NULL);
    }
    if (strcmp(line, "bad-battery") == 0)
        return changed(bus, "/org/freedesktop/UPower", "org.freedesktop.UPower", "OnBattery", "s", 0, "yes");
    if (sscanf(line, "profile %255s", word) == 1) {
        snprintf(profile, sizeof profile, "%s", word);
        return changed(bus, "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles", "ActiveProfile", "s", 0, word);
    }
    if (strcmp(line, "long-profile") == 0) {
        memset(word, 'x', 200);
        word[200] = 0;
        return changed(bus, "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles", "ActiveProfile", "s", 0, word);
    }
    return -22;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: fake ADDRESS [locked] [battery] [profile] [hold-hint]\n"); return 2; }
    if (argc > 2) locked_hint = atoi(argv[2]);
    if (argc > 3) on_battery = atoi(argv[3]);
    if (argc > 4) snprintf(profile, sizeof profile, "%s", argv[4]);
    if (argc > 5) holding = strcmp(argv[5], "hold-hint") == 0;
    setvbuf(stdout, NULL, _IOLBF, 0);
    sd_bus *bus = NULL;
    int r = sd_bus_new(&bus);
    if (r >= 0) r = sd_bus_set_address(bus, argv[1]);
    if (r >= 0) r = sd_bus_set_bus_client(bus, 1);
    if (r >= 0) r = sd_bus_start(bus);
    if (r >= 0) r = sd_bus_add_filter(bus, NULL, hold_filter, NULL);
    if (r >= 0) r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/login1", "org.freedesktop.login1.Manager", manager, NULL);
    if (r >= 0) r = sd_bus_add_object_vtable(bus, NULL, SESSION, "org.freedesktop.login1.Session", session, &locked_hint);
    if (r >= 0) r = sd_bus_add_object_vtable(bus, NULL, "/org/freedesktop/UPower", "org.freedesktop.UPower", upower, &on_battery);
    if (r >= 0) r = sd_bus_add_object_vtable(bus, NULL, "/net/hadess/PowerProfiles", "net.hadess.PowerProfiles", profiles, NULL);
    if (r >= 0) r = sd_bus_request_name(bus, "org.freedesktop.login1", 0);
    if (r >= 0) r = sd_bus_request_name(bus, "org.freedesktop.UPower", 0);
    if (r >= 0) r = sd_bus_request_name(bus, "net.hadess.PowerProfiles", 0);
    if (r < 0) { fprintf(stderr, "fake: bus setup failed: %s\n", strerror(-r)); return 1; }
    printf("ready\n");
    char line[512];
    for (;;) {
        while ((r = sd_bus_process(bus, NULL)) > 0) {}
        if (r < 0) { fprintf(stderr, "fake: %s\n", strerror(-r)); return 1; }
        sd_bus_flush(bus);
        struct pollfd fds[2] = {{.fd = 0, .events = POLLIN}, {.fd = sd_bus_get_fd(bus), .events = POLLIN}};
        if (poll(fds, 2, -1) < 0) continue;
        if (fds[0].revents) {
            if (!fgets(line, sizeof line, stdin)) break;
            r = command(bus, line);
            sd_bus_flush(bus);
            printf(r < 0 ? "failed %s (%s)\n" : "sent %s\n", line, strerror(r < 0 ? -r : 0));
        }
    }
    sd_bus_flush_close_unref(bus);
    return 0;
}
