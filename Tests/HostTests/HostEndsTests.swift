import Foundation
import TestSupport
import XCTest

/// The host always hears its signals and always ends: the built `lifecycle-host`, hostile C plugins
/// built at test time, real signals, a real socket file, the JSON trace read back.
final class HostEndsTests: XCTestCase {
    let host = HostEndToEndTests.host
    static let echo = CBuild.products + "/libEcho.so"

    private var folder = ""

    override func setUpWithError() throws {
        folder = try CBuild.temporaryFolder("ends")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
        super.tearDown()
    }

    /// A plugin `id` whose init runs `initBody` (after keeping `host` and `plugin`), with `extra` C above it
    /// and `deinitFunction` (a function of `extra`) as its deinit.
    private func plugin(_ name: String, id: String, extra: String = "", initBody: String, deinitFunction: String = "0") throws -> String {
        let source = """
            #include "lifecycle.h"
            #include <stdio.h>
            #include <stdlib.h>
            static const lc_host_api_t *host;
            static lc_plugin *self;
            \(extra)
            static lc_status plugin_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
                (void)state; host = api; self = plugin;
                \(initBody)
            }
            static const lc_plugin_descriptor_t descriptor = {
                .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                .abi_minor = LC_ABI_VERSION_MINOR, .id = "\(id)", .version = "1.0", .description = "hostile", .init = plugin_init,
                .deinit = \(deinitFunction),
            };
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
            """
        return try CBuild.sharedObject(source, named: name, in: folder)
    }

    /// Observes didBecomeActive with an observer that never returns.
    private func spinner() throws -> String {
        try plugin("spin", id: "com.example.spin",
                   extra: "static void spin(const lc_notification_t *n, void *c) { (void)n, (void)c; for (volatile unsigned long i = 0;; i++) {} }",
                   initBody: #"return host->observe(self, "didBecomeActive", NULL, spin, NULL, NULL);"#)
    }

    private func json(_ line: String) -> [String: Any] {
        (try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]) ?? [:]
    }

    private func kindAndName(_ lines: [String]) -> [String] {
        lines.map { json($0) }.map { "\($0["kind"] ?? "?") \($0["name"] ?? "?")" }
    }

    private func seconds(since start: Date) -> Double { Date().timeIntervalSince(start) }

