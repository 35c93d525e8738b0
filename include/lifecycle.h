#pragma once

// AppLifecycle — the public C ABI.
//
// One header for both users of the C ABI:
//   * observer plugins: shared objects the host opens with dlopen. A plugin exports one entry symbol
//     (`lc_plugin_entry`) returning its descriptor, receives its own read-only host-API table in
//     `init`, and is a delegate either through a delegate table registered from init (ABI 1.1,
//     lc_plugin_delegate_t: per-plugin state, completion tokens) or by exporting delegate functions
//     named after the UIApplicationDelegate methods (ABI 1.0, see "Delegate functions"). Plugins
//     never link against the host: they call it only through the table.
//   * C programs that link liblifecycle.so and drive the engine themselves (`lc_app_*`).
//
// Conventions (every function follows them):
//   * Versioned: LC_ABI_VERSION_MAJOR/MINOR. Every struct that crosses the boundary starts with
//     `struct_size`; structs only grow at the end, and the host zero-fills a shorter tail.
//   * Errors: functions return lc_status (LC_OK = 0, negative = error). `lc_last_error_message()`
//     gives a readable sentence for the last failure on the calling thread. Results go to trailing
//     out-pointers. A NULL pointer where one is required gives LC_ERR_INVALID_ARGUMENT, never a crash.
//   * Threads: each function ends its comment with a tag:
//       [main-thread]  only on the thread that runs the application's main run loop (the thread that
//                      called lc_app_create); elsewhere it returns LC_ERR_WRONG_THREAD.
//       [thread-safe]  any thread.
//     Every callback (observers, delegates, timers, posted work) runs on the main thread.
//   * Ownership: every pointer parameter and result says who owns it and how long it lives.
//   * Callbacks are (fn, void *ctx) pairs; the host never frees a ctx.

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// ---------------------------------------------------------------------------------------------
// Version

#define LC_ABI_VERSION_MAJOR 1
#define LC_ABI_VERSION_MINOR 7 // 1.1: interned names (lc_name_*, lc_app_observe_name, lc_app_post_name), the plugin delegate table (lc_plugin_delegate_t), owner-checked host API
                                // 1.2: scenes and Handoff (lc_scene, lc_scene_*, lc_app_scene, LC_NAME_SCENE_*, the scene and Handoff
                                //      delegate functions, the scene actions); fields appended to lc_config_t, lc_action_t,
                                //      lc_trace_event_t, lc_delegate_t, lc_plugin_delegate_t and lc_host_api_t
                                // 1.3: the hang budget (lc_config_t.hang_budget, budget_name "hang"), the nesting limit of
                                //      posts (LC_ERR_NESTING_LIMIT), the queue bound (LC_ERR_QUEUE_FULL), isolated plugins
                                //      (lc_app_load_plugin_with_options, lc_load_options_t)
                                // 1.4: plugins' quotas (LC_ERR_QUOTA)
                                // 1.5: scene:restoreInteractionStateWithUserActivity: (appended to lc_delegate_t and
                                //      lc_plugin_delegate_t, scene_restoreInteractionStateWithUserActivity), the
                                //      memory-warning limit (lc_config_t.memory_warning_limit), the host API's
                                //      is_protected_data_available and background_time_remaining, the actions
                                //      LC_ACTION_OPEN_REMOTE_NOTIFICATION and LC_ACTION_SCENE_CLOSE, the scene requests
                                //      (lc_app_request_scene_*, the host API's request_scene_*), the lists of scenes
                                //      and sessions and a session's role and userInfo (lc_app_scenes, lc_app_sessions,
                                //      lc_scene_get_session_role, lc_app_session_user_info, lc_app_set_session_user_info),
                                //      the older application methods (applicationDidFinishLaunching:, handleOpenURL:,
                                //      didReceiveLocalNotification:, the remote-notification registration's answer)
                                //      with LC_ACTION_LOCAL_NOTIFICATION, _OPEN_LOCAL_NOTIFICATION, _REMOTE_REGISTRATION
                                //      and lc_action_t.device_token; handleEventsForBackgroundURLSession:completionHandler:
                                //      (lc_complete_void_fn, LC_ACTION_URL_SESSION, lc_action_t.url_session)
                                // 1.6: isolated plugins frozen while the application is suspended (lc_load_options_t.freezer);
                                //      Low Power Mode and the thermal state (LC_NAME_POWER_STATE_DID_CHANGE,
                                //      LC_NAME_THERMAL_STATE_DID_CHANGE, lc_thermal_state, lc_app_is_low_power_mode_enabled,
                                //      lc_app_thermal_state, the host API's is_low_power_mode_enabled and thermal_state,
                                //      LC_ACTION_LOW_POWER_MODE and LC_ACTION_THERMAL_STATE with lc_action_t.low_power_mode
                                //      and .thermal_state)
                                // 1.7: a manual clock for tests (lc_clock, lc_config_t.clock appended, lc_app_advance,
                                //      lc_app_clock_seconds);
                                //      reloading a plugin in place (lc_app_reload_plugin, lc_reload_flags, LC_RELOAD_FORCE)

// A plugin or program built against (major, minor) runs on a host whose major is equal and whose
// minor is not older. Rationale: a newer minor only appends fields and functions.
#define LC_ABI_VERSION_IS_COMPATIBLE(major, minor) \
    ((major) == LC_ABI_VERSION_MAJOR && (minor) <= LC_ABI_VERSION_MINOR)

#if defined(__GNUC__) || defined(__clang__)
#define LC_EXPORT __attribute__((visibility("default")))
#else
#define LC_EXPORT
#endif

/// The ABI version of the library actually loaded (may be newer than this header). [thread-safe]
LC_EXPORT void lc_abi_version(uint32_t *major, uint32_t *minor);

// ---------------------------------------------------------------------------------------------
// Status codes

typedef int32_t lc_status;
enum {
    LC_OK = 0,
    LC_ERR_INVALID_ARGUMENT = -1,        // a NULL pointer, a too-small struct_size, a value out of range
    LC_ERR_ILLEGAL_ACTION = -2,          // the action is not legal in the current state; nothing changed
    LC_ERR_ACTION_IN_PROGRESS = -3,      // an action was started from inside a callback of another
    LC_ERR_BACKGROUND_MODE_MISSING = -4, // the action needs a background mode the app does not declare
    LC_ERR_UNKNOWN_NAME = -5,            // not a standard notification name, alias, or dotted custom name
    LC_ERR_INVALID_NAME = -6,            // empty, too long, or containing white space
    LC_ERR_WRONG_THREAD = -7,            // a [main-thread] function called from another thread
    LC_ERR_NOT_FOUND = -8,               // no such observer, task, key, plugin or delegate
    LC_ERR_TYPE_MISMATCH = -9,           // a dictionary value exists but has another type
    LC_ERR_ARCHIVE = -10,                // a state archive could not be read or written
    LC_ERR_SYSTEM = -11,                 // a system call failed (the message names it)
    LC_ERR_PLUGIN_REFUSED = -12,         // a plugin failed a check or its init; the message says why
    LC_ERR_VERSION = -13,                // ABI versions do not match
    LC_ERR_DUPLICATE = -14,              // an id that is already in use
    LC_ERR_INTERNAL = -15,
    LC_ERR_QUEUE_FULL = -16,             // this thread has too many posts waiting for the main loop; nothing queued
    // ABI 1.3
    LC_ERR_NESTING_LIMIT = -17,          // a post from inside 64 nested dispatches (an observer re-posting from
                                         // its own callback, …): refused, nothing delivered; the dispatches
                                         // under way go on. The trace has an `error` event "post refused".
    // ABI 1.4
    LC_ERR_QUOTA = -18,                  // a plugin is at one of its quotas (observers, timers, open background
                                         // tasks, custom names: see lc_host_api_t, "Quotas"); nothing changed.
                                         // The trace has a `quota` event naming the plugin and the quota.
};

/// The constant's name, e.g. "LC_ERR_ILLEGAL_ACTION". Static storage. [thread-safe]
LC_EXPORT const char *lc_status_name(lc_status status);
/// A generic sentence for the code. Static storage. [thread-safe]
LC_EXPORT const char *lc_status_message(lc_status status);
/// The message of the last failed lc_ call on this thread ("" if none). Owned by the library,
/// valid until the next failing lc_ call on this thread. [thread-safe]
LC_EXPORT const char *lc_last_error_message(void);

// ---------------------------------------------------------------------------------------------
// Basic types

typedef struct lc_app lc_app;       // an application: engine, notification center, main run loop
typedef struct lc_dict lc_dict;     // a userInfo / launch options / archive dictionary
typedef struct lc_list lc_list;     // a list value inside a dictionary
typedef struct lc_plugin lc_plugin; // a loaded plugin, as the host sees it
typedef struct lc_scene lc_scene;   // ABI 1.2: a scene of a scene-based application (see "Scenes")

typedef uint32_t lc_state;
enum {
    LC_STATE_NOT_RUNNING = 0,
    LC_STATE_INACTIVE = 1,
    LC_STATE_ACTIVE = 2,
    LC_STATE_BACKGROUND = 3,
    LC_STATE_SUSPENDED = 4,
};

/// "not-running", "inactive", "active", "background", "suspended". Static storage. [thread-safe]
LC_EXPORT const char *lc_state_name(lc_state state);

/// ABI 1.2: the state of one scene (Apple, "Managing your app's life cycle").
typedef uint32_t lc_scene_state;
enum {
    LC_SCENE_STATE_UNATTACHED = 0,          // not connected (before willConnect, after didDisconnect)
    LC_SCENE_STATE_FOREGROUND_INACTIVE = 1, // on screen, no input
    LC_SCENE_STATE_FOREGROUND_ACTIVE = 2,   // on screen, receiving input
    LC_SCENE_STATE_BACKGROUND = 3,          // off screen, running
    LC_SCENE_STATE_SUSPENDED = 4,           // off screen, running no code
};

/// ABI 1.2. "unattached", "foreground-inactive", "foreground-active", "background", "suspended"
/// ("unknown" outside the enum). Static storage. [thread-safe]
LC_EXPORT const char *lc_scene_state_name(lc_scene_state state);

typedef uint32_t lc_fetch_result;
enum {
    LC_FETCH_NEW_DATA = 0,
    LC_FETCH_NO_DATA = 1,
    LC_FETCH_FAILED = 2,
};

typedef uint32_t lc_memory_level;
enum {
    LC_MEMORY_NORMAL = 0,
    LC_MEMORY_WARNING = 1,
    LC_MEMORY_CRITICAL = 2,
};

typedef uint32_t lc_log_level;
enum {
    LC_LOG_DEBUG = 0,
    LC_LOG_INFO = 1,
    LC_LOG_WARNING = 2,
    LC_LOG_ERROR = 3,
};

typedef uint32_t lc_value_type;
enum {
    LC_VALUE_NONE = 0, // the key is absent
    LC_VALUE_STRING = 1,
    LC_VALUE_INT = 2,
    LC_VALUE_DOUBLE = 3,
    LC_VALUE_BOOL = 4,
    LC_VALUE_BYTES = 5,
    LC_VALUE_LIST = 6,
    LC_VALUE_DICT = 7,
};

typedef uint64_t lc_observer_token; // 0 is never a valid token
typedef uint64_t lc_task_id;        // 0 is never a valid task
typedef uint64_t lc_source_id;      // a timer or fd source; 0 is never valid

