import Foundation
import TestSupport
import XCTest

/// Isolated plugins (`run --isolate`), as users run them: the built host, real plugins built with cc,
/// real processes dying of real signals. Every assertion reads the JSON trace.
final class IsolationTests: XCTestCase {
    static let host = CBuild.products + "/lifecycle-host"
    static let scenarios = CBuild.root + "/docs/scenarios"
    static func example(_ name: String) -> String { CBuild.products + "/lib\(name).so" }

    /// One run: the trace as records, each plugin's printed lines by prefix, the exit status.
    struct Run {
        struct Record: Equatable, CustomStringConvertible {
            let kind: String, name: String, state: String, plugin: String, detail: String
            var scene = ""
            var description: String { "\(kind) \(name) \(state) [\(plugin)] (\(detail))" + (scene.isEmpty ? "" : " {\(scene)}") }
        }

        var records: [Record] = []
        var printed: [String: [String]] = [:]
        var status: Int32 = 0
        var output = ""

        /// The engine's events: the host's own `plugin` lines left out, and its `input` lines (a
        /// scenario's `wait` starts when the line is read, which timers may precede by a hair), and the
        /// isolated plugins' freezer (`plugin-freezer`: isolation's own, absent in-process), so that the
        /// life cycles of both modes compare.
        var trace: [String] {
            records.filter { $0.kind != "plugin" && $0.kind != "input" && $0.kind != "plugin-freezer" }.map(\.description)
        }
        func failures() -> [Record] { records.filter { $0.kind == "plugin-failed" } }
    }

    func run(_ arguments: [String], script: String? = nil, scenario: String? = nil, environment: [String: String] = [:]) throws -> Run {
        try Self.run(arguments, script: script, scenario: scenario, environment: environment)
    }

