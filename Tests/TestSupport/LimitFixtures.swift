import Foundation

/// Plugins that push dictionaries to the limits (depth, size) and that fail while saving their
/// state, for the tests of the dictionary limits and of the archive kept: each one C source, built
/// with `cc` at test time (`IsolationFixtures.build`), its misdeed spelled in the source.
public enum LimitFixtures {
    /// C: `static lc_dict *chain(const char *prefix, int levels)`: builds `{"d": {"d": … {"leaf": 1}}}`
    /// with up to `levels` wraps, one `set_dict` a wrap; at the first wrap refused it prints
    /// `PREFIX: level N refused: STATUS` and returns what it had. The caller destroys the result.
    static let chainFunction = """
        static lc_dict *chain(const char *prefix, int levels) {
            lc_dict *inner = host->dict->create();
            host->dict->set_int(inner, "leaf", 1);
            for (int level = 1; level <= levels; level++) {
                lc_dict *outer = host->dict->create();
                lc_status status = host->dict->set_dict(outer, "d", inner);
                if (status != LC_OK) {
                    printf("%s: level %d refused: %d\\n", prefix, level, (int)status);
                    fflush(stdout);
                    host->dict->destroy(outer);
                    return inner;
                }
                host->dict->destroy(inner);
                inner = outer;
            }
            return inner;
        }
        """

    /// A plugin whose observer of `trigger` builds a chain of `levels` wraps (`chainFunction`) and
    /// posts `name` with it from the main thread, printing `poster: post -> STATUS`.
    public static func deepPoster(id: String, trigger: String, name: String, levels: Int) -> String {
        IsolationFixtures.observer(id: id, name: trigger, body: """
            lc_dict *info = chain("poster", \(levels));
            printf("poster: post -> %d\\n", (int)host->post(me, "\(name)", NULL, info));
            fflush(stdout);
            host->dict->destroy(info);
            """, extra: chainFunction)
    }

    /// A plugin whose observer of `trigger` starts a thread that waits `delayMs` (the application is
    /// suspended by then), builds a chain of `levels` wraps and posts `name` with it from that thread
    /// (held while suspended, delivered on resume), printing `late: post -> STATUS`.
    public static func latePoster(id: String, trigger: String, name: String, levels: Int, delayMs: Int) -> String {
        IsolationFixtures.observer(id: id, name: trigger, body: """
            pthread_t thread;
            if (pthread_create(&thread, NULL, late_post, NULL) == 0) pthread_detach(thread);
            """, extra: """
            #include <pthread.h>
            \(chainFunction)
            static void *late_post(void *unused) {
                (void)unused;
                usleep(\(delayMs) * 1000);
                lc_dict *info = chain("late", \(levels));
                printf("late: post -> %d\\n", (int)host->post(me, "\(name)", NULL, info));
                fflush(stdout);
                host->dict->destroy(info);
                return NULL;
            }
            """)
    }

    /// A plugin whose observer of `trigger` posts `name` with `{"blob": BYTES}` (`bytes` bytes of
    /// 0x5A), printing `poster: set_bytes -> STATUS` and `poster: post -> STATUS`.
    public static func bigPoster(id: String, trigger: String, name: String, bytes: Int) -> String {
        IsolationFixtures.observer(id: id, name: trigger, body: """
            size_t size = \(bytes);
            unsigned char *blob = malloc(size);
            memset(blob, 0x5A, size);
            lc_dict *info = host->dict->create();
            printf("poster: set_bytes -> %d\\n", (int)host->dict->set_bytes(info, "blob", blob, size));
            printf("poster: post -> %d\\n", (int)host->post(me, "\(name)", NULL, info));
            fflush(stdout);
            host->dict->destroy(info);
            free(blob);
            """)
    }

    /// A plugin observing `name` that prints `counter: N bytes, first X, last Y` for the notification's
    /// `"blob"` (or `counter: no blob`).
    public static func blobCounter(id: String, name: String) -> String {
        IsolationFixtures.observer(id: id, name: name, body: """
            const uint8_t *data = NULL;
            size_t length = 0;
            if (note->user_info && host->dict->get_bytes(note->user_info, "blob", &data, &length) == LC_OK && length > 0) {
                printf("counter: %zu bytes, first %02x, last %02x\\n", length, data[0], data[length - 1]);
            } else {
                printf("counter: no blob\\n");
            }
            fflush(stdout);
            """)
    }