    /// The last trace line, checked to be the spinner's `watchdog` line for `budget` in `state`; its
    /// fields.
    private func spinnerWatchdogLine(_ process: RunningProcess, budget: String, state: String,
                                     file: StaticString = #filePath, line: UInt = #line) throws -> (fields: [String: Any], detail: String)
    {
        let last = json(try XCTUnwrap(process.output.last, file: file, line: line))
        XCTAssertEqual(last["kind"] as? String, "watchdog", file: file, line: line)
        XCTAssertEqual(last["budget"] as? String, budget, file: file, line: line)
        XCTAssertEqual(last["name"] as? String, "didBecomeActive", file: file, line: line)
        XCTAssertEqual(last["plugin"] as? String, "com.example.spin", file: file, line: line)
        XCTAssertEqual(last["state"] as? String, state, file: file, line: line)
        return (last, try XCTUnwrap(last["detail"] as? String, file: file, line: line))
    }

    // MARK: Signals

    func testSIGTERMOrSIGINTDuringAPendingWaitEndsTheRunAtOnce() throws {
        let script = folder + "/wait.scenario"
        try "launch\nwait 60m\nhome\n".write(toFile: script, atomically: true, encoding: .utf8)
        for (signo, name) in [(SIGTERM, "SIGTERM"), (SIGINT, "SIGINT")] {
            let socket = folder + "/wait-\(name).sock"
            let process = try RunningProcess(host, ["run", "--trace", "json", "--socket", socket, "--no-pressure", "--no-clock",
                                                    "--script", script, "--plugin", Self.echo])
            XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"wait 3600s\"") }, "the wait is pending")
            XCTAssertTrue(FileManager.default.fileExists(atPath: socket))
            let start = Date()
            process.signal(signo)
            let status = process.wait(timeout: 20)
            XCTAssertLessThan(seconds(since: start), 2, "ended at once, not after the wait")
            XCTAssertEqual(status, 0, process.standardError)
            let trace = process.output.filter { $0.hasPrefix("{") }
            let input = try XCTUnwrap(trace.first { json($0)["kind"] as? String == "input" && json($0)["name"] as? String == "terminate" })
            XCTAssertEqual(json(input)["detail"] as? String, "signal \(name)")
            // The active application is terminated through the background (seed 001); nothing of the
            // scenario after the wait runs (no `home`).
            XCTAssertEqual(Array(kindAndName(trace).suffix(8)),
                           ["input terminate", "action terminate", "notification willResignActive", "state inactive", "state background",
                            "notification didEnterBackground", "notification willTerminate", "state not-running"])
            XCTAssertFalse(kindAndName(trace).contains("action home"))
            XCTAssertEqual(Array(process.standardError.split(separator: "\n").map(String.init).filter { $0.hasPrefix("echo:") }.suffix(3)),
                           ["echo: willResignActive", "echo: didEnterBackground", "echo: willTerminate"])
            XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "the socket file is removed")
        }
    }

    func testSIGTERMWhileAnObserverLoopsForeverEndsFromTheWatchdogWithinTheTerminateBudget() throws {
        let socket = folder + "/spin.sock"
        let process = try RunningProcess(host, ["run", "--trace", "json", "--socket", socket, "--no-pressure", "--no-clock",
                                                "--plugin", try spinner(), "--budget", "hang=600", "--budget", "terminate=1"])
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"notification\",\"name\":\"didBecomeActive\"") }, "launched")
        usleep(200_000)  // the observer spins
        XCTAssertTrue(FileManager.default.fileExists(atPath: socket))
        let start = Date()
        process.signal(SIGTERM)
        let status = process.wait(timeout: 20)
        let took = seconds(since: start)
        XCTAssertEqual(status, 5, process.standardError)
        XCTAssertGreaterThanOrEqual(took, 0.9, "the loop had its terminate budget")
        XCTAssertLessThan(took, 2.5, "ended within the terminate budget (1 s), not never")
        let detail = try spinnerWatchdogLine(process, budget: "terminate", state: "active").detail
        XCTAssertTrue(detail.hasPrefix("signal SIGTERM: the application did not end within the terminate budget (1.0"), detail)
        XCTAssertTrue(detail.hasSuffix(" of 1.000 s); the main thread was still in the didBecomeActive observer of 'com.example.spin'; "
            + "the process exits with status 5"), detail)
        XCTAssertTrue(process.standardError.contains("lifecycle-host: watchdog: signal SIGTERM: the application did not end within the terminate budget"),
                      process.standardError)
        XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "the socket file is removed")
    }

    // MARK: The hang budget

    func testALoopingDidBecomeActiveObserverIsReportedAfterTheHangBudget() throws {
        let socket = folder + "/hang.sock"
        let process = try RunningProcess(host, ["run", "--trace", "json", "--socket", socket, "--no-pressure", "--no-clock",
                                                "--plugin", try spinner(), "--budget", "hang=0.5"])
        let active = try XCTUnwrap(process.waitForLine { $0.contains("\"kind\":\"notification\",\"name\":\"didBecomeActive\"") })
        let status = process.wait(timeout: 20)
        XCTAssertEqual(status, 4, process.standardError)
        let (last, detail) = try spinnerWatchdogLine(process, budget: "hang", state: "not-running")
        XCTAssertTrue(detail.hasPrefix("didBecomeActive by 'com.example.spin' overran the hang budget: at least 0.5"), detail)
        XCTAssertTrue(detail.hasSuffix(" of 0.500 s (policy: terminate); the process exits"), detail)
        // Reported after the budget, and within a quarter of it more (plus scheduling).
        let reportedAfter = (last["t"] as? Double ?? 0) - (json(active)["t"] as? Double ?? 0)
        XCTAssertGreaterThanOrEqual(reportedAfter, 0.5)
        XCTAssertLessThan(reportedAfter, 0.9)
        XCTAssertTrue(process.standardError.contains("lifecycle-host: watchdog: didBecomeActive by 'com.example.spin' overran the hang budget"),
                      process.standardError)
        XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "the socket file is removed")
    }

    // MARK: The nesting limit

    func testRepostingHundredThousandDeepIsRefusedAtTheLimitAndEchoBesideItGetsEverything() throws {
        let recurse = try plugin("recurse", id: "com.example.recurse", extra: """
            static int depth, refused_at = -1;
            static void again(const lc_notification_t *n, void *c) {
                (void)n, (void)c;
                if (++depth < 100000) {
                    lc_status s = host->post(self, "com.example.again", NULL, NULL);
                    if (s != LC_OK && refused_at < 0) { refused_at = depth; fprintf(stderr, "refused at depth %d: %d\\n", depth, s); }
                }
                depth--;
            }
            static void active(const lc_notification_t *n, void *c) {
                (void)n, (void)c;
                refused_at = -1;
                fprintf(stderr, "outer post: %d\\n", host->post(self, "com.example.again", NULL, NULL));
            }
            """, initBody: """
            host->observe(self, "com.example.again", NULL, again, NULL, NULL);
            return host->observe(self, "didBecomeActive", NULL, active, NULL, NULL);
            """)
        let script = folder + "/hf.scenario"
        try "launch\nhome\nforeground\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script,
                                           "--plugin", recurse, "--plugin", Self.echo])
        XCTAssertEqual(result.status, 0, result.output)
        let parts = result.output.components(separatedBy: "--stderr--\n")
        let lines = parts[0].split(separator: "\n").map(String.init)
        let trace = lines.filter { $0.hasPrefix("{") }
        // Each didBecomeActive (launch, foreground): one refusal, at the limit, traced, the host goes on.
        let refusals = trace.map { json($0) }.filter { $0["kind"] as? String == "error" }
        XCTAssertEqual(refusals.count, 2)
        for refusal in refusals {
            XCTAssertEqual(refusal["name"] as? String, "post refused")
            XCTAssertEqual(refusal["plugin"] as? String, "com.example.recurse")
            XCTAssertEqual(refusal["detail"] as? String,
                           "com.example.again: 64 dispatches were already nested (the limit is 64); nothing was delivered")
        }
        // The didBecomeActive dispatch is one level, the 63 nested posts the others: the 64th is refused.
        // (With the JSON trace on standard output, the plugins' own output is on standard error.)
        let errorLines = parts.count > 1 ? parts[1].split(separator: "\n").map(String.init) : []
        XCTAssertEqual(errorLines.filter { !$0.contains("AppLifecycle") && !$0.hasPrefix("echo:") },
                       ["refused at depth 63: -17", "outer post: 0", "refused at depth 63: -17", "outer post: 0"])
        XCTAssertEqual(trace, lines, "every line of standard output is the trace's")
        // Echo beside it received every notification the engine delivered, in order.
        let delivered = trace.map { json($0) }.filter { $0["kind"] as? String == "notification" }.map { "echo: \($0["name"] ?? "")" }
        XCTAssertEqual(errorLines.filter { $0.hasPrefix("echo:") }, delivered)
        XCTAssertEqual(delivered, ["echo: didFinishLaunching", "echo: didBecomeActive", "echo: willResignActive", "echo: didEnterBackground",
                                   "echo: willEnterForeground", "echo: didBecomeActive", "echo: willResignActive", "echo: didEnterBackground",
                                   "echo: willTerminate"])
    }

    // MARK: A post flood delays neither the scenario nor signals

    /// Four plugin threads post as fast as the queue's bound lets them, to an observer that spends
    /// ~10 µs a post: the queue holds up to 262,144 posts, seconds of work. Each scenario line, and
    /// the memory warning a SIGUSR1 asks for, still runs within one slice of that work (the loop runs
    /// 2 ms of queued posts a turn; the host's own next step goes first), not behind the whole queue.
    func testAFourThreadPostFloodDelaysNeitherTheScenarioNorASignal() throws {
        let image = try plugin("flood", id: "com.example.flood", extra: """
            #include <pthread.h>
            #include <sched.h>
            #include <stdatomic.h>
            #include <time.h>
            static lc_name flood;
            static atomic_int stopping;
            static pthread_t threads[4];
            static unsigned long seen;
            static void slow(const lc_notification_t *n, void *c) {
                (void)n, (void)c;
                struct timespec start, now;
                clock_gettime(CLOCK_MONOTONIC, &start);
                do clock_gettime(CLOCK_MONOTONIC, &now);
                while ((now.tv_sec - start.tv_sec) * 1000000000L + (now.tv_nsec - start.tv_nsec) < 10000);
                seen++;
            }
            static void *poster(void *arg) {
                (void)arg;
                while (!atomic_load(&stopping))
                    if (host->post_name(self, flood, NULL, NULL) != LC_OK) sched_yield();
                return NULL;
            }
            static void stop_threads(void *state) {
                (void)state;
                atomic_store(&stopping, 1);
                for (int i = 0; i < 4; i++) pthread_join(threads[i], NULL);
            }
            """, initBody: """
            lc_status s = host->name_intern(self, "com.example.flood", &flood);
            if (s == LC_OK) s = host->observe_name(self, flood, NULL, slow, NULL, NULL);
            for (int i = 0; s == LC_OK && i < 4; i++) pthread_create(&threads[i], NULL, poster, NULL);
            return s;
            """, deinitFunction: "stop_threads")
        let script = folder + "/flood.scenario"
        try "launch\nhome\nforeground\nwait 2s\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let process = try RunningProcess(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--plugin", image,
                                                "--script", script])
        // Mid-flood, during the 2 s wait: SIGUSR1 asks for a memory warning.
        XCTAssertNotNil(process.waitForLine(timeout: 20) { $0.contains(#""kind":"action","name":"foreground""#) }, "foreground ran")
        let sent = Date()
        process.signal(SIGUSR1)
        let warning = process.waitForLine(timeout: 20) { $0.contains(#""kind":"action","name":"memory-warning""#) }
        XCTAssertNotNil(warning, "the signal's memory warning ran: \(process.output.suffix(5))")
        XCTAssertLessThan(seconds(since: sent), 1, "the memory warning waited behind the flood")
        XCTAssertEqual(process.wait(timeout: 30), 0, process.standardError)
        // Under the flood the host's thread gets its share of 2 CPUs with four posting threads, so the
        // bounds leave room for the scheduler: the whole queue is seconds of work (4.4 s measured
        // before the slices), one slice 2 ms.
        let actions = process.output.map { json($0) }.filter { $0["kind"] as? String == "action" }
        XCTAssertEqual(actions.map { $0["name"] as? String ?? "?" }, ["launch", "home", "foreground", "memory-warning", "terminate"])
        let times = actions.map { $0["t"] as? Double ?? -1 }
        guard times.count == 5 else { return }
        // launch → home → foreground: one loop turn each (a slice of posts at most); the terminate
        // comes 2 s after the foreground.
        XCTAssertLessThan(times[1] - times[0], 1, "home waited behind the flood: \(times)")
        XCTAssertLessThan(times[2] - times[1], 1, "foreground waited behind the flood: \(times)")
        XCTAssertLessThan(times[4] - times[2], 2 + 1, "terminate waited behind the flood: \(times)")
    }

    // MARK: A crash in the host's process

    /// A plugin in the host's process that crashes (a NULL write in its observer): nothing can catch
    /// the crash, but the host's last words are said from the signal handler — a `crash` line naming
    /// the signal, the state and the plugin whose code faulted — and the socket file is removed; then
    /// the process dies of the signal, as without the handler.
    func testACrashInAPluginObserverWritesTheLastLineAndRemovesTheSocket() throws {
        let crashing = try plugin("crash", id: "com.example.crash",
                                  extra: "static void boom(const lc_notification_t *n, void *c) { (void)n, (void)c; *(volatile int *)0 = 1; }",
                                  initBody: #"return host->observe(self, "didBecomeActive", NULL, boom, NULL, NULL);"#)
        for format in ["json", "text"] {
            let socket = folder + "/crash-\(format).sock"
            let process = try RunningProcess(host, ["run", "--trace", format, "--socket", socket, "--no-pressure", "--no-clock",
                                                    "--plugin", crashing], environment: ["SWIFT_BACKTRACE": "enable=no"])
            XCTAssertEqual(process.wait(timeout: 20), SIGSEGV, "killed by the signal, as without the handler")
            let last = try XCTUnwrap(process.output.last)
            if format == "json" {
                let fields = json(last)
                XCTAssertEqual(fields["kind"] as? String, "crash")
                XCTAssertEqual(fields["name"] as? String, "SIGSEGV")
                XCTAssertEqual(fields["state"] as? String, "active")
                XCTAssertEqual(fields["plugin"] as? String, "com.example.crash")
                XCTAssertEqual(fields["detail"] as? String, "the host's process was killed by SIGSEGV in the code of 'com.example.crash'")
                let previous = json(process.output[process.output.count - 2])
                XCTAssertEqual((fields["seq"] as? Int).map { $0 - 1 }, previous["seq"] as? Int, "the next seq")
            } else {
                XCTAssertTrue(last.hasSuffix("active      crash           SIGSEGV" + String(repeating: " ", count: 45)
                                                 + "com.example.crash  the host's process was killed by SIGSEGV in the code of 'com.example.crash'"),
                              last)
            }
            XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "the socket file is removed")
        }
    }

    // MARK: exit() from a plugin

    /// A plugin calling exit() in its init is refused by its scan (init ran in a process of its own):
    /// the host's process never runs that init, the refusal names the plugin by id, and with no other
    /// plugin the run ends before the launch (status 9).
    func testExitZeroInInitIsRefusedByTheScanNamingThePlugin() throws {
        let exiting = try plugin("exit0", id: "com.example.exit", initBody: "exit(0);")
        let cache = folder + "/cache"
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--plugin", exiting],
                                    environment: ["XDG_CACHE_HOME": cache])
        XCTAssertEqual(result.status, 9, result.output)
        let trace = result.output.components(separatedBy: "--stderr--\n")[0].split(separator: "\n").map(String.init)
        XCTAssertEqual(kindAndName(trace), ["error plugin refused", "error no plugins"])
        let refusal = json(trace[0])
        XCTAssertEqual(refusal["plugin"] as? String, "com.example.exit")
        XCTAssertEqual(refusal["detail"] as? String, "\(exiting): crashed when scanned: plugin com.example.exit: the plugin's process exited "
                       + "with status 0 while running init (remembered in \(cache)/lifecycle-host/plugin-registry; --rescan to scan it again)")
        XCTAssertEqual(json(trace[1])["detail"] as? String, "the plugin asked for could not be loaded (refused: see above); "
                       + "the run ends before the launch (--allow-no-plugins runs the application without them)")
    }

    /// A plugin whose scan was clean but whose init calls exit() in the host's process (init may run
    /// twice: here it exits the second time): intercepted, status 6, an exit event, no socket left.
    func testExitZeroInInitAfterACleanScanGivesStatus6AnExitEventAndNoSocketLeft() throws {
        let mark = folder + "/exit-mark"
        let exiting = try plugin("exit0-late", id: "com.example.exit", extra: "#include <unistd.h>\n#include <fcntl.h>",
                                 initBody: "if (access(\"\(mark)\", F_OK) == 0) { exit(0); }\n    close(open(\"\(mark)\", O_CREAT | O_WRONLY, 0600));\n    return LC_OK;")
        let socket = folder + "/exit.sock"
        let result = try CBuild.run(host, ["run", "--trace", "json", "--socket", socket, "--no-pressure", "--no-clock", "--plugin", exiting],
                                    environment: ["XDG_CACHE_HOME": folder + "/cache-late"])
        XCTAssertEqual(result.status, 6, result.output)
        let parts = result.output.components(separatedBy: "--stderr--\n")
        let trace = parts[0].split(separator: "\n").map(String.init)
        XCTAssertEqual(kindAndName(trace), ["socket \(socket)", "exit exit(0)"])
        let last = json(try XCTUnwrap(trace.last))
        XCTAssertEqual(last["plugin"] as? String, exiting, "named by its path: init runs before the plugin has an id")
        XCTAssertEqual(last["state"] as? String, "not-running")
        XCTAssertEqual(last["detail"] as? String, "called in the init of '\(exiting)', not by the host; the process exits with status 6")
        XCTAssertEqual(parts.count > 1 ? parts[1] : "",
                       "lifecycle-host: exit(0) was called in the init of '\(exiting)', not by the host; the process exits with status 6\n")
        XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "the socket file is removed")
    }

    func testExitInAnObserverNamesTheObserverAndItsPlugin() throws {
        let exiting = try plugin("exit3", id: "com.example.exit",
                                 extra: "static void bye(const lc_notification_t *n, void *c) { (void)n, (void)c; exit(3); }",
                                 initBody: #"return host->observe(self, "didBecomeActive", NULL, bye, NULL, NULL);"#)
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--plugin", exiting])
        XCTAssertEqual(result.status, 6, result.output)
        let trace = result.output.components(separatedBy: "--stderr--\n")[0].split(separator: "\n").map(String.init)
        XCTAssertEqual(Array(kindAndName(trace).suffix(3)), ["state active", "notification didBecomeActive", "exit exit(3)"])
        let last = json(try XCTUnwrap(trace.last))
        XCTAssertEqual(last["plugin"] as? String, "com.example.exit")
        XCTAssertEqual(last["state"] as? String, "active")
        XCTAssertEqual(last["detail"] as? String,
                       "called in the didBecomeActive observer of 'com.example.exit', not by the host; the process exits with status 6")
    }

    /// An `exit()` on a thread the plugin started (the main thread idle in the loop meanwhile) is
    /// traced naming that plugin — found by its code on the thread's stack — not "outside any callback".
    func testExitOnAPluginsOwnThreadNamesThePlugin() throws {
        let exiting = try plugin("thread-exit", id: "com.example.threadexit", extra: """
            #include <pthread.h>
            #include <unistd.h>
            static pthread_t thread;
            static void *later(void *arg) { (void)arg; usleep(100000); exit(4); return NULL; }
            """, initBody: "pthread_create(&thread, NULL, later, NULL); return LC_OK;")
        let script = folder + "/thread-exit.scenario"
        try "launch\nwait 5s\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--plugin", exiting,
                                           "--plugin", Self.echo, "--script", script])
        XCTAssertEqual(result.status, 6, result.output)
        let parts = result.output.components(separatedBy: "--stderr--\n")
        let last = json(try XCTUnwrap(parts[0].split(separator: "\n").last.map(String.init)))
        XCTAssertEqual(last["kind"] as? String, "exit")
        XCTAssertEqual(last["name"] as? String, "exit(4)")
        XCTAssertEqual(last["plugin"] as? String, "com.example.threadexit")
        XCTAssertEqual(last["state"] as? String, "active")
        XCTAssertEqual(last["detail"] as? String,
                       "called on a thread of 'com.example.threadexit' (not the main thread), not by the host; the process exits with status 6")
        XCTAssertTrue(parts.count > 1 && parts[1].hasSuffix(
            "lifecycle-host: exit(4) was called on a thread of 'com.example.threadexit' (not the main thread), not by the host; "
                + "the process exits with status 6\n"), parts.count > 1 ? parts[1] : result.output)
    }

    /// A plugin's `atexit` handler that calls `_exit(0)` cannot turn the host's status into a success:
    /// the host ends with `_exit(status)` after its own flush, and no `atexit` handler runs. Each of
    /// the three statuses a CI job relies on keeps its value: a failing `expect-state` (2), a refused
    /// plugin (3), a scenario that ends with the application running (8).
    func testAPluginsAtexitHandlerCannotRewriteTheExitStatus() throws {
        let rewriting = try plugin("atexit", id: "com.example.atexit",
                                   extra: "#include <unistd.h>\nstatic void bye(void) { _exit(0); }",
                                   initBody: "atexit(bye); return LC_OK;")
        func status(_ scenario: String, plugins: [String]) throws -> Int32 {
            let script = folder + "/atexit.scenario"
            try scenario.write(toFile: script, atomically: true, encoding: .utf8)
            var arguments = ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script]
            for plugin in plugins { arguments += ["--plugin", plugin] }
            return try CBuild.run(host, arguments).status
        }
        XCTAssertEqual(try status("launch\nexpect-state background\nterminate\n", plugins: [rewriting]), 2, "a failing expect-state")
        XCTAssertEqual(try status("launch\nterminate\n", plugins: [rewriting, folder + "/missing.so"]), 3, "a refused plugin")
        XCTAssertEqual(try status("launch\n", plugins: [rewriting]), 8, "the scenario ended with the application running")
        XCTAssertEqual(try status("launch\nterminate\n", plugins: [rewriting]), 0, "a clean end is still 0")
    }

    /// `check` scans a plugin's init in a process of its own first (see PluginScanTests): an exit()
    /// there is a refusal naming the status, and the host's own process never runs that init.
    func testCheckRefusesAPluginThatExitsInInitFromItsScan() throws {
        let exiting = try plugin("exit0", id: "com.example.exit", initBody: "exit(0);")
        let cache = NSTemporaryDirectory() + "lc-ends-cache-\(getpid())-\(UInt32.random(in: 0 ... .max))"
        defer { try? FileManager.default.removeItem(atPath: cache) }
        let result = try CBuild.run(host, ["check", exiting], environment: ["XDG_CACHE_HOME": cache])
        XCTAssertEqual(result.status, 6, result.output)  // docs/host.md: `check` exits 6 when a plugin calls exit() in its init
        XCTAssertEqual(result.output,
                       "\(exiting)\n  refused:     crashed when scanned: plugin com.example.exit: the plugin's process exited with status 0 while running init "
                       + "(remembered in \(cache)/lifecycle-host/plugin-registry; --rescan to scan it again)\n")
    }
}
