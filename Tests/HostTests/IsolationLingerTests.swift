import Foundation
import TestSupport
import XCTest

/// After answering a call the host waited for, the plugin's process waits a moment in one blocking
/// read for the host's next frame instead of going back to its loop (`RunnerLink.linger`), until its
/// plugin first queues work on that loop from another thread (`perform_async`). Such work must run
/// within a linger at worst, never only when the host next sends something.
final class IsolationLingerTests: XCTestCase {
    /// A plugin whose `openURL` (a call the host waits for) is answered while its own thread queues a
    /// `perform_async` every 2 ms; each callback measures how long its work waited. At the end it
    /// prints how many ran and the longest wait.
    static let source = #"""
    #define LC_DECLARE_DELEGATE_FUNCTIONS
    #include "lifecycle.h"
    #include <pthread.h>
    #include <stdatomic.h>
    #include <stdio.h>
    #include <time.h>
    static const lc_host_api_t *host;
    static lc_plugin *me;
    static atomic_int queued, ran, refused;
    static atomic_long longest;
    static int opened;
    static long now_us(void) {
        struct timespec t;
        clock_gettime(CLOCK_MONOTONIC, &t);
        return t.tv_sec * 1000000L + t.tv_nsec / 1000;
    }
    static void performed(void *ctx) {
        long waited = now_us() - (long)(intptr_t)ctx;
        long seen = atomic_load(&longest);
        while (waited > seen && !atomic_compare_exchange_weak(&longest, &seen, waited)) {}
        atomic_fetch_add(&ran, 1);
    }
    static void *producer(void *unused) {
        (void)unused;
        // At least 0.6 s of queued work, every 2 ms: it spans two openURL calls and the quiet after them.
        for (int i = 0; i < 300; i++) {
            struct timespec pause = {0, 2000000};
            nanosleep(&pause, NULL);
            if (host->perform_async(me, performed, (void *)(intptr_t)now_us()) == LC_OK) atomic_fetch_add(&queued, 1);
            else atomic_fetch_add(&refused, 1);
        }
        return NULL;
    }
    bool application_openURL_options(lc_app *app, const char *url, const lc_dict *options) {
        (void)app, (void)url, (void)options;
        if (opened++ == 0) {
            pthread_t thread;
            pthread_create(&thread, NULL, producer, NULL);
            pthread_detach(thread);
        }
        return true;
    }
    static void on_terminate(const lc_notification_t *note, void *ctx) {
        (void)note, (void)ctx;
        fprintf(stderr, "linger: queued=%d ran=%d refused=%d longest_us=%ld opened=%d\n", atomic_load(&queued), atomic_load(&ran),
                atomic_load(&refused), atomic_load(&longest), opened);
    }
    static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
        (void)state; host = api; me = plugin;
        return host->observe(plugin, "willTerminate", NULL, on_terminate, NULL, NULL);
    }
    static const lc_plugin_descriptor_t descriptor = {
        .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
        .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.linger", .version = "1.0", .description = "linger fixture",
        .init = fixture_init,
    };
    LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
    """#

    /// Four waited calls, each followed by 400 ms in which the host sends the process nothing.
    static let scenario = """
    launch
    open-url app://one
    wait 400ms
    open-url app://two
    wait 400ms
    open-url app://three
    wait 400ms
    open-url app://four
    wait 400ms
    terminate
    """

    func testWorkQueuedFromAPluginThreadRunsWhileTheProcessLingers() throws {
        let plugin = try IsolationFixtures.build(Self.source, named: "linger")
        let run = try IsolationTests.run(["--plugin", plugin, "--isolate"], script: Self.scenario)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertTrue(run.failures().isEmpty, run.output)
        let line = try XCTUnwrap(run.printed["linger"]?.first, run.output)
        var fields: [String: Int] = [:]
        for pair in line.dropFirst("linger: ".count).split(separator: " ") {
            let parts = pair.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
        }
        XCTAssertEqual(fields["opened"], 4, line)
        XCTAssertEqual(fields["refused"], 0, line)
        // The producer's 300 rounds (0.6 s, more if sleeps overshoot) end well before terminate (1.6 s
        // after the first openURL), and every one of them has run by willTerminate.
        XCTAssertEqual(fields["queued"], 300, line)
        XCTAssertEqual(fields["ran"], 300, line)
        // A queued perform waits at most one linger (1 ms asked; the kernel's tick rounds it up to
        // 4 ms at 250 Hz, 10 ms at 100 Hz) and a loop turn. Had the process gone on waiting for the
        // host's next frame, work queued after an openURL would have waited up to 400 ms.
        let longest = try XCTUnwrap(fields["longest_us"], line)
        XCTAssertLessThan(longest, 100_000, line)
    }
}
