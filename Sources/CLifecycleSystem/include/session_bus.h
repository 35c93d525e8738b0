// The session's events on the D-Bus system bus (logind, UPower, power-profiles), through sd-bus from
// libsystemd.so.0 loaded at run time with dlopen: building needs no libsystemd -dev package, and a
// machine without the library fails only when these functions are used. No sd-bus type leaves this
// file: the bus is an opaque lcs_bus, every message is decoded here into an lcs_bus_event.
//
// Threads: one thread at a time per lcs_bus (the host's loop thread). The handler is called only
// from inside lcs_bus_process.
#ifndef LIFECYCLE_SESSION_BUS_H
#define LIFECYCLE_SESSION_BUS_H

#include <stddef.h>
#include <stdint.h>

typedef struct lcs_bus lcs_bus;

/// What one bus message meant. `flag` carries the boolean of LOCKED_HINT, SLEEP and ON_BATTERY;
/// `text` the profile of PROFILE; `detail` says where it came from, or for MALFORMED and PROBLEM what
/// was wrong.
typedef enum {
    LCS_BUS_LOCK = 1,         // logind: the session's Lock signal
    LCS_BUS_UNLOCK = 2,       // logind: the session's Unlock signal
    LCS_BUS_LOCKED_HINT = 3,  // logind: the session's LockedHint property (initial value or PropertiesChanged)
    LCS_BUS_SLEEP = 4,        // logind: the manager's PrepareForSleep(b)
    LCS_BUS_ON_BATTERY = 5,   // UPower: OnBattery (initial value or PropertiesChanged)
    LCS_BUS_PROFILE = 6,      // power-profiles daemon: ActiveProfile (initial value or PropertiesChanged)
    LCS_BUS_MALFORMED = 7,    // a message of a watched kind whose types or sizes are wrong: ignored
    LCS_BUS_PROBLEM = 8,      // a call that failed (no logind session, no UPower): that part is off
    LCS_BUS_SESSION = 9,      // logind: the session followed from now on (`text`: its object path, at most 63 bytes)
} lcs_bus_event_kind;

typedef struct {
    int kind;          // lcs_bus_event_kind
    int flag;          // 0 or 1
    char text[64];     // NUL-terminated
    char detail[256];  // NUL-terminated
} lcs_bus_event;

typedef void (*lcs_bus_handler)(void *context, const lcs_bus_event *event);

/// The longest ActiveProfile accepted, in bytes; a longer one is MALFORMED.
#define LCS_BUS_MAX_PROFILE 63

/// Loads libsystemd.so.0 and its sd-bus functions (once per process; later calls return the first
/// result). 0 on success; otherwise -1 and `error` (`capacity` bytes) says which file or symbol is
/// missing, from dlerror.
int lcs_bus_load(char *error, size_t capacity);

/// Connects to `address` (a D-Bus address, e.g. `unix:path=/run/x`), or to the system bus when it is
/// NULL, and installs the matches and the initial property reads (all asynchronous: nothing here
/// waits for the bus). `pid` is the process whose logind session is watched (GetSessionByPID, then
/// GetSession("auto")). Needs lcs_bus_load first. 0 and `*out`, or a negative errno and `error`.
int lcs_bus_open(const char *address, int32_t pid, lcs_bus_handler handler, void *context, lcs_bus **out,
                 char *error, size_t capacity);

/// The descriptor to watch, the poll events it needs now (POLLIN, POLLOUT), and the CLOCK_MONOTONIC
/// time in µs by which lcs_bus_process must be called (UINT64_MAX: none). Read them again after
/// every lcs_bus_process.
int lcs_bus_fd(lcs_bus *bus);
int lcs_bus_events(lcs_bus *bus);
uint64_t lcs_bus_timeout(lcs_bus *bus);

/// Processes what is ready, without blocking, calling the handler for each event; returns after at
/// most `limit` steps (so a flood never holds the loop). >0: more may be ready, call again on the next
/// turn; 0: nothing left; <0: the connection failed (-errno), close it.
int lcs_bus_process(lcs_bus *bus, int limit);

/// Closes the connection and frees everything; the handler is never called again. NULL is ignored.
void lcs_bus_close(lcs_bus *bus);

#endif
