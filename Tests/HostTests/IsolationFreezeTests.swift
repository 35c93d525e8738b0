import Foundation
import TestSupport
import XCTest

/// Issue 23, part 1: suspended means frozen. With `--isolate`, a suspended application's plugins'
/// processes are frozen (cgroup v2, cgroup v1 or signals, `--freezer`), thawed before their first
/// callback after the resume, and killed by a purge (the plugin starts again in a new process).
final class IsolationFreezeTests: XCTestCase {
    /// A plugin whose thread, and a child process it forks, spin from init on. At didEnterBackground it
    /// notes its process's CPU time, its child's,
    /// and the wall clock, and arms a timer for 0.3 s (it fires while the application is suspended:
    /// its frame waits for the thaw); at willEnterForeground it prints how much CPU time and wall time
    /// passed since, and whether the timer ran before it.
    static let source = #"""
    #include "lifecycle.h"
    #include <pthread.h>
    #include <stdatomic.h>
    #include <stdio.h>
    #include <signal.h>
    #include <stdlib.h>
    #include <sys/prctl.h>
    #include <string.h>
    #include <time.h>
    #include <unistd.h>
    static const lc_host_api_t *host;
    static pid_t child;
    static long child_at;
    /* The child's CPU time (utime + stime of /proc/PID/stat), in ms. */
    static long child_ms(void) {
        char path[64], text[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)child);
        FILE *file = fopen(path, "r");
        if (!file) return -1;
        size_t n = fread(text, 1, sizeof text - 1, file);
        fclose(file);
        text[n] = 0;
        char *field = strrchr(text, ')');
        unsigned long utime = 0, stime = 0;
        if (!field || sscanf(field + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime, &stime) != 2) return -1;
        return (long)((utime + stime) * 1000 / sysconf(_SC_CLK_TCK));
    }
    static lc_plugin *me;
    static atomic_ulong spins;
    static long cpu_at, wall_at;
    static int timer_ran;
    static long ms(clockid_t clock) {
        struct timespec t;
        clock_gettime(clock, &t);
        return t.tv_sec * 1000L + t.tv_nsec / 1000000;
    }
    static void *spin(void *unused) {
        (void)unused;
        for (;;) atomic_fetch_add_explicit(&spins, 1, memory_order_relaxed);
        return NULL;
    }
    static void fired(void *ctx) { (void)ctx; timer_ran = 1; }
    static void entered_background(const lc_notification_t *note, void *ctx) {
        (void)note, (void)ctx;
        cpu_at = ms(CLOCK_PROCESS_CPUTIME_ID);
        child_at = child_ms();
        wall_at = ms(CLOCK_MONOTONIC);
        timer_ran = 0;
        lc_source_id timer;
        host->add_timer(me, 0.3, fired, NULL, &timer);
    }
    static void entering_foreground(const lc_notification_t *note, void *ctx) {
        (void)note, (void)ctx;
        fprintf(stderr, "freeze: cpu_ms=%ld wall_ms=%ld timer_ran=%d child_ms=%ld\n", ms(CLOCK_PROCESS_CPUTIME_ID) - cpu_at,
                ms(CLOCK_MONOTONIC) - wall_at, timer_ran, child_ms() - child_at);
    }
    static void launched(const lc_notification_t *note, void *ctx) {
        (void)note, (void)ctx;
        fprintf(stderr, "launched: pid=%d\n", (int)getpid());
    }
    static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
        (void)state; host = api; me = plugin;
        pthread_t thread;
        pthread_create(&thread, NULL, spin, NULL);
        pthread_detach(thread);
        /* A child process that spins too (it stays in the plugin's process group and cgroup). It dies
           with its parent: in the host's process (the in-process run) nothing else would end it. */
        pid_t parent = getpid();
        child = fork();
        if (child == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent) _exit(0);
            for (;;) {}
        }
        fprintf(stderr, "init: pid=%d\n", (int)getpid());
        lc_status status = host->observe(plugin, "didEnterBackground", NULL, entered_background, NULL, NULL);
        if (status == LC_OK) status = host->observe(plugin, "didFinishLaunching", NULL, launched, NULL, NULL);
        return status == LC_OK ? host->observe(plugin, "willEnterForeground", NULL, entering_foreground, NULL, NULL) : status;
    }
    static const lc_plugin_descriptor_t descriptor = {
        .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
        .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.spinner", .version = "1.0", .description = "freeze fixture",
        .init = fixture_init,
    };
    LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
    """#

    /// Suspended for 2.5 s (no background task: `home` suspends at once), with an isolated-call budget
    /// of 1 s: a frame waiting in a frozen process is not failed for the time it was frozen.
    static let scenario = """
    launch
    home
    expect-state suspended
    wait 2500ms
    foreground
    expect-state active
    terminate
    """

    private func spinner() throws -> String { try IsolationFixtures.build(Self.source, named: "spinner") }

    /// The freeze line's fields.
    private func measured(_ run: IsolationTests.Run) throws -> (cpu: Int, wall: Int, timerRan: Int, child: Int) {
        let line = try XCTUnwrap(run.printed["freeze"]?.first, run.output)
        var fields: [String: Int] = [:]
        for pair in line.dropFirst("freeze: ".count).split(separator: " ") {
            let parts = pair.split(separator: "=")
            if parts.count == 2, let value = Int(parts[1]) { fields[String(parts[0])] = value }
        }
        return (try XCTUnwrap(fields["cpu_ms"], line), try XCTUnwrap(fields["wall_ms"], line), try XCTUnwrap(fields["timer_ran"], line),
                try XCTUnwrap(fields["child_ms"], line))
    }

    /// Runs the scenario with `--freezer freezer`; checks what every freezer must give: status 0, no
    /// failure, the resume reached the plugin, and the suspension lasted the 2.5 s.
    private func runFrozen(_ freezer: String, file: StaticString = #filePath, line: UInt = #line) throws
        -> (run: IsolationTests.Run, cpu: Int, timerRan: Int)
    {
        let run = try IsolationTests.run(["--plugin", try spinner(), "--isolate", "--isolate-budget", "1s", "--freezer", freezer],
                                         script: Self.scenario)
        XCTAssertEqual(run.status, 0, run.output, file: file, line: line)
        XCTAssertTrue(run.failures().isEmpty, run.output, file: file, line: line)
        let (cpu, wall, timerRan, child) = try measured(run)
        XCTAssertGreaterThanOrEqual(wall, 2500, run.output, file: file, line: line)
        // The child process the plugin forked spins as its thread does: frozen with it, or running on.
        if freezer == "none" {
            XCTAssertGreaterThan(child, 1000, run.output, file: file, line: line)
        } else {
            XCTAssertGreaterThanOrEqual(child, 0, run.output, file: file, line: line)
            XCTAssertLessThan(child, 400, run.output, file: file, line: line)
        }
        return (run, cpu, timerRan)
    }

    private func freezerLines(_ run: IsolationTests.Run) -> [String] {
        run.records.filter { $0.kind == "plugin-freezer" }.map(\.description)
    }

    /// The engine's trace apart from the freezer's lines (`Run.trace` leaves them out): the same as
    /// with the plugin in the host's process.
    private func assertSameLifeCycle(_ run: IsolationTests.Run, file: StaticString = #filePath, line: UInt = #line) throws {
        let inProcess = try IsolationTests.run(["--plugin", try spinner()], script: Self.scenario)
        XCTAssertEqual(run.trace, inProcess.trace, file: file, line: line)
    }

    func testACgroupFrozenPluginGainsNoCPUTimeWhileSuspendedAndTheResumeReachesIt() throws {
        guard FileManager.default.isWritableFile(atPath: Self.ownCgroupV2() ?? "/nonexistent") else {
            throw XCTSkip("no writable cgroup v2 here (/proc/self/cgroup's 0:: line): the cgroup freezer cannot be tried")
        }
        let (run, cpu, timerRan) = try runFrozen("cgroup")
        // The thread spins at full speed before and after; frozen, the 2.5 s cost it nothing but the
        // moments around the freeze and the thaw (a few ms here; the bound leaves room for a host slowed
        // by a sanitizer, and the unfrozen control gains more than 1 s).
        XCTAssertLessThan(cpu, 400, run.output)
        XCTAssertEqual(timerRan, 1, "the timer that fired while it was frozen ran after the thaw, before willEnterForeground")
        XCTAssertEqual(freezerLines(run), [
            "plugin-freezer frozen suspended [] (a suspended application's isolated plugins are frozen with cgroup v2 "
                + "(cgroup.freeze of the plugin's own cgroup), and thawed before their first callback after it resumes)",
        ], run.output)
        try assertSameLifeCycle(run)
    }

    func testASignalFrozenPluginGainsNoCPUTimeWhileSuspended() throws {
        let (run, cpu, timerRan) = try runFrozen("signal")
        XCTAssertLessThan(cpu, 400, run.output)
        XCTAssertEqual(timerRan, 1, run.output)
        XCTAssertEqual(freezerLines(run).count, 1, run.output)
        XCTAssertTrue(freezerLines(run)[0].contains("frozen with signals (SIGSTOP and SIGCONT"), run.output)
    }

    func testACgroupV1FrozenPluginGainsNoCPUTimeWhileSuspended() throws {
        guard Self.cgroupV1FreezerWritable() else {
            throw XCTSkip("no writable cgroup v1 freezer hierarchy here: the cgroup-v1 freezer cannot be tried")
        }
        let (run, cpu, timerRan) = try runFrozen("cgroup-v1")
        XCTAssertLessThan(cpu, 400, run.output)
        XCTAssertEqual(timerRan, 1, run.output)
        XCTAssertTrue(freezerLines(run).first?.contains("frozen with cgroup v1 freezer") == true, run.output)
    }

    /// The control: the same run unfrozen spins through the suspension (so the frozen runs' figures
    /// are the freezer's doing), and the trace says once that nothing is frozen.
    func testWithTheFreezerOffThePluginRunsOnWhileSuspended() throws {
        let (run, cpu, _) = try runFrozen("none")
        XCTAssertGreaterThan(cpu, 1000, run.output)
        XCTAssertEqual(freezerLines(run), [
            "plugin-freezer not frozen suspended [] (a suspended application's isolated plugins run on: the freezer is turned off (none))",
        ], run.output)
    }

    func testTheDefaultFreezerIsTheStrongestThatWorksHere() throws {
        let (run, cpu, _) = try runFrozen("auto")
        XCTAssertLessThan(cpu, 400, run.output)
        let expected = FileManager.default.isWritableFile(atPath: Self.ownCgroupV2() ?? "/nonexistent") ? "cgroup v2"
            : Self.cgroupV1FreezerWritable() ? "cgroup v1 freezer" : "signals"
        XCTAssertTrue(freezerLines(run).first?.contains("frozen with \(expected)") == true, run.output)
    }

    /// A purge of the suspended application kills the frozen processes with no callback; the next
    /// launch starts the plugin again in a new process (its init again), before its first callback.
    func testAPurgeKillsTheFrozenProcessesAndThePluginStartsAgainInANewProcess() throws {
        let run = try IsolationTests.run(["--plugin", try spinner(), "--isolate"], script: """
            launch
            home
            expect-state suspended
            purge
            expect-state not-running
            launch
            expect-state active
            terminate
            """)
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertTrue(run.failures().isEmpty, run.output)
        let pid = { (line: String) in line.split(separator: "=").last.map(String.init) ?? "" }
        let inits = (run.printed["init"] ?? []).map(pid), launches = (run.printed["launched"] ?? []).map(pid)
        XCTAssertEqual(inits.count, 2, run.output)
        XCTAssertEqual(launches, inits, "each launch reached the process its init ran in")
        XCTAssertNotEqual(inits.first, inits.last, "a new process")
        XCTAssertEqual(Array(freezerLines(run).dropFirst()), [
            "plugin-freezer killed not-running [com.example.spinner] (its frozen processes were killed with the suspended application, "
                + "with no callback; it starts again in a new process at the next launch)",
            "plugin-freezer restarted inactive [com.example.spinner] (in a new process, before the launch)",
        ], run.output)
        let order = run.records.filter { ["state", "plugin-freezer", "action"].contains($0.kind) }.map { "\($0.kind) \($0.name)" }
        XCTAssertEqual(order, [
            "action launch", "state inactive", "state active", "action home", "state inactive", "state background",
            "state suspended", "plugin-freezer frozen", "action purge", "state not-running", "plugin-freezer killed",
            "action launch", "state inactive", "plugin-freezer restarted", "state active", "action terminate", "state inactive", "state background",
            "state not-running",
        ], run.output)
    }

    /// `--freezer` takes its words and no others.
    func testAnUnknownFreezerIsRefusedWithTheWordsItTakes() throws {
        let run = try IsolationTests.run(["--isolate", "--freezer", "ice"], script: "launch\n")
        XCTAssertNotEqual(run.status, 0)
        XCTAssertTrue(run.output.contains("--freezer must be auto, cgroup, cgroup-v1, signal or none, not 'ice'"), run.output)
    }

    /// This process's cgroup v2 folder, if the unified hierarchy holds it.
    static func ownCgroupV2() -> String? {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.hasPrefix("0::") })
        else { return nil }
        let path = String(line.dropFirst(3))
        for mount in ["/sys/fs/cgroup/unified", "/sys/fs/cgroup"] where FileManager.default.fileExists(atPath: mount + "/cgroup.procs") {
            if (try? String(contentsOfFile: mount + "/cgroup.controllers", encoding: .utf8)) != nil || mount.hasSuffix("unified") {
                return mount + (path == "/" ? "" : path)
            }
        }
        return nil
    }

    static func cgroupV1FreezerWritable() -> Bool {
        guard let text = try? String(contentsOfFile: "/proc/self/cgroup", encoding: .utf8),
              let line = text.split(separator: "\n").first(where: { $0.split(separator: ":").dropFirst().first == "freezer" })
        else { return false }
        let path = String(line.split(separator: ":", maxSplits: 2)[2])
        return FileManager.default.isWritableFile(atPath: "/sys/fs/cgroup/freezer" + (path == "/" ? "" : path))
    }
}