    /// Runs the host with `arguments` and `script` twice, with the plugin in the host's process and then
    /// `--isolate`d: both runs end with status 0, the plugin prints the same `prefix` lines and (with
    /// `sameTrace`) the engine's trace is the same. Returns both runs and the lines.
    static func runBothModes(_ arguments: [String], script: String, printed prefix: String, sameTrace: Bool = true,
                             file: StaticString = #filePath, line: UInt = #line) throws -> (inProcess: Run, isolated: Run, lines: [String])
    {
        let inProcess = try run(arguments, script: script)
        let isolated = try run(arguments + ["--isolate"], script: script)
        XCTAssertEqual(inProcess.status, 0, inProcess.output, file: file, line: line)
        XCTAssertEqual(isolated.status, 0, isolated.output, file: file, line: line)
        let lines = inProcess.printed[prefix] ?? []
        XCTAssertEqual(isolated.printed[prefix] ?? [], lines, file: file, line: line)
        if sameTrace { XCTAssertEqual(isolated.trace, inProcess.trace, file: file, line: line) }
        return (inProcess, isolated, lines)
    }

    /// Runs the host with the JSON trace and no OS sources; `script`: a scenario's text.
    static func run(_ arguments: [String], script: String? = nil, scenario: String? = nil, environment: [String: String] = [:]) throws -> Run {
        var arguments = ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock"] + arguments
        if let scenario { arguments += ["--script", "\(Self.scenarios)/\(scenario).scenario"] }
        if let script {
            let folder = try CBuild.temporaryFolder("isolation-script")
            try script.write(toFile: folder + "/s.scenario", atomically: true, encoding: .utf8)
            arguments += ["--script", folder + "/s.scenario"]
        }
        let owner = ownerMark.split(separator: "=", maxSplits: 1).map(String.init)
        let result = try CBuild.run(Self.host, arguments, environment: environment.merging([owner[0]: owner[1]]) { mine, _ in mine })
        var run = Run(status: result.status, output: result.output)
        // With the JSON trace on standard output, the plugins' own lines are on standard error.
        var onStandardError = false
        for line in result.output.split(separator: "\n", omittingEmptySubsequences: false) {
            if line == "--stderr--" { onStandardError = true }
            guard !onStandardError, line.hasPrefix("{"), let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else {
                if let colon = line.firstIndex(of: ":") { run.printed[String(line[..<colon]), default: []].append(String(line)) }
                continue
            }
            run.records.append(Run.Record(kind: object["kind"] as? String ?? "", name: object["name"] as? String ?? "",
                                          state: object["state"] as? String ?? "", plugin: object["plugin"] as? String ?? "",
                                          detail: (object["detail"] as? String ?? "").replacingOccurrences(of: Self.scenarios + "/", with: ""),
                                          scene: object["scene"] as? String ?? ""))
        }
        return run
    }

    // MARK: The same life, in another process

    /// Every example plugin through the demo scenario, isolated and in-process: the same trace, the
    /// same lines printed by each plugin. The one difference an isolated plugin makes is time: a
    /// completion handler called inside the fetch comes back after the next plugin's fetch was called.
    func testTheDemoIsolatedGivesTheSameTraceAndOutputAsInProcess() throws {
        let plugins = ["Echo", "StateKeeper", "Greeter", "CacheTrimmer", "Sessions"].flatMap { ["--plugin", Self.example($0)] }
        func demo(_ extra: [String]) throws -> Run {
            let archive = try CBuild.temporaryFolder("isolation-archive")
            return try run(plugins + ["--background-mode", "fetch", "--background-mode", "remote-notification", "--archive", archive] + extra,
                           scenario: "demo", environment: ["LC_STATEKEEPER_FILE": archive + "/protected.txt"])
        }
        let inProcess = try demo([])
        let frozen = try demo(["--isolate"])
        // Frozen while suspended (the default), the demo's purge kills the plugins' processes and the next
        // launch starts them anew (decision 56): their own memory is gone (StateKeeper opens its file in
        // init again, CacheTrimmer's cache is whole again), so their printed lines differ from the host's
        // process by design; the engine's trace does not. Unfrozen, the lines are the same too.
        XCTAssertEqual(frozen.status, 0, frozen.output)
        let lifeCycle = { (run: Run) in run.trace.filter { !$0.hasPrefix("completion ") } }  // completions: in their order below
        XCTAssertEqual(lifeCycle(frozen), lifeCycle(inProcess))
        XCTAssertEqual(frozen.records.filter { $0.kind == "plugin-freezer" }.map(\.name), ["frozen"] + Array(repeating: "killed", count: 5)
                           + Array(repeating: "restarted", count: 5), frozen.output)
        let isolated = try demo(["--isolate", "--freezer", "none"])
        XCTAssertEqual(inProcess.status, 0, inProcess.output)
        XCTAssertEqual(isolated.status, 0, isolated.output)
        XCTAssertEqual(isolated.records.filter { $0.kind == "plugin" }.count, 5)
        XCTAssertTrue(isolated.records.filter { $0.kind == "plugin" }.allSatisfy { $0.detail.hasSuffix("(isolated)") })
        let completions = { (run: Run) in run.trace.filter { $0.hasPrefix("completion ") } }
        XCTAssertEqual(completions(isolated), completions(inProcess))
        XCTAssertEqual(completions(frozen), completions(inProcess))
        XCTAssertEqual(isolated.trace.filter { !$0.hasPrefix("completion ") }, inProcess.trace.filter { !$0.hasPrefix("completion ") })
        XCTAssertGreaterThan(inProcess.trace.count, 150)
        for prefix in ["echo", "statekeeper", "greeter", "cachetrimmer"] {
            // The demo terminates while CacheTrimmer's 50 ms flush timer is pending: whether it fires
            // before the host exits is a race in either mode, so its last line may be missing in either.
            func settled(_ lines: [String]) -> [String] {
                lines.last == "cachetrimmer: flushed 0 entries" && prefix == "cachetrimmer" ? Array(lines.dropLast()) : lines
            }
            XCTAssertEqual(settled(isolated.printed[prefix] ?? []), settled(inProcess.printed[prefix] ?? []), prefix)
            XCTAssertFalse(inProcess.printed[prefix, default: []].isEmpty, prefix)
        }
        XCTAssertTrue(isolated.failures().isEmpty)
    }

    /// Echo isolated receives every notification of every scenario in the in-process order, and the
    /// engine's trace does not change.
    func testEchoIsolatedReceivesTheInProcessOrderInEveryScenario() throws {
        let names = try FileManager.default.contentsOfDirectory(atPath: Self.scenarios)
            .filter { $0.hasSuffix(".scenario") && $0 != "scenes.scenario" && $0 != "demo.scenario" }.map { String($0.dropLast(9)) }.sorted()
        XCTAssertGreaterThan(names.count, 10)
        for name in names {
            let modes = ["--background-mode", "fetch", "--background-mode", "remote-notification"]
            let extra = name == "exits-on-suspend" ? ["--exits-on-suspend"] : []
            let inProcess = try run(["--plugin", Self.example("Echo")] + modes + extra, scenario: name)
            let isolated = try run(["--plugin", Self.example("Echo"), "--isolate", "org.applifecycle.echo"] + modes + extra, scenario: name)
            XCTAssertEqual(isolated.status, inProcess.status, name)
            XCTAssertEqual(isolated.printed["echo"], inProcess.printed["echo"], name)
            XCTAssertEqual(isolated.trace, inProcess.trace, name)
        }
    }
}

extension IsolationTests {
    /// The pids of the plugin runners running now (`lifecycle-plugin-runner plugin-runner …` in /proc).
    /// The plugin runners started by this test process's hosts: those whose environment carries
    /// `ownerMark` (`run` gives it to every host it starts; runners inherit it), so that runners of
    /// another test process on the same machine are not counted.
    static func runnerPIDs() -> Set<Int32> {
        var pids = Set<Int32>()
        for entry in (try? FileManager.default.contentsOfDirectory(atPath: "/proc")) ?? [] {
            guard let pid = Int32(entry), let data = FileManager.default.contents(atPath: "/proc/\(entry)/cmdline"),
                  String(decoding: data, as: UTF8.self).split(separator: "\0").contains("plugin-runner"),
                  let environment = FileManager.default.contents(atPath: "/proc/\(entry)/environ"),
                  String(decoding: environment, as: UTF8.self).split(separator: "\0").contains(Substring(ownerMark))
            else { continue }
            pids.insert(pid)
        }
        return pids
    }