// ---------------------------------------------------------------------------------------------
// Dictionaries and lists
//
// A dictionary keeps its keys in insertion order. Dictionaries created with lc_dict_create are
// owned by the caller (lc_dict_destroy). Dictionaries handed to callbacks are owned by the host and
// valid until the callback returns; `const` ones must not be changed. Strings, bytes, nested
// dictionaries and lists read out of a dictionary are owned by it and valid as long as it is, and
// until it is next changed. Setting copies the value in. Every function here is [thread-safe] on
// distinct dictionaries; one dictionary must not be used from two threads at once.
//
// Limits, the same for every dictionary and in every mode (in the host's process and isolated): lists
// and dictionaries nest at most 64 levels below a dictionary's own entries, and its entries take at
// most 67108844 bytes (64 MiB - 20) in the archive encoding (each entry 8 + the key's bytes + 9 + the
// value's body: 8 for an int or a double, 1 for a bool, the bytes of a string or a byte string, the
// items or entries of a list or dictionary). A setter or an append that would break one returns
// LC_ERR_INVALID_ARGUMENT and changes nothing; lc_last_error_message() names the key and the limit
// ("lc_dict_set_dict: 'deep' would make the dictionary 65 levels deep (at most 64); nothing was
// set"). Sizes are checked before the value is read. Posting a dictionary over them (only one the
// host made can be: connection options wrap an activity 3 levels down) is refused the same way. In a
// `coder` (state preservation), a refused setter means the state was not encoded: nothing is saved
// and the previous archive is kept (the trace's `error archive` line says so).

/// A new, empty dictionary, owned by the caller. [thread-safe]
LC_EXPORT lc_dict *lc_dict_create(void);
/// A deep copy, owned by the caller. NULL when `dict` is NULL. [thread-safe]
LC_EXPORT lc_dict *lc_dict_copy(const lc_dict *dict);
/// Frees a dictionary made by lc_dict_create or lc_dict_copy. NULL is ignored. [thread-safe]
LC_EXPORT void lc_dict_destroy(lc_dict *dict);

LC_EXPORT size_t lc_dict_count(const lc_dict *dict);
/// The key at `index` (insertion order), or NULL when out of range. [thread-safe]
LC_EXPORT const char *lc_dict_key_at(const lc_dict *dict, size_t index);
/// The type of the value under `key`; LC_VALUE_NONE when absent. [thread-safe]
LC_EXPORT lc_value_type lc_dict_type(const lc_dict *dict, const char *key);
/// A JSON rendering, owned by the dictionary (valid until it changes or is destroyed). [thread-safe]
LC_EXPORT const char *lc_dict_json(const lc_dict *dict);

// Getters: LC_ERR_NOT_FOUND when the key is absent, LC_ERR_TYPE_MISMATCH when it holds another type
// (a double getter also accepts an integer).
LC_EXPORT lc_status lc_dict_get_string(const lc_dict *dict, const char *key, const char **out);
LC_EXPORT lc_status lc_dict_get_int(const lc_dict *dict, const char *key, int64_t *out);
LC_EXPORT lc_status lc_dict_get_double(const lc_dict *dict, const char *key, double *out);
LC_EXPORT lc_status lc_dict_get_bool(const lc_dict *dict, const char *key, bool *out);
LC_EXPORT lc_status lc_dict_get_bytes(const lc_dict *dict, const char *key, const uint8_t **data, size_t *length);
LC_EXPORT lc_status lc_dict_get_dict(const lc_dict *dict, const char *key, const lc_dict **out);
LC_EXPORT lc_status lc_dict_get_list(const lc_dict *dict, const char *key, const lc_list **out);

// Setters replace an existing key in place or append a new one.
LC_EXPORT lc_status lc_dict_set_string(lc_dict *dict, const char *key, const char *value);
LC_EXPORT lc_status lc_dict_set_int(lc_dict *dict, const char *key, int64_t value);
LC_EXPORT lc_status lc_dict_set_double(lc_dict *dict, const char *key, double value);
LC_EXPORT lc_status lc_dict_set_bool(lc_dict *dict, const char *key, bool value);
LC_EXPORT lc_status lc_dict_set_bytes(lc_dict *dict, const char *key, const void *data, size_t length);
/// Copies `value` in. [thread-safe]
LC_EXPORT lc_status lc_dict_set_dict(lc_dict *dict, const char *key, const lc_dict *value);
/// Copies `value` in. [thread-safe]
LC_EXPORT lc_status lc_dict_set_list(lc_dict *dict, const char *key, const lc_list *value);
/// LC_ERR_NOT_FOUND when absent. [thread-safe]
LC_EXPORT lc_status lc_dict_remove(lc_dict *dict, const char *key);

/// A new, empty list, owned by the caller (lc_list_destroy). [thread-safe]
LC_EXPORT lc_list *lc_list_create(void);
LC_EXPORT void lc_list_destroy(lc_list *list);
LC_EXPORT size_t lc_list_count(const lc_list *list);
/// LC_VALUE_NONE when out of range. [thread-safe]
LC_EXPORT lc_value_type lc_list_type_at(const lc_list *list, size_t index);
LC_EXPORT lc_status lc_list_get_string(const lc_list *list, size_t index, const char **out);
LC_EXPORT lc_status lc_list_get_int(const lc_list *list, size_t index, int64_t *out);
LC_EXPORT lc_status lc_list_get_double(const lc_list *list, size_t index, double *out);
LC_EXPORT lc_status lc_list_get_bool(const lc_list *list, size_t index, bool *out);
LC_EXPORT lc_status lc_list_get_dict(const lc_list *list, size_t index, const lc_dict **out);
LC_EXPORT lc_status lc_list_append_string(lc_list *list, const char *value);
LC_EXPORT lc_status lc_list_append_int(lc_list *list, int64_t value);
LC_EXPORT lc_status lc_list_append_double(lc_list *list, double value);
LC_EXPORT lc_status lc_list_append_bool(lc_list *list, bool value);
/// Copies `value` in. [thread-safe]
LC_EXPORT lc_status lc_list_append_dict(lc_list *list, const lc_dict *value);

// ---------------------------------------------------------------------------------------------
// Notifications
//
// Names: the standard short names ("didEnterBackground", "significantTimeChange", ...), UIKit's long
// names as aliases ("UIApplicationDidEnterBackgroundNotification"), or custom reverse-DNS names that
// contain a dot ("com.example.sync"). Anything else is LC_ERR_UNKNOWN_NAME with a suggestion.

/// What an observer receives. Owned by the host, valid until the observer returns.
typedef struct lc_notification {
    uint32_t struct_size;
    uint32_t name_id;           // the interned name (stable for the process)
    const char *name;           // the canonical name; static storage
    const void *sender;         // the sender's identity, or NULL; never dereferenced by the host
    const lc_dict *user_info;   // NULL when the poster gave none; read-only (see lc_app_post)
} lc_notification_t;

/// An observer: called on the main thread, in registration order among the name's observers.
typedef void (*lc_observer_fn)(const lc_notification_t *notification, void *ctx);

// Interned names (ABI 1.1). A name interned once is a small integer: posting and observing by id
// skip the string lookup. Ids are process-wide (every lc_app shares them) and stable for the life of
// the process; the standard names have the fixed ids below (never interned: they are there from the
// start), equal to `name_id` in the notifications observers receive. A UIKit alias has the id of its
// short name.

/// An interned notification name; 0 is never valid.
typedef uint32_t lc_name;
enum {
    LC_NAME_DID_FINISH_LAUNCHING = 1,
    LC_NAME_DID_BECOME_ACTIVE = 2,
    LC_NAME_WILL_RESIGN_ACTIVE = 3,
    LC_NAME_DID_ENTER_BACKGROUND = 4,
    LC_NAME_WILL_ENTER_FOREGROUND = 5,
    LC_NAME_WILL_TERMINATE = 6,
    LC_NAME_DID_RECEIVE_MEMORY_WARNING = 7,
    LC_NAME_SIGNIFICANT_TIME_CHANGE = 8,
    LC_NAME_PROTECTED_DATA_WILL_BECOME_UNAVAILABLE = 9,
    LC_NAME_PROTECTED_DATA_DID_BECOME_AVAILABLE = 10,
    LC_NAME_CURRENT_LOCALE_DID_CHANGE = 11,
    LC_NAME_USER_DEFAULTS_DID_CHANGE = 12,
    LC_NAME_BATTERY_LEVEL_DID_CHANGE = 13,
    LC_NAME_BATTERY_STATE_DID_CHANGE = 14,
    LC_NAME_ORIENTATION_DID_CHANGE = 15,
    LC_NAME_PROXIMITY_STATE_DID_CHANGE = 16,
    LC_NAME_ACCESSORY_DID_CONNECT = 17,
    LC_NAME_ACCESSORY_DID_DISCONNECT = 18,
    LC_NAME_SCREEN_DID_CONNECT = 19,
    LC_NAME_SCREEN_DID_DISCONNECT = 20,
    LC_NAME_SCREEN_MODE_DID_CHANGE = 21,
    LC_NAME_UBIQUITY_IDENTITY_DID_CHANGE = 22,
    // ABI 1.2: the six UIScene notifications, posted per scene with the scene as sender
    // (note->sender is the scene's lc_scene *; see "Scenes").
    LC_NAME_SCENE_WILL_CONNECT = 23,
    LC_NAME_SCENE_DID_DISCONNECT = 24,
    LC_NAME_SCENE_DID_ACTIVATE = 25,
    LC_NAME_SCENE_WILL_DEACTIVATE = 26,
    LC_NAME_SCENE_WILL_ENTER_FOREGROUND = 27,
    LC_NAME_SCENE_DID_ENTER_BACKGROUND = 28,
    // ABI 1.6: Foundation's ProcessInfo notifications (NSProcessInfoPowerStateDidChangeNotification,
    // NSProcessInfoThermalStateDidChangeNotification), posted after the value changed, with the
    // application as sender; coalesced while suspended. Custom names get ids above 30.
    LC_NAME_POWER_STATE_DID_CHANGE = 29,
    LC_NAME_THERMAL_STATE_DID_CHANGE = 30,
};

/// Interns `name` (a standard short name, a UIKit alias, or a custom dotted name) and writes its id
/// to `*out`. `name` is read during the call only. Errors as lc_app_observe: LC_ERR_UNKNOWN_NAME for
/// an undotted name that is not standard (the last error message suggests the closest standard
/// name), LC_ERR_INVALID_NAME for an empty, over-long (> 255 bytes), non-UTF-8 or white-space-
/// containing name, LC_ERR_INVALID_ARGUMENT for a NULL argument; `*out` is untouched on error.
/// An already-interned name takes no lock. [thread-safe]
LC_EXPORT lc_status lc_name_intern(const char *name, lc_name *out);
/// The canonical spelling of an interned name (the short name for a standard one, never the alias).
/// Static storage owned by the library, never freed; NULL for 0 or an id never issued. [thread-safe]
LC_EXPORT const char *lc_name_string(lc_name name);

// ---------------------------------------------------------------------------------------------
// Configuration

typedef uint32_t lc_watchdog_policy;
enum {
    LC_WATCHDOG_TERMINATE = 0, // as iOS: the app is killed, no willTerminate
    LC_WATCHDOG_REPORT = 1,    // logged and traced; the app goes on
};

typedef uint32_t lc_background_modes; // bit set
enum {
    LC_BACKGROUND_AUDIO = 1u << 0,
    LC_BACKGROUND_LOCATION = 1u << 1,
    LC_BACKGROUND_VOIP = 1u << 2,
    LC_BACKGROUND_EXTERNAL_ACCESSORY = 1u << 3,
    LC_BACKGROUND_BLUETOOTH_CENTRAL = 1u << 4,
    LC_BACKGROUND_BLUETOOTH_PERIPHERAL = 1u << 5,
    LC_BACKGROUND_FETCH = 1u << 6,
    LC_BACKGROUND_REMOTE_NOTIFICATION = 1u << 7,
    LC_BACKGROUND_PROCESSING = 1u << 8,
};

/// One budget overrun. Owned by the host, valid during the callback.
typedef struct lc_watchdog_report {
    uint32_t struct_size;
    const char *observer;    // the delegate or plugin id ("" when unknown)
    const char *event;       // the callback, notification, completion handler or background task
    const char *budget_name; // "launch", "didEnterBackground", "willTerminate", "completionHandler", "backgroundTask",
                             // "hang" (1.3: one callback outside the budgeted phases)
    double budget_seconds;
    double elapsed_seconds;
    lc_watchdog_policy policy;
    const char *message;     // one readable sentence
} lc_watchdog_report_t;