    /// A plugin `id` taking part in state preservation (delegate table, ABI 1.1), whose
    /// `will_encode_restorable_state` does what `KEEPER_MODE` says:
    /// - `good` (or unset): `{"counter": 7}`, a 52-byte archive;
    /// - `segv`, `hang`, `exit`: dies of SIGSEGV, never returns, calls `exit(3)` (before writing);
    /// - `refuse`: `"counter"` = 8, then a `set_bytes` with NULL data and length 5 (refused);
    /// - `deep`: `"counter"` = 8, then a 64-level chain under `"deep"`, which would make the coder
    ///   65 levels deep;
    /// - `big`: `"counter"` = 7 and `"blob"`, `KEEPER_BYTES` bytes of 0xA5.
    /// Every refused write is printed (`keeper: NAME -> STATUS`). `did_decode_restorable_state`
    /// prints `keeper: restored counter N, K keys, blob B bytes`.
    public static func keeper(id: String) -> String {
        """
        #include "lifecycle.h"
        #include <stdio.h>
        #include <stdlib.h>
        #include <string.h>
        static const lc_host_api_t *host;
        \(chainFunction)
        static const char *mode(void) { const char *m = getenv("KEEPER_MODE"); return m ? m : "good"; }
        static void show(const char *what, lc_status status) {
            if (status != LC_OK) { printf("keeper: %s -> %d\\n", what, (int)status); fflush(stdout); }
        }
        static bool should_save(lc_plugin *p, void *s, lc_dict *coder) { (void)p, (void)s, (void)coder; return true; }
        static bool should_restore(lc_plugin *p, void *s, const lc_dict *coder) { (void)p, (void)s, (void)coder; return true; }
        static void will_encode(lc_plugin *p, void *s, lc_dict *coder) {
            (void)p, (void)s;
            const char *m = mode();
            if (!strcmp(m, "segv")) *(volatile int *)0 = 42;
            if (!strcmp(m, "hang")) for (;;) {}
            if (!strcmp(m, "exit")) exit(3);
            int good = !strcmp(m, "good") || !strcmp(m, "big");
            show("set_int", host->dict->set_int(coder, "counter", good ? 7 : 8));
            if (!strcmp(m, "refuse")) show("set_bytes", host->dict->set_bytes(coder, "blob", NULL, 5));
            if (!strcmp(m, "deep")) {
                lc_dict *deep = chain("keeper", 64);
                show("set_dict", host->dict->set_dict(coder, "deep", deep));
                host->dict->destroy(deep);
            }
            if (!strcmp(m, "big")) {
                size_t size = (size_t)strtoull(getenv("KEEPER_BYTES"), NULL, 10);
                unsigned char *blob = malloc(size);
                memset(blob, 0xA5, size);
                show("set_bytes", host->dict->set_bytes(coder, "blob", blob, size));
                free(blob);
            }
        }
        static void did_decode(lc_plugin *p, void *s, const lc_dict *coder) {
            (void)p, (void)s;
            int64_t counter = -1;
            const uint8_t *data = NULL;
            size_t length = 0;
            host->dict->get_int(coder, "counter", &counter);
            host->dict->get_bytes(coder, "blob", &data, &length);
            printf("keeper: restored counter %lld, %zu keys, blob %zu bytes\\n", (long long)counter, host->dict->count(coder), length);
            fflush(stdout);
        }
        static const lc_plugin_delegate_t delegate = {
            .struct_size = sizeof(lc_plugin_delegate_t), .should_save_application_state = should_save,
            .should_restore_application_state = should_restore, .will_encode_restorable_state = will_encode,
            .did_decode_restorable_state = did_decode,
        };
        static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
            (void)state; host = api;
            return host->set_delegate(plugin, &delegate);
        }
        \(IsolationFixtures.descriptorSource(id))
        """
    }
}
