import Foundation

/// Plugins that make the host keep ever more for them (issue 18, hole 2), built with `cc` at test
/// time: the call each repeats is spelled in its source.
public enum QuotaFixtures {
    /// A plugin `id` whose timer, first 0.1 s after init and then every 0.5 s, `bursts` times, re-arms
    /// itself (taking the slot it gave back by firing) and makes `burst` calls, each the C statement
    /// `call` setting `lc_status s` (`name` holds a fresh custom name "com.example.flood.nN" for each
    /// call). The first refused call is printed on standard error: "flood: refused after N calls with
    /// STATUS"; after the last burst, "flood: done".
    public static func flood(id: String, call: String, burst: Int, bursts: Int = 3) -> String {
        """
        #include "lifecycle.h"
        #include <stdio.h>
        static const lc_host_api_t *host;
        static lc_plugin *me;
        static long accepted, serial;
        static int reported, done;
        static void on_note(const lc_notification_t *n, void *c) { (void)n, (void)c; }
        static void nothing(void *c) { (void)c; }
        static void burst(void *c) {
            (void)c;
            if (++done < \(bursts)) host->add_timer(me, 0.5, burst, NULL, NULL);
            char name[64];
            for (long i = 0; i < \(burst); i++) {
                lc_status s;
                snprintf(name, sizeof name, "com.example.flood.n%ld", serial++);
                (void)name, (void)on_note, (void)nothing;
                \(call)
                if (s == LC_OK) {
                    accepted++;
                } else if (!reported) {
                    reported = 1;
                    fprintf(stderr, "flood: refused after %ld calls with %d\\n", accepted, (int)s);
                }
            }
            if (done == \(bursts)) fprintf(stderr, "flood: done\\n");
        }
        static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
            (void)state; host = api; me = plugin;
            return host->add_timer(plugin, 0.1, burst, NULL, NULL);
        }
        \(IsolationFixtures.descriptorSource(id))
        """
    }

    /// A plugin whose init makes `count` one-day timers, ignoring refusals, and prints how many were
    /// accepted ("init: N timers").
    public static func initTimers(id: String, count: Int) -> String {
        """
        #include "lifecycle.h"
        #include <stdio.h>
        static void nothing(void *c) { (void)c; }
        static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)state;
            long accepted = 0;
            for (long i = 0; i < \(count); i++) accepted += host->add_timer(plugin, 86400.0, nothing, NULL, NULL) == LC_OK;
            fprintf(stderr, "init: %ld timers\\n", accepted);
            return LC_OK;
        }
        \(IsolationFixtures.descriptorSource(id))
        """
    }

    /// An isolated plugin that writes `count` `addTimer` frames of its own on the socket to the host
    /// (fd 3), around its runner, from an observer of didBecomeActive (which then waits for the
    /// host): a process that ignores the runner's refusals.
    public static func rawTimers(id: String, count: Int) -> String {
        IsolationFixtures.observer(id: id, name: "didBecomeActive", body: """
            unsigned char frame[24] = {24, 0, 0, 0, 0x8A, 0x00, 0, 0};
            double seconds = 86400.0;
            memcpy(frame + 16, &seconds, sizeof seconds);
            for (unsigned long i = 0; i < \(count); i++) {
                unsigned long long word = (1ull << 40) + i;
                memcpy(frame + 8, &word, sizeof word);
                if (write(3, frame, sizeof frame) != sizeof frame) abort();
            }
            pause();  /* still in the observer when the host reads them */
            """)
    }

    /// A plugin whose init logs `count` lines ("flood line N") through its host table.
    public static func chatty(id: String, count: Int) -> String {
        """
        #include "lifecycle.h"
        #include <stdio.h>
        static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
            (void)state;
            char line[64];
            for (long i = 0; i < \(count); i++) {
                snprintf(line, sizeof line, "flood line %ld", i);
                host->log(plugin, LC_LOG_INFO, line);
            }
            return LC_OK;
        }
        \(IsolationFixtures.descriptorSource(id))
        """
    }
}