typedef void (*lc_watchdog_fn)(const lc_watchdog_report_t *report, void *ctx);

/// ABI 1.7. The clock an application's run loop, budgets, watchdog, background-task expiry,
/// completion-handler timeouts, timers and trace times run on.
/// - LC_CLOCK_MONOTONIC (the default): CLOCK_MONOTONIC, real time.
/// - LC_CLOCK_MANUAL: time moves only by lc_app_advance, for tests ("the task ends when its 30 s
///   budget expires" without waiting 30 s, the same way every run). The loop's other sources stay live
///   in real time: posted work (lc_app_post, lc_app_perform_async), descriptors, signals. The watchdog
///   runs no thread: a phase (launch, didEnterBackground, willTerminate) overruns when the clock passes
///   its budget, a callback hangs only when the clock moves by the hang budget while it runs (an
///   lc_app_advance from inside the callback, which stands for a slow callback), and each is reported
///   (on_watchdog, on the main thread) as the clock passes the deadline. lc_app_run_for and
///   lc_app_next_timeout_ms measure real time (no timer falls due while they wait).
///   (docs/lifecycle.md, decision 58.)
typedef enum lc_clock { LC_CLOCK_MONOTONIC = 0, LC_CLOCK_MANUAL = 1 } lc_clock;

typedef uint32_t lc_scene_manifest_flags; // ABI 1.2, bit set
enum {
    LC_SCENE_MANIFEST = 1u << 0,              // the application is scene-based
    LC_SCENE_MANIFEST_SINGLE_SCENE = 1u << 1, // at most one scene connected at a time
};

// lc_app_create refuses a field outside its range with LC_ERR_INVALID_ARGUMENT, the message naming the
// field, the value and what is allowed: a watchdog_policy other than the two below, a background_modes
// or scene_manifest bit the header does not define (or LC_SCENE_MANIFEST_SINGLE_SCENE without
// LC_SCENE_MANIFEST), exits_on_suspend other than 0 or 1, an empty, relative or non-UTF-8 archive_directory.
typedef struct lc_config {
    uint32_t struct_size;              // sizeof(lc_config_t)
    lc_watchdog_policy watchdog_policy; // LC_WATCHDOG_TERMINATE or LC_WATCHDOG_REPORT
    lc_background_modes background_modes; // LC_BACKGROUND_* bits only
    uint32_t exits_on_suspend;         // UIApplicationExitsOnSuspend: 0 or 1
    // Budgets in seconds; 0 keeps the default (launch 5, didEnterBackground 5, willTerminate 5,
    // completion handlers 30, background time 30, expiration warning 5). Otherwise above 0 and at
    // most 9223372036: lc_app_create refuses a negative, NaN, infinite or larger budget
    // (LC_ERR_INVALID_ARGUMENT, naming the field).
    double launch_budget;
    double did_enter_background_budget;
    double will_terminate_budget;
    double completion_handler_budget;
    double background_task_budget;
    double expiration_warning;
    const char *archive_directory;     // NULL: no state preservation; else an absolute path (UTF-8). Copied.
    // Called for every overrun as soon as it is noticed, on the watchdog thread or the main thread:
    // the callback that overran may still be running. [any thread]
    lc_watchdog_fn on_watchdog;
    void *on_watchdog_ctx;
    // Appended in 1.2 (a shorter struct keeps the default, 0: not scene-based). UIKit's
    // UIApplicationSceneManifest: LC_SCENE_MANIFEST makes the application scene-based; add
    // LC_SCENE_MANIFEST_SINGLE_SCENE for UIApplicationSupportsMultipleScenes = NO.
    lc_scene_manifest_flags scene_manifest;
    // Appended in 1.3 (a shorter struct keeps the default). The main-thread hang budget in seconds: any
    // one callback outside the launch, didEnterBackground and willTerminate phases (an observer, a
    // delegate function, an expiration handler) that runs longer is reported to on_watchdog (budget
    // "hang") and, under LC_WATCHDOG_TERMINATE, kills the application (the callback cannot be
    // unwound: the app stops once it returns). 0 keeps the default, 5. Measured by sampling: reported
    // within a quarter of the budget (at most 1 s) after it ends; on a manual clock (1.7), exactly as the
    // clock passes it while the callback runs (see lc_clock).
    double hang_budget;
    // Appended in 1.5. The memory-warning escalation policy: after this many memory warnings in a row
    // without relief (an LC_MEMORY_NORMAL warning relieves), the next one terminates the application
    // outright, with no callback (state reason "terminated outright: memory still short after N memory
    // warnings …"; docs/lifecycle.md, decision 50). 0 (the default): never. At most 1000.
    uint32_t memory_warning_limit;
    // Appended in 1.7 (a shorter struct keeps the default, LC_CLOCK_MONOTONIC). LC_CLOCK_MANUAL: time
    // moves only by lc_app_advance (see lc_clock). lc_app_create refuses another value.
    lc_clock clock;
} lc_config_t;

/// Fills `config` with the defaults (struct_size included). [thread-safe]
LC_EXPORT void lc_config_init(lc_config_t *config);

// ---------------------------------------------------------------------------------------------
// The application

/// Creates an application whose main run loop is bound to the calling thread: that thread becomes
/// its main thread. `config` may be NULL (defaults); it is copied. `*out` is owned by the caller
/// (lc_app_destroy). [thread-safe: the caller's thread becomes the main thread]
LC_EXPORT lc_status lc_app_create(const lc_config_t *config, lc_app **out);
/// Unloads its plugins (deinit), drops its delegates and observers, and frees it. NULL is ignored.
/// [main-thread] From another thread it does nothing (the application stays, a leak rather than a
/// race) and lc_last_error_message() says so.
LC_EXPORT void lc_app_destroy(lc_app *app);

/// The current state; LC_STATE_NOT_RUNNING for NULL. [main-thread]
LC_EXPORT lc_state lc_app_state(const lc_app *app);
/// Whether the device is locked / protected data is available. [main-thread]
LC_EXPORT bool lc_app_is_device_locked(const lc_app *app);
LC_EXPORT bool lc_app_is_protected_data_available(const lc_app *app);

/// ABI 1.6. The device's thermal state (Foundation's ProcessInfo.ThermalState), coolest first.
typedef enum {
    LC_THERMAL_NOMINAL = 0,
    LC_THERMAL_FAIR = 1,
    LC_THERMAL_SERIOUS = 2,
    LC_THERMAL_CRITICAL = 3,
} lc_thermal_state;

/// ABI 1.6. Whether Low Power Mode is on (ProcessInfo.isLowPowerModeEnabled), and the thermal state
/// (ProcessInfo.thermalState): the device's state, kept across termination; LC_NAME_POWER_STATE_DID_CHANGE
/// and LC_NAME_THERMAL_STATE_DID_CHANGE follow each change. false / LC_THERMAL_NOMINAL for NULL. [main-thread]
LC_EXPORT bool lc_app_is_low_power_mode_enabled(const lc_app *app);
LC_EXPORT lc_thermal_state lc_app_thermal_state(const lc_app *app);

// Actions: the inputs a system would produce. Each runs its whole sequence (delegates, notifications)
// before returning. An action that is illegal in the current state returns LC_ERR_ILLEGAL_ACTION, and
// lc_last_error_message() names the action and the state; nothing changes.
typedef uint32_t lc_action_kind;
enum {
    LC_ACTION_LAUNCH = 0,            // options: launch options (may be NULL)
    LC_ACTION_LAUNCH_BACKGROUND = 1, // options: launch options (may be NULL)
    LC_ACTION_INTERRUPT = 2,         // an alert-based interruption begins
    LC_ACTION_DISMISS = 3,           // the interruption is dismissed
    LC_ACTION_ACCEPT = 4,            // the interruption is taken (the app goes to the background)
    LC_ACTION_HOME = 5,
    LC_ACTION_FOREGROUND = 6,        // return to the app
    LC_ACTION_LOCK = 7,
    LC_ACTION_UNLOCK = 8,
    LC_ACTION_MEMORY_WARNING = 9,    // memory_level
    LC_ACTION_TIME_CHANGE = 10,      // significant time change
    LC_ACTION_OPEN_URL = 11,         // url (required), source_application, annotation
    LC_ACTION_FETCH = 12,            // background fetch
    LC_ACTION_REMOTE_NOTIFICATION = 13, // options: the payload (may be NULL)
    LC_ACTION_TERMINATE = 14,
    LC_ACTION_PURGE = 15,
    // ABI 1.2: scenes (a scene-based application only; `scene` names the scene, required) ...
    LC_ACTION_SCENE_CONNECT = 16,            // the user asks for scene `scene` (to the foreground)
    LC_ACTION_SCENE_CONNECT_BACKGROUND = 17, // the system asks for it (to the background)
    LC_ACTION_SCENE_ACTIVATE = 18,
    LC_ACTION_SCENE_DEACTIVATE = 19,
    LC_ACTION_SCENE_BACKGROUND = 20,
    LC_ACTION_SCENE_FOREGROUND = 21,
    LC_ACTION_SCENE_DISCONNECT = 22,
    LC_ACTION_SCENE_DISCARD = 23,            // the session is discarded (disconnecting its scene)
    // ... and Handoff (`scene` optional: NULL is the frontmost scene, or the application without scenes)
    LC_ACTION_CONTINUE_USER_ACTIVITY = 24,   // activity (required)
    LC_ACTION_FAIL_TO_CONTINUE_USER_ACTIVITY = 25, // activity (its "activityType"), error (required)
    LC_ACTION_UPDATE_USER_ACTIVITY = 26,     // activity (required)
    // ABI 1.5
    LC_ACTION_OPEN_REMOTE_NOTIFICATION = 27, // options: the payload (may be NULL); the user opens the app from
                                             // the notification's alert (docs/lifecycle.md, decision 51)
    LC_ACTION_SCENE_CLOSE = 28,              // scene (required): the user swipes a foreground scene away in the
                                             // app switcher (decision 52)
    LC_ACTION_LOCAL_NOTIFICATION = 29,       // options: its userInfo (may be NULL): a local notification fires
    LC_ACTION_OPEN_LOCAL_NOTIFICATION = 30,  // options: its userInfo: the user opens the app from its alert
    LC_ACTION_REMOTE_REGISTRATION = 31,      // device_token (hexadecimal) or error: the answer to the app's
                                             // remote-notification registration (decision 54)
    LC_ACTION_URL_SESSION = 32,              // url_session (required): the transfers of that background URL
                                             // session finished; the app is launched or woken in the
                                             // background (decision 55)
    // ABI 1.6
    LC_ACTION_LOW_POWER_MODE = 33,           // low_power_mode: Low Power Mode turns on (true) or off; the
                                             // device's state, legal in every state (decision 57)
    LC_ACTION_THERMAL_STATE = 34,            // thermal_state: the device's thermal state changes (decision 57)
};

// A shorter (older or trimmed) struct is accepted as long as it holds struct_size and kind (8 bytes):
// the fields it lacks count as zero (NULL options, LC_MEMORY_NORMAL, no url), like lc_config_t.
typedef struct lc_action {
    uint32_t struct_size;            // sizeof(lc_action_t), or at least offsetof(lc_action_t, options)
    lc_action_kind kind;
    const lc_dict *options;          // launch options, or a remote notification's payload; borrowed
    lc_memory_level memory_level;
    const char *url;                 // borrowed
    const char *source_application;  // borrowed, may be NULL
    const lc_dict *annotation;       // borrowed, may be NULL
    // Appended in 1.2 (a shorter struct reads them as NULL).
    const char *scene;               // borrowed: the scene of a scene action (required), of a launch, open-url or
                                     // activity (may be NULL: the default or frontmost scene)
    const lc_dict *activity;         // borrowed: a user activity, {"activityType": string (required, non-empty),
                                     // "title": string (optional), "userInfo": dictionary (optional)}
    const char *error;               // borrowed: why the activity could not be continued (FAIL_TO_CONTINUE), or
                                     // why the remote-notification registration failed (REMOTE_REGISTRATION, 1.5)
    // Appended in 1.5.
    const char *device_token;        // borrowed: the device token in hexadecimal (REMOTE_REGISTRATION)
    const char *url_session;         // borrowed: the background URL session's identifier (URL_SESSION)
    // Appended in 1.6.
    bool low_power_mode;             // LOW_POWER_MODE: on (true) or off
    lc_thermal_state thermal_state;  // THERMAL_STATE: LC_THERMAL_NOMINAL to LC_THERMAL_CRITICAL
} lc_action_t;