    /// `LC_TEST_OWNER=PID` of this test process (see `runnerPIDs`).
    static let ownerMark = "LC_TEST_OWNER=\(getpid())"

    /// `--isolate` starts every plugin's runner at once, then loads them in the command line's order: the
    /// trace and the plugins' lines are those of one-by-one loading, and the runner started for a
    /// `--plugin` the host then refuses (a folder) is dismissed and reaped: none is left running.
    func testRunnersStartedTogetherLoadInOrderAndOneNotTakenIsDismissed() throws {
        let before = Self.runnerPIDs()
        let folder = try CBuild.temporaryFolder("isolation-prestart")
        let plugins = ["--plugin", Self.example("Echo"), "--plugin", folder, "--plugin", Self.example("Greeter")]
        let script = "launch\nhome\nforeground\nterminate\n"
        let inProcess = try run(plugins, script: script)
        let isolated = try run(plugins + ["--isolate"], script: script)
        XCTAssertEqual(isolated.status, 3, "a refused plugin: status 3\n\(isolated.output)")
        XCTAssertEqual(isolated.status, inProcess.status)
        XCTAssertEqual(isolated.trace, inProcess.trace)
        XCTAssertEqual(isolated.records.filter { $0.kind == "plugin" }.map(\.plugin),
                       ["org.applifecycle.echo", "org.applifecycle.greeter"], "loaded in the command line's order")
        XCTAssertEqual(isolated.printed["echo"], inProcess.printed["echo"])
        XCTAssertTrue(isolated.output.contains("plugin refused: \(folder): it is a folder, not a plugin file"), isolated.output)
        XCTAssertEqual(Self.runnerPIDs().subtracting(before), [], "every runner the host started has ended")
    }

