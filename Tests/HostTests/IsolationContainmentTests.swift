import Foundation
import TestSupport
import XCTest

/// What an isolated plugin's process starts ends with it (issue 18, hole 5): a child that keeps the
/// socket does not hide a crash, nothing spins on after the host, the host's outputs end when it
/// does, and `validate` is not held up by a daemon. Strays are real forks of the plugin's process
/// (`StrayProcesses`), found by the pid each recorded; every run is bounded (`BoundedRun`).
final class IsolationContainmentTests: XCTestCase {
    let echo = ["--plugin", IsolationTests.example("Echo")]
    private var folder = ""

    override func setUpWithError() throws {
        folder = try CBuild.temporaryFolder("strays")
    }

    override func tearDown() {
        StrayProcesses.killAll(in: folder)
        try? FileManager.default.removeItem(atPath: folder)
        super.tearDown()
    }

    func testACrashWhileAChildKeepsTheSocketIsReportedAsTheCrashAtOnceAndTheChildIsKilled() throws {
        let plugin = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.forkcrash", name: "didEnterBackground", body: "start_stray(0); raise(SIGSEGV);",
            extra: StrayProcesses.source(folder: folder)), named: "forkcrash")
        let run = try HostRun.start(["--plugin", plugin, "--isolate", "com.example.forkcrash"] + echo, scenario: "home-and-return", timeout: 30)
        XCTAssertEqual(run.status, 7, run.errorText)
        XCTAssertEqual(run.failures, [
            "plugin-failed SIGSEGV background [com.example.forkcrash] (killed by SIGSEGV; while handling didEnterBackground; not restarted (policy never))",
        ])
        XCTAssertLessThan(run.exitedAfter, 4, "the crash is seen when the process dies, not when a 5 s budget ends")
        XCTAssertEqual(StrayProcesses.recorded(in: folder).count, 1)
        XCTAssertEqual(StrayProcesses.running(in: folder), [], "the child was killed with the plugin's process")
        XCTAssertNotNil(run.bounded.outputsEndedAfterExit, "nothing keeps the host's standard output and error open")
        XCTAssertEqual(run.printed("echo"), try HostRun.start(echo, scenario: "home-and-return", timeout: 30).printed("echo"))
    }

    func testWhatAnIsolatedPluginStartedEndsWithTheRunAndTheHostsOutputsEndWithIt() throws {
        let plugin = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.forker", name: "didBecomeActive", body: "", extra: StrayProcesses.source(folder: folder),
            extraInit: "start_stray(0); start_stray(1);"), named: "forker")
        let run = try HostRun.start(["--plugin", plugin, "--isolate", "com.example.forker"] + echo, scenario: "launch-foreground", timeout: 30)
        XCTAssertEqual(run.status, 0, run.errorText)
        XCTAssertEqual(run.failures, [])
        XCTAssertEqual(StrayProcesses.recorded(in: folder).count, 2, "one child in its process group, one daemon in a session of its own")
        XCTAssertEqual(StrayProcesses.running(in: folder), [], "both were killed when the plugin was unloaded")
        let ended = try XCTUnwrap(run.bounded.outputsEndedAfterExit, "the host's standard output and error end when it exits")
        XCTAssertLessThan(ended, 1)
    }

    func testWhatAnIsolatedPluginStartedEndsWhenTheWatchdogEndsTheHost() throws {
        let forker = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.forker", name: "didBecomeActive", body: "", extra: StrayProcesses.source(folder: folder),
            extraInit: "start_stray(0); start_stray(1);"), named: "forker")
        let spinner = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.spin", name: "didBecomeActive", body: "for (volatile unsigned long i = 0;; i++) {}"), named: "spin")
        let run = try HostRun.start(["--plugin", forker, "--plugin", spinner, "--isolate", "com.example.forker", "--budget", "hang=0.5"],
                                    scenario: "launch-foreground", timeout: 30)
        XCTAssertEqual(run.status, 4, "the watchdog ended the host (policy terminate): \(run.errorText)")
        XCTAssertEqual(run.bounded.records.last?["kind"] as? String, "watchdog")
        XCTAssertEqual(run.bounded.records.last?["plugin"] as? String, "com.example.spin")
        XCTAssertEqual(StrayProcesses.recorded(in: folder).count, 2)
        XCTAssertEqual(StrayProcesses.running(in: folder), [], "no unload ran, and still both were killed as the host ended")
        XCTAssertNotNil(run.bounded.outputsEndedAfterExit, "nothing keeps the host's standard output and error open")
    }

    func testAPluginStartingADaemonInInitDoesNotHoldUpValidate() throws {
        let plugin = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.daemon", name: "didBecomeActive", body: "", extra: StrayProcesses.source(folder: folder),
            extraInit: "start_stray(1);"), named: "daemon")
        let result = try BoundedRun.run(IsolationTests.host, ["validate", "--json", plugin], timeout: 120)
        XCTAssertLessThan(result.exitedAfter, 60, "each sequence ends when its process does: \(result.errorText)")
        XCTAssertNotNil(result.outputsEndedAfterExit)
        XCTAssertEqual(StrayProcesses.running(in: folder), [], "every daemon it started was killed")
        // The scan, the describing step and the 17 sequences that apply (not `scenes`, not
        // `notifications`: it observes only what the sequences post) each ran its init once.
        XCTAssertEqual(StrayProcesses.recorded(in: folder).count, 19)
        let report = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(result.output.utf8)) as? [String: Any], result.output)
        let checks = (report["checks"] as? [[String: Any]] ?? []).map { ($0["id"] as? String ?? "", $0) }
        let unload = try XCTUnwrap(checks.first { $0.0 == "unload" }?.1)
        XCTAssertEqual(unload["result"] as? String, "fail")
        let findings = unload["findings"] as? [[String: Any]] ?? []
        XCTAssertEqual(findings.map { $0["reason"] as? String ?? "" }, ["a process it started was still running when its step ended: killed by the validator"])
        XCTAssertEqual(findings.first?["in"] as? [String], ["describe"] + ValidateTests.sequences.filter { $0 != "notifications" && $0 != "scenes" },
                       "every step its init ran in")
        XCTAssertEqual(result.status, 1)
    }
}
