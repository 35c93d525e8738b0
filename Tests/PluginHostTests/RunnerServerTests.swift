import AppLifecycle
import Foundation
import LifecycleC
import PluginHost
import TestSupport
import XCTest

/// The runners' fork server (`RunnerServer`): every isolated plugin's process is a copy of one server
/// process, yet a child of the process that loads it — born in its cgroup, leading its own process
/// group, named `plugin-runner` — and a server that is gone is replaced at the next load. Checked in
/// this process, through the Swift API, with real processes.
final class RunnerServerTests: XCTestCase {
    private var folder = ""

    override func setUpWithError() throws {
        IsolationRunner.executable = CBuild.products + "/lifecycle-plugin-runner"
        folder = try CBuild.temporaryFolder("runner-server")
    }

    override func tearDown() {
        try? FileManager.default.removeItem(atPath: folder)
        super.tearDown()
    }

    /// A plugin whose init writes what its process sees of itself to `folder/NAME.txt`: its parent,
    /// its process group, its own pid, its cgroup line, and its command line's second word.
    private func describer(_ name: String) throws -> String {
        let report = folder + "/\(name).txt"
        return try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.server.\(name)", name: "didReceiveMemoryWarning", body: "",
            extra: """
                static void describe(void) {
                    char cgroup[512] = "", line[4096] = "";
                    FILE *file = fopen("/proc/self/cgroup", "r");
                    if (file) { while (fgets(line, sizeof line, file)) if (strncmp(line, "0::", 3) == 0) { strcpy(cgroup, line); break; } fclose(file); }
                    char *newline = strchr(cgroup, '\\n'); if (newline) *newline = 0;
                    char arguments[256] = {0};
                    file = fopen("/proc/self/cmdline", "r");
                    size_t length = file ? fread(arguments, 1, sizeof arguments - 1, file) : 0;
                    if (file) fclose(file);
                    const char *second = length > strlen(arguments) + 1 ? arguments + strlen(arguments) + 1 : "";
                    char folder[1024] = "";
                    if (!getcwd(folder, sizeof folder)) strcpy(folder, "?");
                    char cpus[256] = "";
                    file = fopen("/proc/thread-self/status", "r");
                    if (file) { while (fgets(line, sizeof line, file)) if (strncmp(line, "Cpus_allowed_list:", 18) == 0) { sscanf(line + 18, "%255s", cpus); break; } fclose(file); }
                    FILE *out = fopen("\(report)", "w");
                    fprintf(out, "%d %d %d %s %s\\n%s\\n%s\\n", (int)getppid(), (int)getpgrp(), (int)getpid(), second, cgroup, folder, cpus);
                    fclose(out);
                }
                """,
            extraInit: "describe();"), named: "server\(name)")
    }

    private struct Seen {
        let parent: Int32, group: Int32, pid: Int32, name: String, cgroup: String
        /// Its folder, and its thread's CPUs (`Cpus_allowed_list`).
        let folder: String, cpus: String
    }

    private func seen(_ name: String) throws -> Seen {
        let lines = try String(contentsOfFile: folder + "/\(name).txt", encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(lines.count, 3, "\(lines)")
        let words = lines[0].split(separator: " ", maxSplits: 4).map(String.init)
        XCTAssertEqual(words.count, 5, "\(words)")
        return Seen(parent: Int32(words[0]) ?? 0, group: Int32(words[1]) ?? 0, pid: Int32(words[2]) ?? 0, name: words[3],
                    cgroup: words.count > 4 ? words[4] : "", folder: lines.count > 1 ? lines[1] : "", cpus: lines.count > 2 ? lines[2] : "")
    }

    /// The children of this process whose command line's second word is `name`.
    private func children(named name: String) -> [Int32] {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? []
        return entries.compactMap(Int32.init).filter { pid in
            guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
                  let close = stat.lastIndex(of: ")") else { return false }
            let fields = stat[stat.index(after: close)...].split(separator: " ")
            guard fields.count > 1, Int32(fields[1]) == getpid(), fields[0] != "Z" else { return false }
            let words = ((try? Data(contentsOf: URL(fileURLWithPath: "/proc/\(pid)/cmdline"))) ?? Data()).split(separator: 0)
            return words.count > 1 && String(decoding: words[1], as: UTF8.self) == name
        }.sorted()
    }

    func testARunnerIsAChildOfTheLoadingProcessInAGroupAndACgroupOfItsOwnNamedPluginRunner() throws {
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        _ = try handle.loadIsolatedPlugin(path: try describer("first"), settings: IsolationSettings())
        _ = try handle.loadIsolatedPlugin(path: try describer("second"), settings: IsolationSettings())
        let first = try seen("first"), second = try seen("second")
        for runner in [first, second] {
            XCTAssertEqual(runner.parent, getpid(), "the runner is this process's child, not the server's")
            XCTAssertEqual(runner.group, runner.pid, "it leads a process group of its own")
            XCTAssertEqual(runner.name, "plugin-runner")
        }
        if geteuid() == 0 {
            for runner in [first, second] {
                XCTAssertTrue(runner.cgroup.contains("/lifecycle-plugin-\(getpid())-"), "born in a cgroup of its own: \(runner.cgroup)")
            }
            XCTAssertNotEqual(first.cgroup, second.cgroup)
        } else {
            print("RunnerServerTests: not root, so no cgroup is made here; the cgroup lines are not checked")
        }
        XCTAssertEqual(children(named: "plugin-runner").filter { [first.pid, second.pid].contains($0) }, [first.pid, second.pid].sorted())
        XCTAssertFalse(children(named: RunnerServer.serverCommand).isEmpty, "the server runs beside them")
    }

    func testAServerThatIsGoneIsReapedAndReplacedAtTheNextLoad() throws {
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        _ = try handle.loadIsolatedPlugin(path: try describer("before"), settings: IsolationSettings())
        let before = Set(children(named: RunnerServer.serverCommand))
        XCTAssertFalse(before.isEmpty)
        XCTAssertFalse(before.contains(try seen("before").pid), "the runner is not a server")
        // Every server of this process (one a thread that loaded isolated plugins) is killed.
        for server in before { XCTAssertEqual(kill(server, SIGKILL), 0) }
        _ = try handle.loadIsolatedPlugin(path: try describer("after"), settings: IsolationSettings())
        XCTAssertEqual(try seen("after").parent, getpid(), "the plugin loaded")
        let added = Set(children(named: RunnerServer.serverCommand)).subtracting(before)
        XCTAssertEqual(added.count, 1, "a new server replaced the killed ones")
        for server in before {
            XCTAssertFalse(FileManager.default.fileExists(atPath: "/proc/\(server)"), "a killed server is reaped, not left a zombie")
        }
    }

    /// A runner starts where a process started by the loading thread would: in the loading process's
    /// working folder as it is at the load (not at the server's start), on the loading thread's CPUs.
    func testARunnerHasTheLoadingThreadsWorkingFolderAndCPUs() throws {
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        _ = try handle.loadIsolatedPlugin(path: try describer("warm"), settings: IsolationSettings())  // a server exists
        // The calling thread's CPUs, set and restored through a small C library (Glibc's Swift module
        // has no sched_setaffinity).
        let pinning = try CBuild.sharedObject("""
            #define _GNU_SOURCE
            #include <sched.h>
            static cpu_set_t saved;
            int pin_first(void) {
                if (sched_getaffinity(0, sizeof saved, &saved) != 0) return -1;
                cpu_set_t first; CPU_ZERO(&first); CPU_SET(0, &first);
                return sched_setaffinity(0, sizeof first, &first);
            }
            int unpin(void) { return sched_setaffinity(0, sizeof saved, &saved); }
            """, named: "pinning", in: folder)
        let library = try XCTUnwrap(dlopen(pinning, RTLD_NOW))
        typealias Call = @convention(c) () -> Int32
        let pin = unsafeBitCast(try XCTUnwrap(dlsym(library, "pin_first")), to: Call.self)
        let unpin = unsafeBitCast(try XCTUnwrap(dlsym(library, "unpin")), to: Call.self)
        let previous = FileManager.default.currentDirectoryPath
        defer { _ = chdir(previous) }
        XCTAssertEqual(chdir(folder), 0)
        XCTAssertEqual(pin(), 0)
        defer { XCTAssertEqual(unpin(), 0) }
        _ = try handle.loadIsolatedPlugin(path: try describer("moved"), settings: IsolationSettings())
        let moved = try seen("moved")
        XCTAssertEqual(URL(fileURLWithPath: moved.folder).resolvingSymlinksInPath().path,
                       URL(fileURLWithPath: folder).resolvingSymlinksInPath().path)
        XCTAssertEqual(moved.cpus, "0", "the loading thread's CPUs")
        XCTAssertNotEqual(try seen("warm").folder, moved.folder)
    }

    /// A runner's standard output is the loading process's as it is at the load, not the server's (which
    /// may have started before the loading process pointed its standard output elsewhere: `lifecycle-host`
    /// starts its server first thing, then moves standard output to standard error under a JSON trace).
    func testARunnerHasTheLoadingProcesssStandardOutputAsItIsAtTheLoad() throws {
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        _ = try handle.loadIsolatedPlugin(path: try describer("early"), settings: IsolationSettings())  // a server exists
        let talker = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.server.talker", name: "didReceiveMemoryWarning", body: "",
            extraInit: "printf(\"the runner's own line\\n\"); fflush(stdout);"), named: "servertalker")
        let output = folder + "/output.txt"
        let file = open(output, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        XCTAssertGreaterThanOrEqual(file, 0)
        fflush(nil)
        let saved = dup(STDOUT_FILENO)
        XCTAssertEqual(dup2(file, STDOUT_FILENO), STDOUT_FILENO)
        let loaded = Result { try handle.loadIsolatedPlugin(path: talker, settings: IsolationSettings()) }
        fflush(nil)
        XCTAssertEqual(dup2(saved, STDOUT_FILENO), STDOUT_FILENO)
        close(saved)
        close(file)
        _ = try loaded.get()
        XCTAssertEqual(try String(contentsOfFile: output, encoding: .utf8), "the runner's own line\n")
    }

    /// Runners started together (`prestartIsolated`, asked of the server back to back) whose server does
    /// not answer (stopped) are started again by their loads, by a new server; the stuck one is ended.
    func testRunnersStartedTogetherWhoseServerDoesNotAnswerAreStartedByTheirLoads() throws {
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        _ = try handle.loadIsolatedPlugin(path: try describer("first"), settings: IsolationSettings())
        let stuck = children(named: RunnerServer.serverCommand)
        XCTAssertFalse(stuck.isEmpty)
        for server in stuck { XCTAssertEqual(kill(server, SIGSTOP), 0) }
        let paths = [try describer("second"), try describer("third")]
        handle.prestartIsolated(paths: paths, settings: IsolationSettings())  // waits RunnerServer.answerLimitMilliseconds
        for path in paths { _ = try handle.loadIsolatedPlugin(path: path, settings: IsolationSettings()) }
        handle.discardPrestarted()
        for name in ["second", "third"] {
            let runner = try seen(name)
            XCTAssertEqual(runner.parent, getpid(), "\(name) loaded, a child of this process")
            XCTAssertEqual(runner.name, "plugin-runner")
        }
        for server in stuck {
            XCTAssertFalse(FileManager.default.fileExists(atPath: "/proc/\(server)"), "the stuck server is ended and reaped")
        }
    }

    /// Runners started together (`prestartIsolated`) are each what a runner started alone is, and their
    /// loads take them in the caller's order.
    func testRunnersStartedTogetherAreEachAChildInAGroupOfItsOwn() throws {
        let handle = try AppHandle(configuration: Configuration())
        defer { handle.shutdown() }
        let names = (1...10).map { "together\($0)" }
        let paths = try names.map(describer)
        handle.prestartIsolated(paths: paths, settings: IsolationSettings())
        let ids = try paths.map { try handle.loadIsolatedPlugin(path: $0, settings: IsolationSettings()).id }
        handle.discardPrestarted()
        XCTAssertEqual(ids, names.map { "com.example.server.\($0)" })
        var pids: Set<Int32> = []
        for name in names {
            let runner = try seen(name)
            XCTAssertEqual(runner.parent, getpid())
            XCTAssertEqual(runner.group, runner.pid)
            XCTAssertEqual(runner.name, "plugin-runner")
            pids.insert(runner.pid)
        }
        XCTAssertEqual(pids.count, names.count, "a process each")
    }
}