/// Performs an action. [main-thread]
LC_EXPORT lc_status lc_app_perform(lc_app *app, const lc_action_t *action);
/// Performs an action with no arguments (options NULL, level WARNING): a kind that requires one (OPEN_URL,
/// the scene and activity kinds, REMOTE_REGISTRATION, URL_SESSION) is refused as lc_app_perform refuses it. [main-thread]
LC_EXPORT lc_status lc_app_perform_simple(lc_app *app, lc_action_kind kind);

// Notifications

/// Observes `name` (optionally only from `sender`; NULL: any). Writes the token to `*out` (may be NULL). [main-thread]
LC_EXPORT lc_status lc_app_observe(lc_app *app, const char *name, const void *sender, lc_observer_fn fn, void *ctx,
                                   lc_observer_token *out);
/// Removes an observer; once this returns it is never called again, even mid-dispatch. O(log n) in the
/// name's observers, in any order of removal. [main-thread]
LC_EXPORT lc_status lc_app_remove_observer(lc_app *app, lc_observer_token token);
/// Posts a notification. On the main thread observers have run when it returns; from another thread
/// it is delivered on the main run loop, in this thread's post order. `user_info` may be NULL; the
/// caller keeps it. Posted on the main thread and delivered at once, observers receive the caller's
/// dictionary itself (no copy; they must not change it); a post from another thread, or one held
/// while the application is suspended, carries a copy taken now. From another thread,
/// LC_ERR_QUEUE_FULL (nothing queued) when that thread already has 65536 messages waiting for the
/// main loop, or all threads 1048576: retry after the loop has run, coalesce, or drop. On the main
/// thread from inside 64 nested dispatches, LC_ERR_NESTING_LIMIT (1.3), nothing delivered. A
/// `user_info` over the dictionary limits (see "Dictionaries and lists"): LC_ERR_INVALID_ARGUMENT,
/// nothing posted. [thread-safe]
LC_EXPORT lc_status lc_app_post(lc_app *app, const char *name, const void *sender, const lc_dict *user_info);
/// lc_app_observe by interned id (see lc_name_intern). LC_ERR_UNKNOWN_NAME for 0 or an id never
/// issued (the message names the id). Writes the token to `*out` (may be NULL). [main-thread]
LC_EXPORT lc_status lc_app_observe_name(lc_app *app, lc_name name, const void *sender, lc_observer_fn fn, void *ctx,
                                        lc_observer_token *out);
/// lc_app_post by interned id: the fast path, no string lookup and no allocation without
/// `user_info`. On the main thread observers have run when it returns; from another thread it is
/// queued and delivered on the main run loop in this thread's post order (with lc_app_post's and
/// lc_app_perform_async's). `user_info` as for lc_app_post; `sender` is never dereferenced.
/// LC_ERR_UNKNOWN_NAME for 0 or an id never issued (the message names the id); LC_ERR_QUEUE_FULL
/// from another thread over the queue's bound and LC_ERR_NESTING_LIMIT, as lc_app_post. [thread-safe]
LC_EXPORT lc_status lc_app_post_name(lc_app *app, lc_name name, const void *sender, const lc_dict *user_info);

// Delegates implemented in C. Any function pointer may be NULL (not implemented). Dictionaries are
// owned by the host and valid during the call; `coder` dictionaries are the state archive.
typedef void (*lc_completion_fn)(lc_fetch_result result);

typedef struct lc_delegate {
    uint32_t struct_size; // sizeof(lc_delegate_t)
    void *ctx;            // passed to every function
    bool (*will_finish_launching)(lc_app *app, const lc_dict *options, void *ctx);
    bool (*did_finish_launching)(lc_app *app, const lc_dict *options, void *ctx);
    void (*did_become_active)(lc_app *app, void *ctx);
    void (*will_resign_active)(lc_app *app, void *ctx);
    void (*did_enter_background)(lc_app *app, void *ctx);
    void (*will_enter_foreground)(lc_app *app, void *ctx);
    void (*will_terminate)(lc_app *app, void *ctx);
    void (*did_receive_memory_warning)(lc_app *app, void *ctx);
    void (*significant_time_change)(lc_app *app, void *ctx);
    void (*protected_data_will_become_unavailable)(lc_app *app, void *ctx);
    void (*protected_data_did_become_available)(lc_app *app, void *ctx);
    bool (*open_url)(lc_app *app, const char *url, const char *source_application, const lc_dict *annotation, void *ctx);
    // Call `complete(ctx_of_completion, result)` exactly once, from any thread, within 30 s. A result
    // outside lc_fetch_result counts as LC_FETCH_FAILED.
    void (*perform_fetch)(lc_app *app, void (*complete)(void *completion, lc_fetch_result result), void *completion, void *ctx);
    void (*did_receive_remote_notification)(lc_app *app, const lc_dict *user_info,
                                            void (*complete)(void *completion, lc_fetch_result result), void *completion,
                                            void *ctx);
    bool (*should_save_application_state)(lc_app *app, lc_dict *coder, void *ctx);
    bool (*should_restore_application_state)(lc_app *app, const lc_dict *coder, void *ctx);
    void (*will_encode_restorable_state)(lc_app *app, lc_dict *coder, void *ctx);
    void (*did_decode_restorable_state)(lc_app *app, const lc_dict *coder, void *ctx);
    // Appended in 1.2 (read only when struct_size covers them): scenes and Handoff, as the delegate
    // functions of the same names (see "Delegate functions"); `scene` is owned by the application.
    const char *(*configuration_for_connecting)(lc_app *app, const char *session_id, const lc_dict *options, void *ctx);
    void (*did_discard_scene_sessions)(lc_app *app, const lc_dict *sessions, void *ctx);
    bool (*will_continue_user_activity)(lc_app *app, const char *activity_type, void *ctx);
    bool (*continue_user_activity)(lc_app *app, const lc_dict *activity, void *ctx);
    void (*did_fail_to_continue_user_activity)(lc_app *app, const char *activity_type, const char *error, void *ctx);
    void (*did_update_user_activity)(lc_app *app, const lc_dict *activity, void *ctx);
    void (*scene_will_connect)(lc_app *app, lc_scene *scene, const lc_dict *options, void *ctx);
    void (*scene_did_disconnect)(lc_app *app, lc_scene *scene, void *ctx);
    void (*scene_did_become_active)(lc_app *app, lc_scene *scene, void *ctx);
    void (*scene_will_resign_active)(lc_app *app, lc_scene *scene, void *ctx);
    void (*scene_will_enter_foreground)(lc_app *app, lc_scene *scene, void *ctx);
    void (*scene_did_enter_background)(lc_app *app, lc_scene *scene, void *ctx);
    void (*scene_open_url_contexts)(lc_app *app, lc_scene *scene, const lc_dict *contexts, void *ctx);
    bool (*scene_state_restoration_activity)(lc_app *app, lc_scene *scene, lc_dict *activity, void *ctx);
    void (*scene_will_continue_user_activity)(lc_app *app, lc_scene *scene, const char *activity_type, void *ctx);
    void (*scene_continue_user_activity)(lc_app *app, lc_scene *scene, const lc_dict *activity, void *ctx);
    void (*scene_did_fail_to_continue_user_activity)(lc_app *app, lc_scene *scene, const char *activity_type,
                                                     const char *error, void *ctx);
    void (*scene_did_update_user_activity)(lc_app *app, lc_scene *scene, const lc_dict *activity, void *ctx);
    // Appended in 1.5 (read only when struct_size covers it): scene:restoreInteractionStateWithUserActivity:.
    void (*scene_restore_interaction_state)(lc_app *app, lc_scene *scene, const lc_dict *activity, void *ctx);
    // Appended in 1.5: the older application methods (docs/lifecycle.md, decision 54) — applicationDidFinishLaunching:
    // (only for a delegate without did_finish_launching), application:handleOpenURL: (only without either open_url
    // form), application:didReceiveLocalNotification:, and the answer to a remote-notification registration (the
    // device token in hexadecimal, or the error's message).
    void (*application_did_finish_launching)(lc_app *app, void *ctx);
    bool (*handle_open_url)(lc_app *app, const char *url, void *ctx);
    void (*did_receive_local_notification)(lc_app *app, const lc_dict *user_info, void *ctx);
    void (*did_register_for_remote_notifications)(lc_app *app, const char *device_token, void *ctx);
    void (*did_fail_to_register_for_remote_notifications)(lc_app *app, const char *error, void *ctx);
    // Appended in 1.5: application:handleEventsForBackgroundURLSession:completionHandler: (decision 55).
    // Call `complete(completion)` exactly once, from any thread, within 30 s, when the session's events
    // are processed; the application stays running in the background until then.
    void (*handle_events_for_background_url_session)(lc_app *app, const char *identifier,
                                                     void (*complete)(void *completion), void *completion, void *ctx);
} lc_delegate_t;

/// Adds a delegate under a unique id (copied); called after those added before it. [main-thread]
LC_EXPORT lc_status lc_app_add_delegate(lc_app *app, const char *id, const lc_delegate_t *delegate);
/// Removes the delegate with `id`. [main-thread]
LC_EXPORT lc_status lc_app_remove_delegate(lc_app *app, const char *id);

// Background tasks

/// Begins a background task; `expiration` (may be NULL) runs on the main thread shortly before the
/// background time runs out. `name` is copied (may be NULL). [main-thread]
LC_EXPORT lc_status lc_app_begin_background_task(lc_app *app, const char *name, void (*expiration)(void *ctx), void *ctx,
                                                 lc_task_id *out);
/// Ends a background task; from another thread the end is applied on the main run loop. [thread-safe]
LC_EXPORT lc_status lc_app_end_background_task(lc_app *app, lc_task_id task);
/// Background time left in seconds; a negative value means unlimited (foreground). [main-thread]
LC_EXPORT double lc_app_background_time_remaining(const lc_app *app);

// The trace: every action, state change, delegate call and notification, in order.
typedef struct lc_trace_event {
    uint32_t struct_size;
    uint64_t seq;
    double time;          // seconds since the first launch, on the application's clock (lc_config_t.clock)
    const char *kind;     // "action", "state", "delegate", "notification", "watchdog", "error", ...
    const char *name;
    lc_state state;       // after the event
    const char *observer; // delegate or plugin id, or NULL
    const char *detail;   // or NULL
    const char *scene;    // appended in 1.2: the id of the scene the event is about, or NULL
} lc_trace_event_t;

/// Sets (or, with NULL, clears) the trace callback; the event is valid during the call. [main-thread]
LC_EXPORT lc_status lc_app_set_trace(lc_app *app, void (*fn)(const lc_trace_event_t *event, void *ctx), void *ctx);

// ---------------------------------------------------------------------------------------------
// Scenes (ABI 1.2)
//
// A scene-based application (lc_config_t.scene_manifest) has scenes, each with an id, a state and a
// session. An lc_scene * is owned by the application and stays valid until lc_app_destroy, also after
// its scene disconnected (it then reports LC_SCENE_STATE_UNATTACHED; a reconnection of the same id is
// a new handle). It is the sender of the scene's notifications (`note->sender`), the `scene` argument
// of the scene delegate functions, and what lc_app_scene finds. Every function below checks it: NULL
// is LC_ERR_INVALID_ARGUMENT; a pointer that is not a scene handle of a live application (a foreign
// pointer, or one from a destroyed application) is LC_ERR_NOT_FOUND; outside the scene's main thread,
// LC_ERR_WRONG_THREAD. Out-pointers are written only on success.
//
// The application's state (lc_app_state, host->state) is its most active scene's and changes together
// with the scene that determines it: inside scene_did_become_active the application is already
// LC_STATE_ACTIVE, inside the last scene_did_enter_background already LC_STATE_BACKGROUND. A
// scene-based application launches in LC_STATE_BACKGROUND (its launch methods see it) and leaves it,
// posting willEnterForeground, when its first scene comes to the foreground (docs/lifecycle.md,
// decisions 23 and 25).

