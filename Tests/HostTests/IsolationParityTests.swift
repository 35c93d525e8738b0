import Foundation
import TestSupport
import XCTest

/// Where an isolated plugin used to be told or treated otherwise than in the host's process (issue 18,
/// point 8): a completion after its request ended is refused the same way, and an `exit()` in deinit
/// does not go unreported.
final class IsolationParityTests: XCTestCase {
    typealias Run = IsolationTests.Run

    func testACompletionAfterTheWatchdogEndedItsRequestIsRefusedWithNotFoundAsInProcess() throws {
        let plugin = try IsolationFixtures.build("""
            #include "lifecycle.h"
            #include <pthread.h>
            #include <stdio.h>
            #include <unistd.h>
            static lc_complete_fn saved_complete;
            static lc_completion_token saved_token;
            static lc_plugin *saved_plugin;
            static void *complete_late(void *unused) {
                (void)unused;
                usleep(600000);
                lc_status status = saved_complete(saved_plugin, saved_token, LC_FETCH_NEW_DATA);
                printf("late: complete -> %d\\n", (int)status);
                fflush(stdout);
                return NULL;
            }
            static void perform_fetch(lc_plugin *plugin, void *state, lc_complete_fn complete, lc_completion_token token) {
                (void)state;
                saved_complete = complete, saved_token = token, saved_plugin = plugin;
                pthread_t thread;
                if (pthread_create(&thread, NULL, complete_late, NULL) == 0) pthread_detach(thread);
            }
            static const lc_plugin_delegate_t delegate = { .struct_size = sizeof(lc_plugin_delegate_t), .perform_fetch = perform_fetch };
            static lc_status fixture_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                (void)state; return host->set_delegate(plugin, &delegate);
            }
            \(IsolationFixtures.descriptorSource("com.example.late"))
            """, named: "late")
        let arguments = ["--plugin", plugin, "--background-mode", "fetch", "--watchdog", "report", "--budget", "completion=0.3"]
        let script = "fetch\nwait 1s\nterminate\n"
        let inProcess = try IsolationTests.run(arguments, script: script)
        // Unfrozen: the late completion is made while the application is suspended, which a frozen
        // plugin cannot do (IsolationFreezeTests); this test is about how a late one is refused.
        let isolated = try IsolationTests.run(arguments + ["--isolate", "--freezer", "none"], script: script)
        XCTAssertEqual(inProcess.printed["late"], ["late: complete -> -8"], inProcess.output)  // LC_ERR_NOT_FOUND, as documented
        XCTAssertEqual(isolated.printed["late"], inProcess.printed["late"], isolated.output)
        XCTAssertEqual(isolated.trace.filter { $0.hasPrefix("completion ") }, [
            "completion application:performFetchWithCompletionHandler: suspended [com.example.late] (newData, late: the watchdog had already ended the request)",
        ])
        XCTAssertEqual(isolated.trace, inProcess.trace)
        XCTAssertEqual(isolated.status, 0, isolated.output)
    }

    func testAnExitInAnIsolatedPluginsDeinitIsReportedAsItsFailure() throws {
        let source = IsolationFixtures.initialiser(id: "com.example.exitdeinit", body: "return LC_OK;")
            .replacingOccurrences(of: ".init = fixture_init,", with: ".init = fixture_init, .deinit = fixture_deinit,")
            .replacingOccurrences(of: "static const lc_plugin_descriptor_t descriptor", with: """
                static void fixture_deinit(void *state) { (void)state; exit(3); }
                static const lc_plugin_descriptor_t descriptor
                """)
        let plugin = try IsolationFixtures.build(source, named: "exitdeinit")
        let run = try IsolationTests.run(["--plugin", plugin, "--isolate"], scenario: "launch-foreground")
        XCTAssertEqual(run.failures().map(\.description), [
            "plugin-failed exit 3 not-running [com.example.exitdeinit] (exited with status 3; while handling deinit; not restarted (policy never))",
        ], run.output)
        XCTAssertEqual(run.records.last?.kind, "plugin-failed", "reported when it happened: at the unload, after the run")
        XCTAssertEqual(run.status, 7, "an isolated plugin failed, if only at its unload: \(run.output)")
        // A plugin that fails while it is being unloaded is not started again, whatever the policy.
        let restarting = try IsolationTests.run(["--plugin", plugin, "--isolate", "--restart", "on-failure"], scenario: "launch-foreground")
        XCTAssertEqual(restarting.failures().map(\.description), [
            "plugin-failed exit 3 not-running [com.example.exitdeinit] (exited with status 3; while handling deinit; not restarted (it was being unloaded))",
        ], restarting.output)
        XCTAssertFalse(restarting.records.contains { $0.kind == "plugin-restarted" }, restarting.output)
    }
}
