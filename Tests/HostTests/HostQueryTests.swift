import Foundation
import TestSupport
import XCTest

/// ABI 1.5's host-API reads, as seed 002 tells apps to use them: `is_protected_data_available`
/// (`UIApplication.isProtectedDataAvailable`) and `background_time_remaining`
/// (`backgroundTimeRemaining`), read by a C plugin in the host's process and isolated (where each is a
/// `query` to the host): the same lines in both modes (issue 20).
final class HostQueryTests: XCTestCase {
    static let source = #"""
    #include "lifecycle.h"
    #include <stdio.h>
    #include <string.h>
    static const lc_host_api_t *host;
    static lc_plugin *me;
    static lc_task_id task;
    static void report(const char *when) {
        double left = host->background_time_remaining(me);
        const char *time = left < 0 ? "unlimited" : left == 0 ? "none" : (left > 25 && left <= 30) ? "limited (25-30 s)" : "other";
        printf("query: %s protected=%d time=%s\n", when, host->is_protected_data_available(me), time);
        fflush(stdout);
    }
    static void on_note(const lc_notification_t *note, void *ctx) {
        (void)ctx;
        // Held in the background by a task, so that the background time is counted.
        if (strcmp(note->name, "willResignActive") == 0 && task == 0) host->begin_background_task(me, "hold", NULL, NULL, &task);
        report(note->name);
    }
    static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
        (void)state; host = api; me = plugin;
        printf("query: struct covers 1.5: %s\n",
               api->struct_size >= offsetof(lc_host_api_t, background_time_remaining) + sizeof api->background_time_remaining ? "yes" : "no");
        printf("query: bad handle protected=%d time=%.1f\n", api->is_protected_data_available(NULL),
               api->background_time_remaining(NULL));
        const char *names[] = {"didBecomeActive", "willResignActive", "didEnterBackground", "protectedDataWillBecomeUnavailable",
                               "protectedDataDidBecomeAvailable", "com.example.ping"};
        for (int i = 0; i < 6; i++) {
            lc_status status = api->observe(plugin, names[i], NULL, on_note, NULL, NULL);
            if (status != LC_OK) return status;
        }
        return LC_OK;
    }
    """# + "\n#include <stddef.h>\n" + IsolationFixtures.descriptorSource("com.example.query")

    func testPluginsReadProtectedDataAndBackgroundTimeInBothModes() throws {
        let plugin = try IsolationFixtures.build(Self.source, named: "hostquery")
        let script = "launch\nhome\nlock\npost com.example.ping\nunlock\nterminate\n"
        let (inProcess, _, lines) = try IsolationTests.runBothModes(["--plugin", plugin], script: script, printed: "query",
                                                                sameTrace: false)  // a task begun in an isolated observer is traced when the host reads it
        XCTAssertEqual(lines, [
            "query: struct covers 1.5: yes",
            "query: bad handle protected=0 time=0.0",
            "query: didBecomeActive protected=1 time=unlimited",
            "query: willResignActive protected=1 time=unlimited",
            "query: didEnterBackground protected=1 time=limited (25-30 s)",
            // Posted before the data goes (as its name says), then unavailable until the unlock.
            "query: protectedDataWillBecomeUnavailable protected=1 time=limited (25-30 s)",
            "query: com.example.ping protected=0 time=limited (25-30 s)",
            "query: protectedDataDidBecomeAvailable protected=1 time=limited (25-30 s)",
        ], inProcess.output)
    }
}
