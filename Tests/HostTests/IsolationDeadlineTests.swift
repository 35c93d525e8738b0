import Foundation
import TestSupport
import XCTest

/// An isolated plugin cannot talk its way out of a deadline: the progress page it shares with the
/// host is its own word, and a frame the host waits for keeps its deadline whatever the page says
/// (issue 18, hole 1). Every run is bounded (`BoundedRun`): the host that froze for ever fails the
/// test instead of hanging it.
final class IsolationDeadlineTests: XCTestCase {
    let echo = ["--plugin", IsolationTests.example("Echo")]

    /// C: `start_lying()` starts a thread that copies the progress page's `handling` word into
    /// `completed` every millisecond, so that the page says every frame sent is finished.
    static let liar = """
        #include <pthread.h>
        #include <stdint.h>
        #include <stdio.h>
        #include <string.h>
        #include <unistd.h>
        \(IsolationFixtures.progressPageSource)
        static volatile unsigned long *page;
        static void *lie(void *unused) {
            (void)unused;
            for (;;) { page[1] = page[0]; usleep(1000); }
            return NULL;
        }
        static void start_lying(void) {
            page = progress_page();
            pthread_t thread;
            if (page) pthread_create(&thread, NULL, lie, NULL);
        }
        """

    func testALaunchDelegateThatNeverReturnsIsKilledAtItsBudgetWhateverItsProgressPageSays() throws {
        let plugin = try IsolationFixtures.build(IsolationFixtures.exporter(id: "com.example.liar", functions: Self.liar + """
            bool application_willFinishLaunchingWithOptions(lc_app *a, const lc_dict *o) {
                (void)a, (void)o;
                start_lying();
                for (;;) pause();
                return true;
            }
            """), named: "pageliar")
        let run = try HostRun.start(["--plugin", plugin, "--isolate", "com.example.liar", "--budget", "launch=1"] + echo,
                                    scenario: "launch-foreground", timeout: 20)
        XCTAssertEqual(run.status, 7, "the run ends, an isolated plugin failed on the way: \(run.errorText)")
        XCTAssertLessThan(run.exitedAfter, 4, "killed at the end of its 1 s launch budget, not frozen")
        XCTAssertEqual(run.failures, [
            "plugin-failed overran launch budget inactive [com.example.liar] (did not return within its 1.000 s launch budget: killed (SIGKILL); "
                + "while handling application:willFinishLaunchingWithOptions:; not restarted (policy never))",
        ])
        XCTAssertFalse(run.trace.contains { $0.hasPrefix("watchdog ") }, "the application's own budget was not spent: \(run.trace)")
        XCTAssertTrue(run.trace.contains("state active active [] ()"), "the launch went on: \(run.trace)")
        XCTAssertEqual(run.printed("echo"), try HostRun.start(echo, scenario: "launch-foreground", timeout: 20).printed("echo"))
    }

    func testADeinitThatNeverReturnsIsKilledAtTheCallBudgetWhateverItsProgressPageSays() throws {
        let source = Self.liar + "\n" + IsolationFixtures.initialiser(id: "com.example.liar.deinit", body: "return LC_OK;")
            .replacingOccurrences(of: ".init = fixture_init,", with: ".init = fixture_init, .deinit = fixture_deinit,")
            .replacingOccurrences(of: "static const lc_plugin_descriptor_t descriptor", with: """
                static void fixture_deinit(void *state) { (void)state; start_lying(); for (;;) pause(); }
                static const lc_plugin_descriptor_t descriptor
                """)
        let plugin = try IsolationFixtures.build(source, named: "pageliardeinit")
        let run = try HostRun.start(["--plugin", plugin, "--isolate", "--isolate-budget", "0.5"] + echo, scenario: "launch-foreground",
                                    timeout: 20)
        XCTAssertLessThan(run.exitedAfter, 4, "the unload is held to the isolated-call budget, not frozen: \(run.errorText)")
        XCTAssertEqual(run.failures, [
            "plugin-failed overran isolated-call budget not-running [com.example.liar.deinit] (did not return within its 0.500 s isolated-call budget: "
                + "killed (SIGKILL); while handling deinit; not restarted (policy never))",
        ])
        XCTAssertEqual(run.printed("echo"), try HostRun.start(echo, scenario: "launch-foreground", timeout: 20).printed("echo"))
    }
}

/// `lifecycle-host run --trace json` with no OS sources and no socket, bounded (`BoundedRun`): the
/// trace's records as `IsolationTests.Run` prints them, the plugins' lines (standard error) by prefix.
struct HostRun {
    let bounded: BoundedRun
    var status: Int32? { bounded.status }
    var exitedAfter: Double { bounded.exitedAfter }
    var errorText: String { bounded.errorText }

    /// The engine's and the failures' lines, as `IsolationTests.Run.trace` has them.
    var trace: [String] {
        bounded.records.filter { ($0["kind"] as? String) != "plugin" && ($0["kind"] as? String) != "input" }.map { object in
            let field = { (name: String) in object[name] as? String ?? "" }
            return "\(field("kind")) \(field("name")) \(field("state")) [\(field("plugin"))] "
                + "(\(field("detail").replacingOccurrences(of: IsolationTests.scenarios + "/", with: "")))"
        }
    }

    var failures: [String] { trace.filter { $0.hasPrefix("plugin-failed ") } }

    /// The lines a plugin printed starting with `prefix` and a colon.
    func printed(_ prefix: String) -> [String] {
        bounded.errorText.split(separator: "\n").map(String.init).filter { $0.hasPrefix(prefix + ":") }
    }

    static func start(_ arguments: [String], scenario: String? = nil, script: String? = nil, timeout: Double,
                      environment: [String: String] = [:]) throws -> HostRun {
        var all = ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock"] + arguments
        if let scenario { all += ["--script", "\(IsolationTests.scenarios)/\(scenario).scenario"] }
        if let script {
            let folder = try CBuild.temporaryFolder("bounded-script")
            try script.write(toFile: folder + "/s.scenario", atomically: true, encoding: .utf8)
            all += ["--script", folder + "/s.scenario"]
        }
        return HostRun(bounded: try BoundedRun.run(IsolationTests.host, all, environment: environment, timeout: timeout))
    }
}
