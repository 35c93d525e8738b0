import Foundation
import TestSupport
import XCTest

/// Isolated plugins that crash, hang, break the protocol or complete twice: each is reported in the
/// trace as a typed `plugin-failed` event (plugin, cause, callback), and the host and Echo beside it go on.
final class IsolationFailureTests: XCTestCase {
    typealias Run = IsolationTests.Run
    let echo = ["--plugin", IsolationTests.example("Echo")]

    func run(_ arguments: [String], script: String? = nil, scenario: String? = nil) throws -> Run {
        try IsolationTests.run(arguments, script: script, scenario: scenario)
    }

    /// What Echo prints in a run of `scenario` without anything else loaded.
    func echoAlone(scenario: String? = nil, script: String? = nil) throws -> [String] {
        let alone = try run(echo, script: script, scenario: scenario)
        XCTAssertEqual(alone.status, 0, alone.output)
        return alone.printed["echo"] ?? []
    }

    func testASegfaultInAnObserverIsReportedAndEchoBesideItGetsEveryNotification() throws {
        let crasher = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.segv", name: "didEnterBackground", body: "*(volatile int *)0 = 42;"), named: "segv")
        let result = try run(["--plugin", crasher, "--isolate", "com.example.segv"] + echo, scenario: "home-and-return")
        XCTAssertEqual(result.status, 7, result.output)  // the run ended; an isolated plugin failed on the way
        let failures = result.failures()
        XCTAssertEqual(failures.count, 1, result.output)
        XCTAssertEqual(failures.first?.name, "SIGSEGV")
        XCTAssertEqual(failures.first?.plugin, "com.example.segv")
        XCTAssertEqual(failures.first?.state, "background")
        XCTAssertEqual(failures.first?.detail, "killed by SIGSEGV; while handling didEnterBackground; not restarted (policy never)")
        XCTAssertEqual(result.printed["echo"], try echoAlone(scenario: "home-and-return"))
        // After the failure the plugin is gone: the second didEnterBackground (terminate) reaches nobody there.
        let failedAt = try XCTUnwrap(result.records.firstIndex { $0.kind == "plugin-failed" })
        XCTAssertEqual(result.records[failedAt - 1].name, "didEnterBackground")
        XCTAssertEqual(result.records.last?.name, "not-running")
    }

