import Foundation
import TestSupport
import XCTest

/// What a plugin in the host's process can no longer do to another with the host's own API (issue 18,
/// hole 6): rewrite the other plugins' host-API tables by making its own page writable, or act in
/// another plugin's name with a handle found in memory. The real host, C plugins built here, the JSON
/// trace read back.
final class ForgedHandleTests: XCTestCase {
    let host = HostEndToEndTests.host
    private var folder = ""

    override func setUpWithError() throws { folder = try CBuild.temporaryFolder("forged") }
    override func tearDown() { try? FileManager.default.removeItem(atPath: folder) }

    private func json(_ line: Substring) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
    }

    private func plugin(_ name: String, id: String, body: String, initBody: String) throws -> String {
        try CBuild.sharedObject("""
            #include "lifecycle.h"
            #include <dlfcn.h>
            #include <stdint.h>
            #include <stdio.h>
            #include <stdlib.h>
            #include <sys/mman.h>
            #include <unistd.h>
            static const lc_host_api_t *host;
            static lc_plugin *self;
            \(body)
            static lc_status plugin_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)state; host = api; self = plugin;
                \(initBody)
            }
            static const lc_plugin_descriptor_t descriptor = {
                .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                .abi_minor = LC_ABI_VERSION_MINOR, .id = "\(id)", .version = "1.0", .description = "forged-handle test",
                .init = plugin_init,
            };
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
            """, named: name, in: folder)
    }

    /// A plugin that logs a greeting on didBecomeActive through its own table.
    private func greeter() throws -> String {
        try plugin("greeter", id: "com.example.greeter", body: """
            static void hello(const lc_notification_t *n, void *c) { (void)n, (void)c; host->log(self, LC_LOG_WARNING, "greeter says hello"); }
            """, initBody: #"return host->observe(self, "didBecomeActive", NULL, hello, NULL, NULL);"#)
    }

    /// The attack of the issue: make the page of its own table writable, then rewrite every copy of the
    /// `log` function in that page. With one table a page it rewrites its own table only; the greeter,
    /// loaded first, logs its own words.
    func testAPluginThatUnprotectsItsTablesPageRewritesOnlyItsOwnTable() throws {
        let greeter = try greeter()
        let rewriter = try plugin("rewriter", id: "com.example.rewriter", body: """
            static void hijacked(lc_plugin *plugin, lc_log_level level, const char *message) {
                (void)plugin, (void)level, (void)message; fprintf(stderr, "hijacked\\n");
            }
            """, initBody: """
            long page = sysconf(_SC_PAGESIZE);
            uintptr_t start = (uintptr_t)host & ~(uintptr_t)(page - 1);
            if (mprotect((void *)start, (size_t)page, PROT_READ | PROT_WRITE) != 0) return LC_ERR_INTERNAL;
            void *log = (void *)host->log;
            int rewritten = 0;
            for (uintptr_t at = start; at + sizeof(void *) <= start + (uintptr_t)page; at += sizeof(void *))
                if (*(void **)at == log) { *(void **)at = (void *)hijacked; rewritten++; }
            fprintf(stderr, "rewriter: rewrote %d tables\\n", rewritten);
            return LC_OK;
            """)
        let script = folder + "/s.scenario"
        try "launch\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--plugin", greeter,
                                           "--plugin", rewriter, "--script", script])
        XCTAssertEqual(result.status, 0, result.output)
        XCTAssertTrue(result.output.contains("rewriter: rewrote 1 tables\n"), result.output)
        XCTAssertTrue(result.output.contains("plugin=com.example.greeter [PluginHost] greeter says hello"), result.output)
        XCTAssertFalse(result.output.contains("hijacked"), result.output)
    }

    /// A victim keeps its `lc_plugin *` where another plugin can find it (here exported, as a scan of
    /// its memory would find it). The thief, inside its own observer, calls the host with it — to remove
    /// the victim's observers, to post in its name — and every call is refused and traced; a handle
    /// the host never gave out (a heap address, a neighbour's number) is refused as one; the victim
    /// keeps its observers (terminated while suspended, it gets no willTerminate: as on iOS).
    func testAHandleUsedInsideAnotherPluginsCallbackIsRefusedAndTraced() throws {
        let victim = try plugin("victim", id: "com.example.victim", body: """
            LC_EXPORT lc_plugin *victim_handle;
            static void seen(const lc_notification_t *n, void *c) { (void)c; printf("victim: %s\\n", n->name); fflush(stdout); }
            """, initBody: """
            victim_handle = self;
            lc_status s = host->observe(self, "willResignActive", NULL, seen, NULL, NULL);
            if (s == LC_OK) s = host->observe(self, "didEnterBackground", NULL, seen, NULL, NULL);
            return s == LC_OK ? host->observe(self, "willTerminate", NULL, seen, NULL, NULL) : s;
            """)
        let thief = try plugin("thief", id: "com.example.thief", body: """
            static void steal(const lc_notification_t *n, void *c) {
                (void)n, (void)c;
                void *image = dlopen(getenv("VICTIM"), RTLD_NOW | RTLD_NOLOAD);
                lc_plugin **found = image ? (lc_plugin **)dlsym(image, "victim_handle") : NULL;
                if (!found) { printf("thief: no handle\\n"); return; }
                int refused = 0;
                for (lc_observer_token token = 1; token <= 64; token++)
                    if (host->remove_observer(*found, token) == LC_ERR_INVALID_ARGUMENT) refused++;
                printf("thief: remove_observer refused %d of 64\\n", refused);
                printf("thief: post %d\\n", host->post(*found, "com.example.forged", NULL, NULL));
                printf("thief: heap address %d\\n", host->post((lc_plugin *)&found, "com.example.forged", NULL, NULL));
                printf("thief: neighbour %d\\n", host->post((lc_plugin *)((uintptr_t)*found + 1), "com.example.forged", NULL, NULL));
                fflush(stdout);
            }
            """, initBody: #"return host->observe(self, "didBecomeActive", NULL, steal, NULL, NULL);"#)
        let script = folder + "/s.scenario"
        try "launch\nhome\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--plugin", victim,
                                           "--plugin", thief, "--script", script], environment: ["VICTIM": victim])
        XCTAssertEqual(result.status, 0, result.output)
        let parts = result.output.components(separatedBy: "--stderr--\n")
        let stdout = parts[0]
        // With the JSON trace on standard output, the plugins' own printing goes to standard error.
        let printed = (parts.count > 1 ? parts[1] : "").split(separator: "\n").filter { $0.hasPrefix("thief:") || $0.hasPrefix("victim:") }
        XCTAssertEqual(printed, ["thief: remove_observer refused 64 of 64", "thief: post -1", "thief: heap address -1", "thief: neighbour -1",
                                 "victim: willResignActive", "victim: didEnterBackground"], result.output)
        let refusals = stdout.split(separator: "\n").map(json).filter { $0["kind"] as? String == "handle-refused" }
        XCTAssertEqual(refusals.count, 65, "64 removals and the post, each traced")
        XCTAssertEqual(refusals.first?["name"] as? String, "remove_observer")
        XCTAssertEqual(refusals.first?["plugin"] as? String, "com.example.thief")
        XCTAssertEqual(refusals.first?["detail"] as? String,
                       "called with the handle of 'com.example.victim' while a callback of 'com.example.thief' ran: refused")
        XCTAssertEqual(refusals.last?["name"] as? String, "post")
        XCTAssertFalse(stdout.contains("com.example.forged"), "nothing was posted")
    }
}