/// The connected scene `id` (read during the call). LC_ERR_NOT_FOUND (the message names the id and the
/// connected scenes) when none is connected. [main-thread]
LC_EXPORT lc_status lc_app_scene(lc_app *app, const char *id, lc_scene **out);

// ABI 1.5. The application's own scene requests (UIApplication.requestSceneSessionActivation, …Destruction,
// …Refresh): checked when asked — LC_ERR_ILLEGAL_ACTION (not scene-based, not running or suspended, the
// device locked for an activation, a new session in a single-scene application), LC_ERR_NOT_FOUND (no
// such session), LC_ERR_INVALID_ARGUMENT — and performed by the system on a later turn of the main loop,
// after the callback or action that asked, in the order asked; each is a "scene-request" trace event, then
// the steps it takes (docs/lifecycle.md, decision 53). [main-thread]
/// Activation: session `session_id`'s scene connects, comes to the foreground and becomes active; NULL
/// creates a new session ("scene-1", …). `activity` (may be NULL; copied) is a user activity dictionary,
/// delivered as LC_ACTION_CONTINUE_USER_ACTIVITY delivers it.
LC_EXPORT lc_status lc_app_request_scene_activation(lc_app *app, const char *session_id, const lc_dict *activity);
/// Destruction: the scene goes to the background if it is in the foreground, then the session is
/// discarded (as LC_ACTION_SCENE_DISCARD).
LC_EXPORT lc_status lc_app_request_scene_destruction(lc_app *app, const char *session_id);
/// Refresh: traced; no life-cycle step.
LC_EXPORT lc_status lc_app_request_scene_refresh(lc_app *app, const char *session_id);

// ABI 1.5. The connected scenes and the sessions as lists; a session's role and userInfo.
/// The connected scenes in connection order: the first `capacity` handles into `out` (NULL allowed
/// with capacity 0), and how many are connected into `*count` — a call with capacity 0 sizes the
/// buffer. [main-thread]
LC_EXPORT lc_status lc_app_scenes(lc_app *app, lc_scene **out, size_t capacity, size_t *count);
/// The ids of the sessions the system keeps, connected or not, oldest first, as lc_app_scenes. The
/// strings are owned by the application, valid until lc_app_destroy. [main-thread]
LC_EXPORT lc_status lc_app_sessions(lc_app *app, const char **out, size_t capacity, size_t *count);
/// The scene's session role: "application" (UIKit's window-application role), static storage. [main-thread]
LC_EXPORT lc_status lc_scene_get_session_role(const lc_scene *scene, const char **out);
/// Session `session_id`'s userInfo (UISceneSession.userInfo), read-only, owned by the application:
/// valid until it is set again or lc_app_destroy. LC_ERR_NOT_FOUND for no such session. [main-thread]
LC_EXPORT lc_status lc_app_session_user_info(lc_app *app, const char *session_id, const lc_dict **out);
/// Replaces session `session_id`'s userInfo with a copy of `user_info` (NULL: empty): kept with the
/// session, across disconnections and launches, until it is discarded. [main-thread]
LC_EXPORT lc_status lc_app_set_session_user_info(lc_app *app, const char *session_id, const lc_dict *user_info);
/// The scene's id (its session's persistent identifier), owned by the application, valid until
/// lc_app_destroy. [main-thread]
LC_EXPORT lc_status lc_scene_get_id(const lc_scene *scene, const char **out);
/// The scene's current state. [main-thread]
LC_EXPORT lc_status lc_scene_get_state(const lc_scene *scene, lc_scene_state *out);
/// The persistent identifier of the scene's session (equal to the scene's id), owned by the
/// application, valid until lc_app_destroy. [main-thread]
LC_EXPORT lc_status lc_scene_get_session_id(const lc_scene *scene, const char **out);
/// The name of the configuration chosen for the scene's session when it was created (application:
/// configurationForConnectingSceneSession:options:, asked then only; "Default Configuration" when no
/// delegate answered), owned by the application, valid until lc_app_destroy. [main-thread]
LC_EXPORT lc_status lc_scene_get_configuration_name(const lc_scene *scene, const char **out);

// ---------------------------------------------------------------------------------------------
// The main run loop
//
// Built on epoll, eventfd, timerfd and signalfd. Run it with lc_app_run, or nest it in your own
// loop: poll lc_app_fd() for readability and call lc_app_dispatch_pending() when it is readable or
// when lc_app_next_timeout_ms() has elapsed.

/// Runs until lc_app_stop. [main-thread]
LC_EXPORT lc_status lc_app_run(lc_app *app);
/// Runs for `seconds` of real time (or until lc_app_stop), also on a manual clock, where no timer falls
/// due meanwhile (lc_app_advance moves that clock). [main-thread]
LC_EXPORT lc_status lc_app_run_for(lc_app *app, double seconds);
/// Makes lc_app_run return after the current callback. [thread-safe]
LC_EXPORT lc_status lc_app_stop(lc_app *app);
/// The loop's pollable descriptor (owned by the app; do not close). -1 for NULL. [thread-safe]
LC_EXPORT int lc_app_fd(const lc_app *app);
/// Runs everything ready now without blocking; returns how many callbacks ran, or a negative lc_status. [main-thread]
LC_EXPORT int lc_app_dispatch_pending(lc_app *app);
/// Milliseconds until the next timer (-1: none): the longest a nesting loop may wait. On a manual clock
/// (ABI 1.7) 0 when a timer is due, else -1: waiting cannot make one due. [main-thread]
LC_EXPORT int lc_app_next_timeout_ms(const lc_app *app);
/// Runs `fn(ctx)` on the main thread on a later loop turn, in this thread's order. From another
/// thread, LC_ERR_QUEUE_FULL (nothing queued) over the queue's bound, as lc_app_post. [thread-safe]
LC_EXPORT lc_status lc_app_perform_async(lc_app *app, void (*fn)(void *ctx), void *ctx);
/// ABI 1.7. Moves a manual clock (lc_config_t.clock = LC_CLOCK_MANUAL) forward by `seconds`: every
/// timer, budget and deadline that falls due by then runs, in deadline order (equal deadlines in the
/// order they were set), each with the clock at its own deadline, and the work they post (and the
/// timers they add that are due) runs before the clock moves on; then the clock is the old reading
/// plus `seconds`. At most 10,000 loop turns run at one deadline (work that re-posts itself for ever
/// cannot hold the clock still). From inside a callback it only moves the clock (standing for a slow
/// callback: the watchdog sees the time pass); the timers that fell due run after the callback returns.
/// `seconds`: finite, >= 0, at most 9223372036. LC_ERR_INVALID_ARGUMENT, the message saying which, for a
/// NaN, negative, infinite or larger `seconds` ("lc_app_advance: seconds must be a finite number from 0
/// to 9223372036, not nan") or an application on the monotonic clock ("lc_app_advance: the application
/// runs on the monotonic clock (lc_config_t.clock); only LC_CLOCK_MANUAL advances"). [main-thread]
LC_EXPORT lc_status lc_app_advance(lc_app *app, double seconds);
/// ABI 1.7. The application's clock in seconds since lc_app_create: manual time (0 until the first
/// lc_app_advance) or monotonic time. 0 for NULL or from another thread. [main-thread]
LC_EXPORT double lc_app_clock_seconds(lc_app *app);
/// A one-shot timer after `seconds` on the application's clock (monotonic, or manual). [main-thread]
LC_EXPORT lc_status lc_app_add_timer(lc_app *app, double seconds, void (*fn)(void *ctx), void *ctx, lc_source_id *out);
/// Cancels a timer; safe from inside its own callback. [main-thread]
LC_EXPORT lc_status lc_app_cancel_timer(lc_app *app, lc_source_id source);

// ---------------------------------------------------------------------------------------------
// Plugins
//
// A plugin exports one function named LC_PLUGIN_ENTRY_SYMBOL returning a pointer to a const,
// statically allocated descriptor. The host checks, before running any other plugin code: magic,
// ABI version (a different major, or a newer minor than the host's, is refused), struct_size, and
// that `id` is a valid reverse-DNS id not already loaded. Then it calls `init` on the main thread.

#define LC_PLUGIN_MAGIC 0x4C43504Cu /* "LCPL" */
#define LC_PLUGIN_ENTRY_SYMBOL "lc_plugin_entry"

typedef struct lc_host_api lc_host_api_t;

typedef struct lc_plugin_descriptor {
    uint32_t struct_size;      // sizeof(lc_plugin_descriptor_t)
    uint32_t magic;            // LC_PLUGIN_MAGIC
    uint32_t abi_major;        // LC_ABI_VERSION_MAJOR
    uint32_t abi_minor;        // LC_ABI_VERSION_MINOR
    const char *id;            // reverse-DNS, e.g. "com.example.echo": [A-Za-z0-9-] labels, at least one dot, <= 200 bytes
    const char *version;       // e.g. "1.0.0"
    const char *description;   // one line
    // Called once on the main thread. Keep `host` and `plugin` for later calls. Store anything in
    // *state; it comes back in deinit. Return LC_OK, or an error after host->set_error(plugin, "why").
    lc_status (*init)(const lc_host_api_t *host, lc_plugin *plugin, void **state);
    // Called once on the main thread when the plugin is unloaded, after all its observers,
    // delegate functions, timers and background tasks were removed. May be NULL.
    void (*deinit)(void *state);
} lc_plugin_descriptor_t;

typedef const lc_plugin_descriptor_t *(*lc_plugin_entry_fn)(void);

/// The dictionary functions, for plugins (which do not link liblifecycle.so).
typedef struct lc_dict_api {
    uint32_t struct_size;
    lc_dict *(*create)(void);
    lc_dict *(*copy)(const lc_dict *dict);
    void (*destroy)(lc_dict *dict);
    size_t (*count)(const lc_dict *dict);
    const char *(*key_at)(const lc_dict *dict, size_t index);
    lc_value_type (*type)(const lc_dict *dict, const char *key);
    const char *(*json)(const lc_dict *dict);
    lc_status (*get_string)(const lc_dict *dict, const char *key, const char **out);
    lc_status (*get_int)(const lc_dict *dict, const char *key, int64_t *out);
    lc_status (*get_double)(const lc_dict *dict, const char *key, double *out);
    lc_status (*get_bool)(const lc_dict *dict, const char *key, bool *out);
    lc_status (*get_bytes)(const lc_dict *dict, const char *key, const uint8_t **data, size_t *length);
    lc_status (*get_dict)(const lc_dict *dict, const char *key, const lc_dict **out);
    lc_status (*set_string)(lc_dict *dict, const char *key, const char *value);
    lc_status (*set_int)(lc_dict *dict, const char *key, int64_t value);
    lc_status (*set_double)(lc_dict *dict, const char *key, double value);
    lc_status (*set_bool)(lc_dict *dict, const char *key, bool value);
    lc_status (*set_bytes)(lc_dict *dict, const char *key, const void *data, size_t length);
    lc_status (*set_dict)(lc_dict *dict, const char *key, const lc_dict *value);
    lc_status (*remove)(lc_dict *dict, const char *key);
    // Lists inside dictionaries (read only; same rules as lc_list_*).
    lc_status (*get_list)(const lc_dict *dict, const char *key, const lc_list **out);
    size_t (*list_count)(const lc_list *list);
    lc_value_type (*list_type_at)(const lc_list *list, size_t index);
    lc_status (*list_get_string)(const lc_list *list, size_t index, const char **out);
    lc_status (*list_get_int)(const lc_list *list, size_t index, int64_t *out);
    lc_status (*list_get_double)(const lc_list *list, size_t index, double *out);
    lc_status (*list_get_bool)(const lc_list *list, size_t index, bool *out);
    lc_status (*list_get_dict)(const lc_list *list, size_t index, const lc_dict **out);
} lc_dict_api_t;