    /// `run --isolate` starts the runners' server first thing, before it has settled what the runners
    /// inherit: they still get what they got before — standard output pointed at standard error under
    /// the JSON trace (the trace alone on standard output), and an environment without systemd's
    /// variables (they must not talk to the service manager as the service).
    func testRunnersOfAServerStartedFirstGetTheSettledOutputAndEnvironment() throws {
        let folder = try CBuild.temporaryFolder("isolation-early-server")
        let report = folder + "/environment.txt"
        let plugin = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.earlyserver", name: "didReceiveMemoryWarning", body: "",
            extraInit: """
                FILE *out = fopen("\(report)", "w");
                fprintf(out, "%s %s %s %s\\n", getenv("NOTIFY_SOCKET") ? "set" : "unset", getenv("WATCHDOG_USEC") ? "set" : "unset",
                        getenv("WATCHDOG_PID") ? "set" : "unset", getenv("LC_EARLY_SERVER_KEPT") ? "kept" : "lost");
                fclose(out);
                printf("earlyserver: on the plugin's standard output\\n");
                fflush(stdout);
                """), named: "earlyserver")
        let run = try run(["--isolate", "--plugin", plugin], script: "launch\nterminate\n",
                          environment: ["NOTIFY_SOCKET": "@lifecycle-test-no-listener-\(getpid())", "WATCHDOG_USEC": "60000000",
                                        "LC_EARLY_SERVER_KEPT": "1"])
        XCTAssertEqual(try String(contentsOfFile: report, encoding: .utf8), "unset unset unset kept\n", run.output)
        XCTAssertEqual(run.records.filter { $0.kind == "plugin" }.map(\.plugin), ["com.example.earlyserver"], run.output)
        let parts = run.output.components(separatedBy: "--stderr--")
        XCTAssertEqual(parts.count, 2, run.output)
        XCTAssertFalse(parts[0].contains("earlyserver:"), "standard output holds the trace alone\n\(run.output)")
        XCTAssertTrue(parts.last?.contains("earlyserver: on the plugin's standard output") == true, "the plugin's line, on standard error\n\(run.output)")
    }

    /// More plugins than runners started ahead (32): the first 32 start at once, the rest as their loads
    /// come; all 40 load, in the folder's order, and none of their runners is left after the run.
    func testAFolderOfMorePluginsThanTheRunnersStartedAheadLoadsThemAllInOrder() throws {
        let before = Self.runnerPIDs()
        let folder = try CBuild.temporaryFolder("isolation-prestart-many")
        let ids = (0..<40).map { String(format: "com.example.many%02d", $0) }
        for (index, id) in ids.enumerated() {
            _ = try CBuild.sharedObject(CBuild.plugin(id: id), named: String(format: "p%02d", index), in: folder)
        }
        let run = try run(["--isolate", "--plugin-dir", folder], script: "launch\nterminate\n")
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.records.filter { $0.kind == "plugin" }.map(\.plugin), ids)
        XCTAssertEqual(Self.runnerPIDs().subtracting(before), [], "every runner the host started has ended")
    }

    /// The runners start side by side: the second plugin's process has opened it (its constructor
    /// ran, in its own process) while the first plugin's init is still running.
    func testTheSecondRunnerOpensItsPluginWhileTheFirstPluginsInitRuns() throws {
        let folder = try CBuild.temporaryFolder("isolation-prestart-order")
        let stamp = """
            #include <stdio.h>
            #include <time.h>
            #include <unistd.h>
            static void stamp(const char *what) {
                struct timespec now; clock_gettime(CLOCK_MONOTONIC, &now);
                char path[600]; snprintf(path, sizeof path, "\(folder)/%s", what);
                FILE *f = fopen(path, "w"); if (f) { fprintf(f, "%lld", (long long)now.tv_sec * 1000000000LL + now.tv_nsec); fclose(f); }
            }
            """
        let slow = try CBuild.sharedObject(CBuild.plugin(id: "com.example.slowinit", initBody: "usleep(400000); stamp(\"first-init-done\"); return LC_OK;",
                                                         extra: stamp), named: "slowinit", in: folder)
        let second = try CBuild.sharedObject(CBuild.plugin(id: "com.example.second",
                                                           extra: stamp + "__attribute__((constructor)) static void opened(void) { stamp(\"second-opened\"); }"),
                                             named: "second", in: folder)
        let run = try run(["--isolate", "--plugin", slow, "--plugin", second], script: "launch\nterminate\n")
        XCTAssertEqual(run.status, 0, run.output)
        func read(_ name: String) throws -> Int64 { try XCTUnwrap(Int64(String(contentsOfFile: folder + "/" + name, encoding: .utf8))) }
        let initDone = try read("first-init-done"), opened = try read("second-opened")
        XCTAssertLessThan(opened, initDone, "the second runner opened its plugin \(Double(opened - initDone) / 1e6) ms after the first init ended")
    }

    /// `status` of a running host lists an isolated plugin like any other, marked `isolated`, until it fails.
    func testStatusMarksIsolatedPluginsAndDropsAFailedOne() throws {
        let folder = try CBuild.temporaryFolder("isolation-status")
        let socket = folder + "/host.sock"
        let crasher = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.status.segv", name: "didReceiveMemoryWarning", body: "raise(SIGSEGV);"), named: "statussegv")
        let process = try RunningProcess(Self.host, ["run", "--trace", "json", "--socket", socket, "--no-signals", "--no-pressure", "--no-clock",
                                                     "--plugin", Self.example("Echo"), "--plugin", crasher, "--isolate", "com.example.status.segv"])
        defer { _ = process.wait(timeout: 2) }
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") })
        func plugins() throws -> [String: Bool] {
            let status = try CBuild.run(Self.host, ["status", "--socket", socket])
            let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any], status.output)
            let list = try XCTUnwrap(object["plugins"] as? [[String: Any]])
            return Dictionary(uniqueKeysWithValues: list.map { ($0["id"] as? String ?? "", $0["isolated"] as? Bool ?? false) })
        }
        XCTAssertEqual(try plugins(), ["org.applifecycle.echo": false, "com.example.status.segv": true])
        XCTAssertTrue(try CBuild.run(Self.host, ["send", "--socket", socket, "memory-warning"]).output.hasPrefix("ok active"))
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"plugin-failed\"") })
        XCTAssertEqual(try plugins(), ["org.applifecycle.echo": false])
        _ = try CBuild.run(Self.host, ["send", "--socket", socket, "terminate"])
        XCTAssertEqual(process.wait(timeout: 5), 7)
    }

    /// Every runner of `run --isolate` is a copy of the host's runner server, yet each is the host's own
    /// child, named `plugin-runner` in `ps`, running the runner executable beside the host
    /// (`lifecycle-plugin-runner`, not the host's own); after the run, none is left.
    func testRunnersAreTheHostsChildrenNamedPluginRunner() throws {
        let before = Self.runnerPIDs()
        func prober(_ name: String) throws -> String {
            try IsolationFixtures.build(IsolationFixtures.observer(
                id: "com.example.parents.\(name)", name: "didReceiveMemoryWarning", body: "",
                extra: """
                    static void second_word(pid_t pid, char *word, size_t size) {
                        char path[64], bytes[512] = {0};
                        snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pid);
                        FILE *file = fopen(path, "r");
                        size_t length = file ? fread(bytes, 1, sizeof bytes - 1, file) : 0;
                        if (file) fclose(file);
                        snprintf(word, size, "%s", length > strlen(bytes) + 1 ? bytes + strlen(bytes) + 1 : "");
                    }
                    static void probe(void) {
                        char own[64], parent[64], executable[4096] = {0};
                        second_word(getpid(), own, sizeof own);
                        second_word(getppid(), parent, sizeof parent);
                        ssize_t length = readlink("/proc/self/exe", executable, sizeof executable - 1);
                        const char *slash = length > 0 ? strrchr(executable, '/') : NULL;
                        fprintf(stderr, "probe: \(name) is %s in %s, child of %s\\n", own, slash ? slash + 1 : "?", parent);
                    }
                    """,
                extraInit: "probe();"), named: "parents\(name)")
        }
        let run = try run(["--plugin", try prober("one"), "--plugin", try prober("two"), "--isolate"], script: "launch\nterminate\n")
        XCTAssertEqual(run.status, 0, run.output)
        XCTAssertEqual(run.printed["probe"], ["probe: one is plugin-runner in lifecycle-plugin-runner, child of run",
                                               "probe: two is plugin-runner in lifecycle-plugin-runner, child of run"],
                       run.output)
        XCTAssertEqual(Self.runnerPIDs().subtracting(before), [], "every runner the host started has ended")
    }

    /// A host with no runner beside it (a copy of `lifecycle-host` alone in a folder) refuses an isolated
    /// plugin saying where it looked and what to set; `LC_PLUGIN_RUNNER` then names the runner and the same
    /// copy runs it isolated. The runner itself, started by hand, says it is started by a host only.
    func testAHostWithoutItsRunnerSaysWhereItLookedAndTheRunnerIsForHostsOnly() throws {
        let folder = try CBuild.temporaryFolder("lonely-host")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let lonely = folder + "/lifecycle-host"
        try FileManager.default.copyItem(atPath: Self.host, toPath: lonely)
        let plugin = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.lonely", name: "didReceiveMemoryWarning", body: ""), named: "lonely")
        let script = folder + "/s.scenario"
        try "launch\nterminate\n".write(toFile: script, atomically: true, encoding: .utf8)
        let arguments = ["run", "--no-socket", "--no-pressure", "--no-clock", "--isolate", "--plugin", plugin, "--script", script]
        let owner = Self.ownerMark.split(separator: "=", maxSplits: 1).map(String.init)

        let refused = try CBuild.run(lonely, arguments, environment: [owner[0]: owner[1], "LC_PLUGIN_RUNNER": ""])
        XCTAssertNotEqual(refused.status, 0, refused.output)
        XCTAssertTrue(refused.output.contains("lifecycle-host: plugin refused: \(plugin): isolated: no plugin runner (no executable at "
                                              + "\(folder)/lifecycle-plugin-runner): set LC_PLUGIN_RUNNER to the lifecycle-plugin-runner executable\n"),
                      refused.output)

        // An environment of an earlier version, naming the host as its runner: the host's words say so.
        let old = try CBuild.run(lonely, arguments, environment: [owner[0]: owner[1], "LC_PLUGIN_RUNNER": lonely])
        XCTAssertNotEqual(old.status, 0, old.output)
        XCTAssertTrue(old.output.contains("lifecycle-host: 'plugin-runner-server' is not a lifecycle-host command: isolated plugins run in "
                                          + "lifecycle-plugin-runner (set LC_PLUGIN_RUNNER to it, not to lifecycle-host)\n"), old.output)

        let named = try CBuild.run(lonely, arguments, environment: [owner[0]: owner[1], "LC_PLUGIN_RUNNER": CBuild.products + "/lifecycle-plugin-runner"])
        XCTAssertEqual(named.status, 0, named.output)
        XCTAssertTrue(named.output.contains("com.example.lonely"), named.output)

        for byHand in [[], ["plugin-runner-server"], ["plugin-runner-server", "--fd", "1"], ["plugin-runner", "--fd", "3", "--progress-fd", "3"]] {
            let result = try CBuild.run(CBuild.products + "/lifecycle-plugin-runner", byHand)
            XCTAssertEqual(result.status, 64, "\(byHand): \(result.output)")
            XCTAssertTrue(result.output.hasPrefix("--stderr--\nlifecycle-plugin-runner: started by a host only, to run isolated plugins"), result.output)
        }
    }
}