    func testAbortInInitIsARefusalNamingTheSignalAndTheOthersRun() throws {
        let aborter = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.abort", body: "abort(); return LC_OK;"),
                                                  named: "abort")
        let result = try run(["--plugin", aborter, "--isolate"] + echo, scenario: "launch-foreground")
        XCTAssertEqual(result.status, 3, result.output)  // a plugin refused
        let refusal = try XCTUnwrap(result.records.first { $0.kind == "error" && $0.name == "plugin refused" })
        XCTAssertEqual(refusal.detail, "\(aborter): isolated: the plugin's process was killed by SIGABRT while running init")
        XCTAssertTrue(result.output.contains("lifecycle-host: plugin refused: \(aborter): isolated: the plugin's process was killed by SIGABRT while running init"))
        XCTAssertEqual(result.printed["echo"], try echoAlone(scenario: "launch-foreground"))
        XCTAssertTrue(result.failures().isEmpty, "a load's failure is its refusal")
    }

    func testAHangingDelegateCallIsKilledWhenItsLaunchBudgetEndsAndTheLaunchGoesOn() throws {
        let hanger = try IsolationFixtures.build(IsolationFixtures.exporter(id: "com.example.hang", functions: """
            bool application_willFinishLaunchingWithOptions(lc_app *a, const lc_dict *o) { (void)a, (void)o; for (;;) {} return true; }
            """), named: "hang")
        let started = Date()
        let result = try run(["--plugin", hanger, "--isolate", "--budget", "launch=1"] + echo, scenario: "launch-foreground")
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertEqual(result.status, 7, result.output)
        let failure = try XCTUnwrap(result.failures().first, result.output)
        XCTAssertEqual(failure.name, "overran launch budget")
        XCTAssertEqual(failure.plugin, "com.example.hang")
        XCTAssertEqual(failure.detail, "did not return within its 1.000 s launch budget: killed (SIGKILL); "
                       + "while handling application:willFinishLaunchingWithOptions:; not restarted (policy never)")
        XCTAssertLessThan(elapsed, 4, "killed at the end of its budget, not later")
        XCTAssertGreaterThan(elapsed, 0.8)
        // The launch went on (a failed plugin answers what an unimplemented method answers) and the
        // engine's own watchdog did not fire: the plugin is killed before the phase overruns.
        XCTAssertFalse(result.records.contains { $0.kind == "watchdog" }, result.output)
        XCTAssertEqual(result.failures().count, 1, "only the plugin that hung: Echo, isolated beside it, keeps its own budget")
        XCTAssertTrue(result.trace.contains("state active active [] ()"), result.output)
        XCTAssertEqual(result.printed["echo"], try echoAlone(scenario: "launch-foreground"))
    }

    func testAnObserverLoopingOutsideALifecycleBudgetIsKilledAfterTheIsolatedCallBudget() throws {
        let looper = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.loop", name: "didBecomeActive", body: "for (;;) {}"), named: "loop")
        let started = Date()
        let result = try run(["--plugin", looper, "--isolate", "--isolate-budget", "0.5"] + echo, scenario: "launch-foreground")
        XCTAssertLessThan(Date().timeIntervalSince(started), 4)
        let failure = try XCTUnwrap(result.failures().first, result.output)
        XCTAssertEqual(failure.name, "overran isolated-call budget")
        XCTAssertEqual(failure.detail, "did not return within its 0.500 s isolated-call budget: killed (SIGKILL); "
                       + "while handling didBecomeActive; not restarted (policy never)")
        XCTAssertEqual(result.status, 7)
        XCTAssertEqual(result.printed["echo"], try echoAlone(scenario: "launch-foreground"))
    }

    func testRestartOnFailureRestartsWithBackoffAndGivesUpAtTheLimit() throws {
        let crasher = try IsolationFixtures.build(IsolationFixtures.observer(
            id: "com.example.flaky", name: "didReceiveMemoryWarning", body: "raise(SIGBUS);",
            extraInit: #"printf("flaky: init\n"); fflush(stdout);"#), named: "flaky")
        let script = """
            launch
            memory-warning
            wait 600ms
            memory-warning
            wait 600ms
            memory-warning
            wait 600ms
            memory-warning
            terminate
            """
        let result = try run(["--plugin", crasher, "--isolate", "--restart", "on-failure:2"] + echo, script: script)
        XCTAssertEqual(result.status, 7, result.output)
        let events = result.records.filter { $0.kind == "plugin-failed" || $0.kind == "plugin-restarted" }.map { "\($0.kind) \($0.name): \($0.detail)" }
        XCTAssertEqual(events, [
            "plugin-failed SIGBUS: killed by SIGBUS; while handling didReceiveMemoryWarning; restart 1 of 2 in 0.100 s",
            "plugin-restarted restarted: restart 1 of 2",
            "plugin-failed SIGBUS: killed by SIGBUS; while handling didReceiveMemoryWarning; restart 2 of 2 in 0.200 s",
            "plugin-restarted restarted: restart 2 of 2",
            "plugin-failed SIGBUS: killed by SIGBUS; while handling didReceiveMemoryWarning; gave up after 2 restarts",
        ], result.output)
        XCTAssertEqual(result.printed["flaky"], ["flaky: init", "flaky: init", "flaky: init"])
        XCTAssertEqual(result.printed["echo"]?.filter { $0.contains("didReceiveMemoryWarning") }.count, 4)
    }

    func testACompletionHandlerCrossingTheBoundaryCompletesOnceAndTheRepeatIsReportedAsInProcess() throws {
        let completer = try IsolationFixtures.build(IsolationFixtures.completer(id: "com.example.twice", times: 2), named: "twice")
        let arguments = ["--plugin", completer, "--background-mode", "fetch"]
        let inProcess = try run(arguments, scenario: "fetch")
        let isolated = try run(arguments + ["--isolate"], scenario: "fetch")
        XCTAssertEqual(isolated.status, 0, isolated.output)
        // The scenario fetches twice: each request completed once, its repeat reported and ignored.
        let once = [
            "completion application:performFetchWithCompletionHandler: background [com.example.twice] (newData)",
            "error completion handler called again background [com.example.twice] (application:performFetchWithCompletionHandler:: the second call (newData) is ignored)",
        ]
        XCTAssertEqual(isolated.trace.filter { $0.contains("completion") }, once + once)
        XCTAssertEqual(isolated.trace, inProcess.trace)
        // The second call was refused to the plugin as in-process: LC_OK, then LC_ERR_NOT_FOUND (-8).
        XCTAssertEqual(isolated.printed["completer"], Array(repeating: ["completer: call 1 -> 0", "completer: call 2 -> -8"], count: 2).flatMap { $0 })
        XCTAssertEqual(isolated.printed["completer"], inProcess.printed["completer"])
    }

    func testAChildSendingGarbageIsCutOffWithAClearErrorAndTheHostGoesOn() throws {
        let liar = try IsolationFixtures.build(IsolationFixtures.observer(id: "com.example.liar", name: "didBecomeActive", body: """
            static const unsigned char junk[16] = {0xff, 0xff, 0xff, 0xff, 0x01, 0x00};
            if (write(3, junk, sizeof junk) != sizeof junk) abort();
            pause();  /* still in the observer when the host reads the garbage */
            """), named: "liar")
        let result = try run(["--plugin", liar, "--isolate", "com.example.liar"] + echo, scenario: "home-and-return")
        XCTAssertEqual(result.status, 7, result.output)
        let failure = try XCTUnwrap(result.failures().first, result.output)
        XCTAssertEqual(failure.name, "protocol violation")
        XCTAssertEqual(failure.detail, "cut off (SIGKILL): a frame announces 4294967295 bytes (frames are 16 to 68157440 bytes); "
                       + "while handling didBecomeActive; not restarted (policy never)")
        XCTAssertEqual(result.failures().count, 1)
        XCTAssertEqual(result.printed["echo"], try echoAlone(scenario: "home-and-return"))
    }

    func testAPluginCallingExitIsReportedWithItsStatusAtInitAndInAnObserver() throws {
        let exitInInit = try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.exit0", body: "exit(0);"), named: "exit0")
        let exitLater = try IsolationFixtures.build(
            IsolationFixtures.observer(id: "com.example.exit3", name: "didEnterBackground", body: "exit(3);"), named: "exit3")
        let result = try run(["--plugin", exitInInit, "--plugin", exitLater, "--isolate"] + echo, scenario: "home-and-return")
        XCTAssertEqual(result.status, 3, result.output)  // refused (init), and a failure later: the refusal's status wins
        XCTAssertTrue(result.output.contains("lifecycle-host: plugin refused: \(exitInInit): isolated: the plugin's process exited with status 0 while running init"),
                      result.output)
        let failure = try XCTUnwrap(result.failures().first, result.output)
        XCTAssertEqual(failure.name, "exit 3")
        XCTAssertEqual(failure.detail, "exited with status 3; while handling didEnterBackground; not restarted (policy never)")
        XCTAssertEqual(result.printed["echo"], try echoAlone(scenario: "home-and-return"))
    }
}