// The delegate table (ABI 1.1): what a plugin registers from init with host->set_delegate, instead
// of exporting delegate functions by name. Each function receives the calling plugin's handle and the
// state its init stored in *state, so one shared object loaded into two applications keeps two states.
// Any pointer may be NULL (not implemented); a shorter struct's tail counts as NULL. Dictionaries are
// owned by the host and valid during the call; `coder` dictionaries are the state archive.
//
// Completions: perform_fetch and did_receive_remote_notification_with_completion receive
// (complete, token). Call `complete(plugin, token, result)` once, from any thread, within the
// completion budget (30 s). handle_events_for_background_url_session (1.5) receives an
// lc_complete_void_fn instead, called as `complete(plugin, token)`: the same rules, no result.
// Tokens are 64-bit ids the host never reuses: a late call (after the request ended), a repeated
// call, another plugin's token, or a token never issued returns LC_ERR_NOT_FOUND, is logged, and completes nothing. A result other than LC_FETCH_NEW_DATA, _NO_DATA and
// _FAILED returns LC_ERR_INVALID_ARGUMENT, is logged, and completes nothing: the request stays open for a
// call with a valid result. LC_OK means this call completed the request.
typedef uint64_t lc_completion_token; // 0 is never a valid token
typedef lc_status (*lc_complete_fn)(lc_plugin *plugin, lc_completion_token token, lc_fetch_result result);
// ABI 1.5: the completion of handle_events_for_background_url_session, which carries no result (Apple's
// `() -> Void`). The same rules as lc_complete_fn's, without the result check.
typedef lc_status (*lc_complete_void_fn)(lc_plugin *plugin, lc_completion_token token);

typedef struct lc_plugin_delegate {
    uint32_t struct_size; // sizeof(lc_plugin_delegate_t)
    bool (*will_finish_launching)(lc_plugin *plugin, void *state, const lc_dict *options);
    bool (*did_finish_launching)(lc_plugin *plugin, void *state, const lc_dict *options);
    void (*did_become_active)(lc_plugin *plugin, void *state);
    void (*will_resign_active)(lc_plugin *plugin, void *state);
    void (*did_enter_background)(lc_plugin *plugin, void *state);
    void (*will_enter_foreground)(lc_plugin *plugin, void *state);
    void (*will_terminate)(lc_plugin *plugin, void *state);
    void (*did_receive_memory_warning)(lc_plugin *plugin, void *state);
    void (*significant_time_change)(lc_plugin *plugin, void *state);
    void (*protected_data_will_become_unavailable)(lc_plugin *plugin, void *state);
    void (*protected_data_did_become_available)(lc_plugin *plugin, void *state);
    bool (*open_url)(lc_plugin *plugin, void *state, const char *url, const char *source_application,
                     const lc_dict *annotation);
    void (*perform_fetch)(lc_plugin *plugin, void *state, lc_complete_fn complete, lc_completion_token token);
    void (*did_receive_remote_notification_with_completion)(lc_plugin *plugin, void *state, const lc_dict *user_info,
                                                            lc_complete_fn complete, lc_completion_token token);
    // Called only when did_receive_remote_notification_with_completion is NULL, and only while the
    // application is running (not at a launch, nor after a wake from suspension).
    void (*did_receive_remote_notification)(lc_plugin *plugin, void *state, const lc_dict *user_info);
    bool (*should_save_application_state)(lc_plugin *plugin, void *state, lc_dict *coder);
    bool (*should_restore_application_state)(lc_plugin *plugin, void *state, const lc_dict *coder);
    void (*will_encode_restorable_state)(lc_plugin *plugin, void *state, lc_dict *coder);
    void (*did_decode_restorable_state)(lc_plugin *plugin, void *state, const lc_dict *coder);
    // Appended in 1.1; read only when struct_size covers it (a table built against an earlier 1.1
    // header is shorter: this field counts as NULL). application:openURL:options: (Apple, "Managing your app's life cycle"), called
    // instead of open_url when set. `options` holds "sourceApplication" (string) and "annotation" when
    // the request has them; it is never NULL.
    bool (*open_url_with_options)(lc_plugin *plugin, void *state, const char *url, const lc_dict *options);
    // Appended in 1.2; read only when struct_size covers them (a shorter table never gets these calls).
    // Scenes and Handoff, in the order and with the meaning of the delegate functions of the same names
    // (see "Delegate functions"). `scene` is owned by the host (see "Scenes"); read it with host->scene_*.
    const char *(*configuration_for_connecting)(lc_plugin *plugin, void *state, const char *session_id,
                                                const lc_dict *options);
    void (*did_discard_scene_sessions)(lc_plugin *plugin, void *state, const lc_dict *sessions);
    bool (*will_continue_user_activity)(lc_plugin *plugin, void *state, const char *activity_type);
    bool (*continue_user_activity)(lc_plugin *plugin, void *state, const lc_dict *activity);
    void (*did_fail_to_continue_user_activity)(lc_plugin *plugin, void *state, const char *activity_type,
                                               const char *error);
    void (*did_update_user_activity)(lc_plugin *plugin, void *state, const lc_dict *activity);
    void (*scene_will_connect)(lc_plugin *plugin, void *state, lc_scene *scene, const lc_dict *options);
    void (*scene_did_disconnect)(lc_plugin *plugin, void *state, lc_scene *scene);
    void (*scene_did_become_active)(lc_plugin *plugin, void *state, lc_scene *scene);
    void (*scene_will_resign_active)(lc_plugin *plugin, void *state, lc_scene *scene);
    void (*scene_will_enter_foreground)(lc_plugin *plugin, void *state, lc_scene *scene);
    void (*scene_did_enter_background)(lc_plugin *plugin, void *state, lc_scene *scene);
    void (*scene_open_url_contexts)(lc_plugin *plugin, void *state, lc_scene *scene, const lc_dict *contexts);
    bool (*scene_state_restoration_activity)(lc_plugin *plugin, void *state, lc_scene *scene, lc_dict *activity);
    void (*scene_will_continue_user_activity)(lc_plugin *plugin, void *state, lc_scene *scene,
                                              const char *activity_type);
    void (*scene_continue_user_activity)(lc_plugin *plugin, void *state, lc_scene *scene, const lc_dict *activity);
    void (*scene_did_fail_to_continue_user_activity)(lc_plugin *plugin, void *state, lc_scene *scene,
                                                     const char *activity_type, const char *error);
    void (*scene_did_update_user_activity)(lc_plugin *plugin, void *state, lc_scene *scene, const lc_dict *activity);
    // Appended in 1.5 (read only when struct_size covers it): scene:restoreInteractionStateWithUserActivity:
    // — the activity your scene_state_restoration_activity saved for this scene, handed over once a
    // connection when the scene first comes to the foreground (read then if the device was locked at
    // the connection, when the session's restoration activity was NULL).
    void (*scene_restore_interaction_state)(lc_plugin *plugin, void *state, lc_scene *scene, const lc_dict *activity);
    // Appended in 1.5: the older application methods, as in lc_delegate_t (docs/lifecycle.md, decision 54).
    void (*application_did_finish_launching)(lc_plugin *plugin, void *state);
    bool (*handle_open_url)(lc_plugin *plugin, void *state, const char *url);
    void (*did_receive_local_notification)(lc_plugin *plugin, void *state, const lc_dict *user_info);
    void (*did_register_for_remote_notifications)(lc_plugin *plugin, void *state, const char *device_token);
    void (*did_fail_to_register_for_remote_notifications)(lc_plugin *plugin, void *state, const char *error);
    // Appended in 1.5: application:handleEventsForBackgroundURLSession:completionHandler: (decision 55).
    // Call `complete(plugin, token)` once, from any thread, within the completion budget (30 s).
    void (*handle_events_for_background_url_session)(lc_plugin *plugin, void *state, const char *identifier,
                                                     lc_complete_void_fn complete, lc_completion_token token);
} lc_plugin_delegate_t;

/// What the host offers a plugin. Owned by the host, valid until the plugin's deinit returns.
/// Every function takes the `plugin` handle given to init, so the host knows whose observer, task or
/// timer it is and removes them when the plugin is unloaded.
///
/// Ownership rules:
///   * Each plugin receives its own copy of this table (and of `dict`) in a read-only page of its own:
///     a plugin that writes to it faults (SIGSEGV) in its own write; no plugin's table shares a page
///     with another's.
///   * Observers, background tasks and timers belong to the plugin that created them. A plugin may
///     remove, end or cancel only its own: remove_observer, end_background_task and cancel_timer
///     answer LC_ERR_NOT_FOUND (and lc_last_error_message() names the calling plugin) for a token, task
///     or timer of another plugin or of the host, exactly as for one that never existed; nothing changes.
///   * Completion tokens (ABI 1.1, lc_plugin_delegate_t) belong to the plugin whose delegate received
///     them: completing another plugin's token answers LC_ERR_NOT_FOUND and completes nothing.
///   * `plugin` must be the handle this plugin's init received. A handle is a token the host made
///     (not an address: never dereference it); one the host never gave out, or one of a plugin whose
///     application is gone, is refused with LC_ERR_INVALID_ARGUMENT. On the main thread, inside a
///     callback of a plugin (an observer, a delegate function, a timer, posted work, init, an
///     expiration handler), a call made with another plugin's handle is refused with
///     LC_ERR_INVALID_ARGUMENT and traced (kind "handle-refused"); nothing changes.
///
/// What the host's checks can and cannot stop. They stop accidents, and the abuses that go through
/// the host's API: a write to a table (its own page, read-only), a stale or made-up handle, a call in
/// another plugin's name from inside one's own callback, another plugin's token, task or timer. A
/// plugin loaded in the host's process is code of the host's process, and nothing stops what it does
/// to memory: it can make its own table's page writable again (it then rewrites only its own table:
/// every table has a page of its own), read another plugin's handle out of that plugin's memory and
/// use it from a thread of its own (the check against the running callback holds on the main thread
/// only), or write anywhere. Against such a plugin, load it isolated (LC_LOAD_ISOLATED,
/// `lifecycle-host run --isolate`): in a process of its own, it can reach nothing of the host's or of
/// the other plugins' but through the protocol, and every frame it sends is checked.
///
/// Quotas (ABI 1.4): what a plugin makes the host keep is counted per plugin, in the host's process
/// and isolated alike, and a call past a quota returns LC_ERR_QUOTA and changes nothing;
/// lc_last_error_message() (where the plugin can read it) says "FUNCTION: plugin 'ID' is at its quota
/// of N KIND; refused, nothing changed". The host's quotas (lifecycle-host's defaults):
///   * observers: 100000 registered at once (observe, observe_name; remove_observer gives one back);
///   * timers: 10000 waiting at once (add_timer; one is given back when it fires or is cancelled);
///   * open background tasks: 1000 (begin_background_task; given back when the task ends: by
///     end_background_task, the watchdog, or the application's end);
///   * custom notification names: 10000 (observe, post, name_intern of a dotted name no one had
///     used; isolated, each distinct custom name the plugin observes or posts, by string or by id).
///     Never given back: names live as long as the process.
///   Unloading gives everything back. Each refusal is traced (kind "quota", name the quota,
///   observer the plugin; the first at once, then at most one event a second counting the refusals
///   since) and counted (lifecycle_plugin_quota_refusals_total). An isolated plugin refused 1000
///   times within 10 s is cut off: SIGKILL, "plugin-failed", cause "quota exceeded".
/// Log lines: at most 100 a second per plugin on average, in bursts of up to 1000; the lines over it
/// are dropped and one warning line says how many ("suppressed N log lines of plugin 'ID' ...",
/// "1 log line" for one): before the plugin's next line that passes, a second after the first
/// dropped, or at the unload, after deinit (whose lines are limited and counted the same way).
struct lc_host_api {
    uint32_t struct_size;
    uint32_t abi_major;
    uint32_t abi_minor;
    const lc_dict_api_t *dict;
    /// Sets the message shown when init fails (copied). [main-thread]
    lc_status (*set_error)(lc_plugin *plugin, const char *message);
    /// Logs a line attributed to the plugin, within its rate (see "Log lines" above). [thread-safe]
    void (*log)(lc_plugin *plugin, lc_log_level level, const char *message);
    /// See lc_app_observe; LC_ERR_QUOTA at the plugin's quota of observers, or of custom names for a new
    /// name. [main-thread]
    lc_status (*observe)(lc_plugin *plugin, const char *name, const void *sender, lc_observer_fn fn, void *ctx,
                         lc_observer_token *out);
    /// See lc_app_remove_observer; only an observer this plugin registered (else LC_ERR_NOT_FOUND). [main-thread]
    lc_status (*remove_observer)(lc_plugin *plugin, lc_observer_token token);
    /// See lc_app_post (LC_ERR_QUEUE_FULL over the queue's bound; LC_ERR_QUOTA for a new custom name past
    /// the plugin's quota). [thread-safe]
    lc_status (*post)(lc_plugin *plugin, const char *name, const void *sender, const lc_dict *user_info);
    /// The application's state. [main-thread]
    lc_state (*state)(lc_plugin *plugin);
    /// See lc_app_begin_background_task; LC_ERR_QUOTA at the plugin's quota of open tasks. [main-thread]
    lc_status (*begin_background_task)(lc_plugin *plugin, const char *name, void (*expiration)(void *ctx), void *ctx,
                                       lc_task_id *out);
    /// See lc_app_end_background_task; only a task this plugin began (else LC_ERR_NOT_FOUND, checked on
    /// the calling thread). [thread-safe]
    lc_status (*end_background_task)(lc_plugin *plugin, lc_task_id task);
    /// See lc_app_add_timer / lc_app_cancel_timer; add_timer LC_ERR_QUOTA at the plugin's quota of timers;
    /// cancel_timer only a timer this plugin added (else LC_ERR_NOT_FOUND). [main-thread]
    lc_status (*add_timer)(lc_plugin *plugin, double seconds, void (*fn)(void *ctx), void *ctx, lc_source_id *out);
    lc_status (*cancel_timer)(lc_plugin *plugin, lc_source_id source);
    /// See lc_app_perform_async (LC_ERR_QUEUE_FULL over the queue's bound). [thread-safe]
    lc_status (*perform_async)(lc_plugin *plugin, void (*fn)(void *ctx), void *ctx);
    /// An optional feature table by versioned id (e.g. "lc.example/1"), or NULL when not supported. [thread-safe]
    const void *(*get_extension)(lc_plugin *plugin, const char *id);

    // ---- ABI 1.1 (a 1.1 plugin is never loaded by a 1.0 host, so it may call these unchecked) ----

    /// Registers the plugin's delegate table (copied). Only from init, at most once; then the host
    /// ignores exported delegate functions (the 1.0 way) of this plugin. LC_ERR_ILLEGAL_ACTION outside
    /// init or on a second call; LC_ERR_INVALID_ARGUMENT for NULL or a struct_size below 8. [main-thread]
    lc_status (*set_delegate)(lc_plugin *plugin, const lc_plugin_delegate_t *delegate);
    /// See lc_name_intern (ABI 1.1); LC_ERR_QUOTA for a new custom name past the plugin's quota. [thread-safe]
    lc_status (*name_intern)(lc_plugin *plugin, const char *name, lc_name *out);
    /// See lc_app_observe_name (ABI 1.1); the observer is the calling plugin's (LC_ERR_QUOTA at its quota of
    /// observers). [main-thread]
    lc_status (*observe_name)(lc_plugin *plugin, lc_name name, const void *sender, lc_observer_fn fn, void *ctx,
                              lc_observer_token *out);
    /// See lc_app_post_name (ABI 1.1): on the main thread observers have run when it returns; from
    /// another thread it is queued in this thread's order, or refused with LC_ERR_QUEUE_FULL over the
    /// queue's bound. Isolated, a custom name new to the host counts towards the plugin's quota of
    /// custom names (LC_ERR_QUOTA past it). [thread-safe]
    lc_status (*post_name)(lc_plugin *plugin, lc_name name, const void *sender, const lc_dict *user_info);

    // ---- ABI 1.2 (a 1.2 plugin is never loaded by an older host; a plugin declaring 1.1 checks
    //      struct_size before calling these) ----

    /// See lc_app_scene: the connected scene `id` of the plugin's application. [main-thread]
    lc_status (*scene_find)(lc_plugin *plugin, const char *id, lc_scene **out);
    /// See lc_scene_get_id, _get_state, _get_session_id, _get_configuration_name; a scene of another
    /// application is LC_ERR_NOT_FOUND. [main-thread]
    lc_status (*scene_get_id)(lc_plugin *plugin, const lc_scene *scene, const char **out);
    lc_status (*scene_get_state)(lc_plugin *plugin, const lc_scene *scene, lc_scene_state *out);
    lc_status (*scene_get_session_id)(lc_plugin *plugin, const lc_scene *scene, const char **out);
    lc_status (*scene_get_configuration_name)(lc_plugin *plugin, const lc_scene *scene, const char **out);

    // ---- ABI 1.5 (a plugin declaring an older minor checks struct_size before calling these) ----

    /// Whether protected data is available (UIApplication.isProtectedDataAvailable, as
    /// lc_app_is_protected_data_available): false from applicationProtectedDataWillBecomeUnavailable
    /// (the device locked) until applicationProtectedDataDidBecomeAvailable. Isolated, the host is asked
    /// (a round trip). false for a bad handle or off the main thread. [main-thread]
    bool (*is_protected_data_available)(lc_plugin *plugin);
    /// The background time left, in seconds (UIApplication.backgroundTimeRemaining, as
    /// lc_app_background_time_remaining): negative means unlimited (in the foreground); 0 when
    /// suspended or not running. Isolated, the host is asked (a round trip). 0 for a bad handle or off
    /// the main thread. [main-thread]
    double (*background_time_remaining)(lc_plugin *plugin);
    /// See lc_app_request_scene_activation, _destruction, _refresh: the request names the plugin in the
    /// trace. Isolated, the host checks it (a round trip). [main-thread]
    lc_status (*request_scene_activation)(lc_plugin *plugin, const char *session_id, const lc_dict *activity);
    lc_status (*request_scene_destruction)(lc_plugin *plugin, const char *session_id);
    lc_status (*request_scene_refresh)(lc_plugin *plugin, const char *session_id);
    /// See lc_app_scenes, lc_app_sessions, lc_scene_get_session_role, lc_app_session_user_info and
    /// lc_app_set_session_user_info. Isolated: scene_list lists the connected scenes your process has
    /// been called or notified about (as scene_find finds them); session_list and the userInfo calls
    /// ask the host (a round trip). [main-thread]
    lc_status (*scene_list)(lc_plugin *plugin, lc_scene **out, size_t capacity, size_t *count);
    lc_status (*session_list)(lc_plugin *plugin, const char **out, size_t capacity, size_t *count);
    lc_status (*scene_get_session_role)(lc_plugin *plugin, const lc_scene *scene, const char **out);
    lc_status (*session_get_user_info)(lc_plugin *plugin, const char *session_id, const lc_dict **out);
    lc_status (*session_set_user_info)(lc_plugin *plugin, const char *session_id, const lc_dict *user_info);

    // ---- ABI 1.6 (a plugin declaring an older minor checks struct_size before calling these) ----

    /// Whether Low Power Mode is on (ProcessInfo.isLowPowerModeEnabled, as
    /// lc_app_is_low_power_mode_enabled). Isolated, the host is asked (a round trip). false for a bad
    /// handle or off the main thread. [main-thread]
    bool (*is_low_power_mode_enabled)(lc_plugin *plugin);
    /// The thermal state (ProcessInfo.thermalState, as lc_app_thermal_state). Isolated, the host is
    /// asked (a round trip). LC_THERMAL_NOMINAL for a bad handle or off the main thread. [main-thread]
    lc_thermal_state (*thermal_state)(lc_plugin *plugin);
};

/// Loads a plugin from an absolute path (RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE), checks it, and runs
/// its init. A refusal returns LC_ERR_PLUGIN_REFUSED (or LC_ERR_DUPLICATE / LC_ERR_VERSION) and the
/// message names the file and the reason; other plugins are unaffected. `*out` (may be NULL) is
/// owned by the app. [main-thread]
LC_EXPORT lc_status lc_app_load_plugin(lc_app *app, const char *path, lc_plugin **out);
/// Loads every "*.so" in a folder (absolute path), in name order. Refusals do not stop the others:
/// `*loaded` and `*refused` (may be NULL) count them; the last refusal's message is kept. [main-thread]
LC_EXPORT lc_status lc_app_load_plugin_folder(lc_app *app, const char *folder, size_t *loaded, size_t *refused);
/// Deactivates a plugin: removes all its observers, delegate functions, timers and background
/// tasks, then calls its deinit. The image stays mapped (RTLD_NODELETE). [main-thread]
LC_EXPORT lc_status lc_app_unload_plugin(lc_app *app, const char *id);
/// The plugin's id; owned by the app, valid while the plugin is loaded. [main-thread]
LC_EXPORT const char *lc_plugin_id(const lc_plugin *plugin);

// ABI 1.3: isolated plugins. An isolated plugin runs in a process of its own (the plugin runner: the
// `lifecycle-plugin-runner` executable $LC_PLUGIN_RUNNER names, else the one `make install` recorded
// in the installed library, PREFIX/lib/lifecycle/lifecycle-plugin-runner, else the one beside
// liblifecycle.so in a build folder), loaded with
// the same checks, and is presented to the application as any plugin: its observers receive the same
// notifications in the same order on its own main thread, its delegate functions are called, its
// host-API calls reach the application. A crash (a signal, an exit), a callback that overruns its
// budget (killed, SIGKILL), a broken protocol or calls past a quota kept up (1000 refused within
// 10 s, see "Quotas"; SIGKILL) takes the plugin out (its observers, delegate functions, timers and
// background tasks removed; its open completions called with LC_FETCH_FAILED) and is reported in
// the trace (kind "plugin-failed", observer: the plugin, detail: the signal or status and the
// callback it was running); the application and the other plugins go on. Differences a plugin can
// see, and the costs: docs/c-api.md, "Isolated plugins".

/// How lc_app_load_plugin_with_options loads a plugin.
typedef uint32_t lc_load_flags;
enum {
    LC_LOAD_ISOLATED = 1u << 0, // run it in a process of its own
};

/// What happens when an isolated plugin's process fails.
typedef uint32_t lc_restart_policy;
enum {
    LC_RESTART_NEVER = 0,      // it stays out (the default)
    LC_RESTART_ON_FAILURE = 1, // started again after a back-off (100 ms, doubling, at most 5 s), at most restart_limit times
};

/// How an isolated plugin's processes are frozen while the application is suspended (ABI 1.6). On iOS
/// "a suspended app does not execute any code": its plugins' processes are frozen
/// when the application becomes suspended and thawed before their first callback after it resumes;
/// a purge or termination of the suspended application kills them, and the plugin starts again in a
/// new process (its init runs again). A freezer that cannot be used here freezes nothing (the trace
/// says so once, kind "plugin-freezer"). docs/lifecycle.md, "Suspended means frozen".
typedef uint32_t lc_freezer;
enum {
    LC_FREEZER_AUTO = 0,      // the strongest that works here: cgroup v2, then cgroup v1, then signals (the default)
    LC_FREEZER_CGROUP = 1,    // cgroup v2's cgroup.freeze on the plugin's own cgroup: everything it started
    LC_FREEZER_CGROUP_V1 = 2, // the cgroup v1 freezer: a cgroup of the plugin's own, its process moved in at start
    LC_FREEZER_SIGNAL = 3,    // SIGSTOP and SIGCONT to its process group: what left the group runs on
    LC_FREEZER_NONE = 4,      // never frozen: a suspended application's plugins run on
};

/// ABI 1.3. Zero fields take the defaults; a shorter (older) struct's missing tail counts as zero.
typedef struct lc_load_options {
    uint32_t struct_size;             // sizeof(lc_load_options_t); at least 8 (struct_size and flags)
    lc_load_flags flags;              // LC_LOAD_ISOLATED, or 0
    lc_restart_policy restart_policy; // isolated plugins only
    uint32_t restart_limit;           // LC_RESTART_ON_FAILURE: 1 to 1000 restarts (0: 3)
    double call_budget;               // isolated: seconds a callback may run outside a lifecycle budget (0: 5; at most 3600)
    double init_budget;               // isolated: seconds for starting its process and its init (0: 5; at most 3600)
    lc_freezer freezer;               // 1.6, isolated: LC_FREEZER_* (0: LC_FREEZER_AUTO)
} lc_load_options_t;

/// lc_app_load_plugin with options (ABI 1.3); NULL options load as lc_app_load_plugin does. The
/// `lc_plugin *` of an isolated plugin works with lc_plugin_id and lc_app_unload_plugin like any other
/// (unloading runs its deinit in its process, which then exits). Refusals as lc_app_load_plugin;
/// LC_ERR_INVALID_ARGUMENT for an unknown flag or policy, or a limit or budget out of range (the
/// message names the field and the limit); LC_ERR_SYSTEM when the plugin runner cannot be started.
/// [main-thread]
LC_EXPORT lc_status lc_app_load_plugin_with_options(lc_app *app, const char *path, const lc_load_options_t *options,
                                                    lc_plugin **out);

/// ABI 1.7. How lc_app_reload_plugin goes (a bit set).
typedef uint32_t lc_reload_flags;
enum {
    /// Reload even while the plugin has a background task open, a completion handler not yet called
    /// or (in this process) lc_host_api_t.perform_async work queued: its background tasks are ended
    /// first; a pending completion handler stays pending (its budget ends it if nothing calls it); queued
    /// work still runs, in the old image, its host calls refused as an unloaded plugin's.
    LC_RELOAD_FORCE = 1u << 0,
};

/// ABI 1.7. Replaces the loaded plugin `id` with a new instance of its file (`path` NULL: the file it
/// was loaded from, read again) or of the file at `path` (absolute), without stopping the application
/// (docs/host.md, "Reloading a plugin"). In order: the new file is opened and checked as
/// lc_app_load_plugin does, from a private in-memory copy of its bytes (so that a file rewritten in
/// place is not answered with the mapped old image) — an isolated plugin: a new runner process is
/// started on it with the old one's options; its id must be `id`; the old instance's state is asked
/// for through its state-preservation delegate functions (shouldSaveApplicationState, then
/// willEncodeRestorableStateWithCoder; in memory, in any state, without archive_directory); the new
/// instance's init runs while the old one is still loaded; the old instance is unloaded as
/// lc_app_unload_plugin does (an isolated one's process exits only now); the new one's delegate
/// functions are registered after the other delegates'; the new instance is handed the state
/// (shouldRestoreApplicationState, then didDecodeRestorableStateWithCoder). Traced as `plugin-reload`
/// events `begin`, `end` or `failed`. Other plugins see only those. [main-thread]
/// - `*out` (may be NULL): the new instance's handle; the old handle is stale from then on (calls with
///   it are refused as an unloaded plugin's).
/// - LC_ERR_INVALID_ARGUMENT: app or id NULL, an invalid id, a relative path, an unknown flag bit.
/// - LC_ERR_NOT_FOUND: no plugin with that id is loaded.
/// - LC_ERR_ILLEGAL_ACTION: something outstanding (see LC_RELOAD_FORCE) without LC_RELOAD_FORCE; called
///   while one of the plugin's callbacks runs (e.g. from an observer of a post it made), force or not;
///   the watchdog killed the application while the old instance encoded its state.
/// - LC_ERR_PLUGIN_REFUSED, LC_ERR_VERSION, LC_ERR_SYSTEM: the new file, its runner or its init was
///   refused (the message names the file and the reason).
/// Every failure leaves the old instance loaded and running as before.
LC_EXPORT lc_status lc_app_reload_plugin(lc_app *app, const char *id, const char *path, lc_reload_flags flags, lc_plugin **out);

// ---------------------------------------------------------------------------------------------
// Delegate functions
//
// ABI 1.0. A plugin that registers a delegate table (lc_plugin_delegate_t, above) has no need of
// these; one that does not may export any of these plain C functions; the host finds each with dlsym on the plugin
// (its respondsToSelector:) and calls it through libffi on the main thread. `app` identifies the
// application (pass it to nothing but comparisons: plugins talk to the host through lc_host_api_t).
// Dictionaries are owned by the host and valid during the call. A completion function pointer is
// bound to its one request: call it once, from any thread, within the completion budget (30 s).
// What the host guarantees for these pointers (they carry no token): the code behind one is never
// freed, so a call at any time lands safely; a pointer whose request ended uncalled (watchdog,
// application stopped, plugin unloaded) stays bound to that ended request for good, so a late call is
// reported and completes nothing; a second call is reported and completes nothing for at least 60 s
// after the request ended (only after that may the pointer serve a new request). A result outside
// lc_fetch_result counts as LC_FETCH_FAILED. Plugins that need the full guarantee use the 1.1 delegate
// table, whose tokens are never reused.
//
// Define LC_DECLARE_DELEGATE_FUNCTIONS before including this header to have the compiler check your
// definitions against these prototypes.
#ifdef LC_DECLARE_DELEGATE_FUNCTIONS
LC_EXPORT bool application_willFinishLaunchingWithOptions(lc_app *app, const lc_dict *options);
LC_EXPORT bool application_didFinishLaunchingWithOptions(lc_app *app, const lc_dict *options);
LC_EXPORT void applicationDidBecomeActive(lc_app *app);
LC_EXPORT void applicationWillResignActive(lc_app *app);
LC_EXPORT void applicationDidEnterBackground(lc_app *app);
LC_EXPORT void applicationWillEnterForeground(lc_app *app);
LC_EXPORT void applicationWillTerminate(lc_app *app);
LC_EXPORT void applicationDidReceiveMemoryWarning(lc_app *app);
LC_EXPORT void applicationSignificantTimeChange(lc_app *app);
LC_EXPORT void applicationProtectedDataWillBecomeUnavailable(lc_app *app);
LC_EXPORT void applicationProtectedDataDidBecomeAvailable(lc_app *app);
LC_EXPORT bool application_openURL(lc_app *app, const char *url, const char *source_app, const lc_dict *annotation);
LC_EXPORT void application_performFetchWithCompletionHandler(lc_app *app, void (*completion)(lc_fetch_result result));
LC_EXPORT void application_didReceiveRemoteNotification_fetchCompletionHandler(lc_app *app, const lc_dict *user_info,
                                                                                void (*completion)(lc_fetch_result result));
LC_EXPORT void application_didReceiveRemoteNotification(lc_app *app, const lc_dict *user_info);
LC_EXPORT bool application_shouldSaveApplicationState(lc_app *app, lc_dict *coder);
LC_EXPORT bool application_shouldRestoreApplicationState(lc_app *app, const lc_dict *coder);
LC_EXPORT void application_willEncodeRestorableStateWithCoder(lc_app *app, lc_dict *coder);
LC_EXPORT void application_didDecodeRestorableStateWithCoder(lc_app *app, const lc_dict *coder);
LC_EXPORT bool application_openURL_options(lc_app *app, const char *url, const lc_dict *options);
// ^ application:openURL:options: (Apple, "Managing your app's life cycle"): called instead of application_openURL when exported.
//   `options` (never NULL) holds "sourceApplication" and "annotation" when the request has them.

// ABI 1.2: scenes and Handoff. Called only in a scene-based application, except the four Handoff
// functions of the application, which are called only in an application without scenes.
//
// A user activity crosses as a dictionary: {"activityType": string, "title": string (absent when
// none), "userInfo": dictionary}. Connection options are {"urlContexts": [{"url": string, "options":
// dictionary}...], "userActivities": [activity...]} (each list absent when empty); scene_willConnect…
// also finds "stateRestorationActivity" (an activity) there when this delegate saved one.
// Return a configuration name with static storage (or valid until the next call); NULL answers
// "Default Configuration". The first delegate's answer names the session's configuration.
LC_EXPORT const char *application_configurationForConnectingSceneSession_options(lc_app *app, const char *session_id,
                                                                                 const lc_dict *options);
// `sessions`: one key per discarded session id, in order; each value its configuration name (string).
LC_EXPORT void application_didDiscardSceneSessions(lc_app *app, const lc_dict *sessions);
LC_EXPORT bool application_willContinueUserActivityWithType(lc_app *app, const char *activity_type);
LC_EXPORT bool application_continueUserActivity_restorationHandler(lc_app *app, const lc_dict *activity);
LC_EXPORT void application_didFailToContinueUserActivityWithType_error(lc_app *app, const char *activity_type,
                                                                        const char *error);
LC_EXPORT void application_didUpdateUserActivity(lc_app *app, const lc_dict *activity);
LC_EXPORT void scene_willConnectToSession_options(lc_app *app, lc_scene *scene, const lc_dict *options);
LC_EXPORT void sceneDidDisconnect(lc_app *app, lc_scene *scene);
LC_EXPORT void sceneDidBecomeActive(lc_app *app, lc_scene *scene);
LC_EXPORT void sceneWillResignActive(lc_app *app, lc_scene *scene);
LC_EXPORT void sceneWillEnterForeground(lc_app *app, lc_scene *scene);
LC_EXPORT void sceneDidEnterBackground(lc_app *app, lc_scene *scene);
// `contexts`: {"urlContexts": [{"url": string, "options": dictionary}...]}.
LC_EXPORT void scene_openURLContexts(lc_app *app, lc_scene *scene, const lc_dict *contexts);
// `activity` is empty and writable: fill it (at least "activityType") and return true to save it.
LC_EXPORT bool stateRestorationActivityForScene(lc_app *app, lc_scene *scene, lc_dict *activity);
LC_EXPORT void scene_willContinueUserActivityWithType(lc_app *app, lc_scene *scene, const char *activity_type);
LC_EXPORT void scene_continueUserActivity(lc_app *app, lc_scene *scene, const lc_dict *activity);
LC_EXPORT void scene_didFailToContinueUserActivityWithType_error(lc_app *app, lc_scene *scene, const char *activity_type,
                                                                  const char *error);
LC_EXPORT void scene_didUpdateUserActivity(lc_app *app, lc_scene *scene, const lc_dict *activity);
// ABI 1.5.
LC_EXPORT void scene_restoreInteractionStateWithUserActivity(lc_app *app, lc_scene *scene, const lc_dict *activity);
LC_EXPORT void applicationDidFinishLaunching(lc_app *app);
LC_EXPORT bool application_handleOpenURL(lc_app *app, const char *url);
LC_EXPORT void application_didReceiveLocalNotification(lc_app *app, const lc_dict *user_info);
LC_EXPORT void application_didRegisterForRemoteNotificationsWithDeviceToken(lc_app *app, const char *device_token);
LC_EXPORT void application_didFailToRegisterForRemoteNotificationsWithError(lc_app *app, const char *error);
// `completion` takes no argument (Apple's `() -> Void`); the rules above for completion pointers hold.
LC_EXPORT void application_handleEventsForBackgroundURLSession_completionHandler(lc_app *app, const char *identifier,
                                                                                 void (*completion)(void));
#endif

#ifdef __cplusplus
}
#endif
