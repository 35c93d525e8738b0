import Foundation
import TestSupport
import XCTest

/// The hostile corpus of issue 10, "What was measured", in one table, built at test time. Each case
/// asserts (a) that `validate` fails it on the right check with the right reason, and (b), where it
/// applies, that `run --isolate` with Echo beside it survives, reports it in the right words, and
/// Echo receives every notification it receives alone. The fixtures are the shared ones
/// (`IsolationFixtures`, `HostileFiles`, `CBuild.plugin`); the cases the other suites prove in the
/// host's own process (HostEndsTests, LoaderHardeningTests) are proved here against `validate` and
/// isolation.
final class HostileCorpusTests: XCTestCase {
    typealias Run = IsolationTests.Run

    /// What the isolated run beside Echo must show.
    enum Isolated: Sendable {
        /// The plugin was refused at load (status 3), in `validate`'s words after `prefix` ("PATH: PREFIXREASON").
        case refused(prefix: String)
        /// Its process failed while running (status 7): the `plugin-failed` record's name and detail.
        case failed(name: String, detail: String)
        /// A trace line of this kind and name names the plugin (status 0): the host reported it.
        case traced(kind: String, name: String)
        /// Nothing to report (status 0): the host's policy absorbs it (back-pressure, ownership checks).
        case absorbed
    }

    struct Case: Sendable {
        let name: String
        /// Builds the plugin in `folder`: its path, and the reason `validate` must give.
        let build: @Sendable (String) throws -> (path: String, reason: String)
        let check: String
        var validateOptions: [String] = []
        /// Nil: the isolated run does not apply (the host does not police it; `validate` does).
        var isolated: Isolated?
        var runOptions: [String] = []
    }

    static let echo = CBuild.products + "/libEcho.so"
    static let script = """
        launch
        memory-warning
        home
        wait 100ms
        fetch
        wait 500ms
        foreground
        terminate
        """

    /// An observer fixture and the reason `validate` gives for it.
    static func observer(_ id: String, _ name: String, _ body: String, extra: String = "", extraInit: String = "",
                         reason: String) -> @Sendable (String) throws -> (path: String, reason: String)
    {
        { _ in (try IsolationFixtures.build(IsolationFixtures.observer(id: id, name: name, body: body, extra: extra, extraInit: extraInit), named: id), reason) }
    }

    static let cases: [Case] = [
        Case(name: "SIGSEGV in an observer",
             build: observer("com.example.segv", "didEnterBackground", "*(volatile int *)0 = 42;",
                             reason: "killed by SIGSEGV while handling didEnterBackground"),
             check: "sequence:launch",
             isolated: .failed(name: "SIGSEGV", detail: "killed by SIGSEGV; while handling didEnterBackground; not restarted (policy never)")),
        Case(name: "abort in an observer",
             build: observer("com.example.abort", "didBecomeActive", "abort();", reason: "killed by SIGABRT while handling didBecomeActive"),
             check: "sequence:launch",
             isolated: .failed(name: "SIGABRT", detail: "killed by SIGABRT; while handling didBecomeActive; not restarted (policy never)")),
        Case(name: "a crash in a constructor at dlopen",
             build: observer("com.example.ctor", "didBecomeActive", "",
                             extra: "__attribute__((constructor)) static void boom(void) { *(volatile int *)0 = 1; }",
                             reason: "the plugin's process was killed by SIGSEGV while opening the plugin"),
             check: "load", isolated: .refused(prefix: "isolated: ")),
        Case(name: "re-entrant posting",
             build: observer("com.example.recurse", "didBecomeActive", #"host->post(me, "com.example.again", NULL, NULL);"#, extra: """
                 static void again(const lc_notification_t *n, void *c) { (void)n, (void)c; host->post(me, "com.example.again", NULL, NULL); }
                 """, extraInit: #"host->observe(plugin, "com.example.again", NULL, again, NULL, NULL);"#, reason: "post refused with LC_ERR_NESTING_LIMIT: post: 'com.example.again' was not posted: 64 dispatches are already nested "
                     + "(the nesting limit; an observer re-posting from its own callback?); nothing was delivered"),
             check: "host-api", isolated: .absorbed),
        Case(name: "NULL written into the host table",
             build: { _ in
                 (try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.scribble", body: """
                     ((lc_host_api_t *)host)->post = NULL; return LC_OK;
                     """), named: "scribble"), "the plugin's process was killed by SIGSEGV while running init")
             },
             check: "init", isolated: .refused(prefix: "isolated: ")),
        Case(name: "a garbage descriptor pointer",
             build: { folder in
                 (try CBuild.sharedObject(CBuild.plugin(id: "com.example.garbage", entry: false) + """

                     #include <stdint.h>
                     LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return (const lc_plugin_descriptor_t *)(uintptr_t)0xdeadbeef; }
                     """, named: "garbage", in: folder),
                  "lc_plugin_entry() returned a pointer outside the plugin's own image; the descriptor must be static data of the plugin")
             },
             check: "load",
             isolated: .refused(prefix: "")),
        Case(name: "a truncated ELF", build: { folder in try HostileFiles.truncated(echo, in: folder) }, check: "load",
             isolated: .refused(prefix: "")),
        Case(name: "exit(0) in init",
             build: { _ in
                 (try IsolationFixtures.build(IsolationFixtures.initialiser(id: "com.example.exit0", body: "exit(0);"), named: "exit0"),
                  "the plugin's process exited with status 0 while running init")
             },
             check: "init", isolated: .refused(prefix: "isolated: ")),
        Case(name: "a FIFO path",
             build: { folder in
                 let fifo = folder + "/fifo.so"
                 guard mkfifo(fifo, 0o644) == 0 else { throw CocoaError(.fileWriteUnknown) }
                 return (fifo, "it is a FIFO (named pipe), not a regular file")
             },
             check: "load", isolated: .refused(prefix: "")),
        Case(name: "an observer looping for ever",
             build: observer("com.example.loop", "didBecomeActive", "for (;;) {}", reason: "didBecomeActive overran the 0.300 s hang budget"),
             check: "budgets", validateOptions: ["--budget", "hang=0.3"],
             isolated: .failed(name: "overran isolated-call budget", detail: "did not return within its 0.500 s isolated-call budget: killed (SIGKILL); "
                 + "while handling didBecomeActive; not restarted (policy never)"),
             runOptions: ["--isolate-budget", "0.5"]),
        Case(name: "a completion handler never called",
             build: { _ in
                 (try IsolationFixtures.build(IsolationFixtures.completer(id: "com.example.never", times: 0), named: "never"),
                  "the completion handler of application:performFetchWithCompletionHandler: was not called within the 0.300 s completionHandler budget")
             },
             check: "completions", validateOptions: ["--budget", "completion=0.3"],
             isolated: .traced(kind: "watchdog", name: "completion handler of application:performFetchWithCompletionHandler:"),
             runOptions: ["--watchdog", "report", "--budget", "completion=0.3"]),
        Case(name: "a completion handler called twice",
             build: { _ in
                 (try IsolationFixtures.build(IsolationFixtures.completer(id: "com.example.twice", times: 2), named: "twice"),
                  "the completion handler of application:performFetchWithCompletionHandler: was called again (newData); the second call is ignored")
             },
             check: "completions", isolated: .traced(kind: "error", name: "completion handler called again")),
        Case(name: "noise on standard output",
             build: observer("com.example.noise", "didBecomeActive", #"printf("noise"); fflush(stdout);"#,
                             reason: "its output 'noise' was glued to the start of a trace line: it printed without a line feed"),
             check: "output"),
        Case(name: "a non-x86 ELF", build: { folder in try HostileFiles.aarch64(echo, in: folder) }, check: "load",
             isolated: .refused(prefix: "")),
        Case(name: "a world-writable file",
             build: { folder in
                 let file = try CBuild.sharedObject(CBuild.plugin(id: "com.example.writable"), named: "writable", in: folder)
                 guard chmod(file, 0o666) == 0 else { throw CocoaError(.fileWriteNoPermission) }
                 return (file, "unsafe permissions: the file is group- and world-writable (mode 0666)")
             },
             check: "load", isolated: .refused(prefix: "")),
        Case(name: "a symbolic link",
             build: { folder in
                 let target = try CBuild.sharedObject(CBuild.plugin(id: "com.example.target"), named: "target", in: folder)
                 try FileManager.default.createSymbolicLink(atPath: folder + "/link.so", withDestinationPath: target)
                 return (folder + "/link.so", "it is a symbolic link to '\(target)'; plugins are loaded from regular files only, never through a link")
             },
             check: "load", isolated: .refused(prefix: "")),
        Case(name: "flooding posts from a thread",
             build: observer("com.example.flood", "didBecomeActive", """
                 static int once;
                 if (once++) return;
                 pthread_t thread;
                 if (pthread_create(&thread, NULL, flood, NULL) == 0) pthread_join(thread, NULL);  /* the main loop waits: the queue fills */
                 """, extra: """
                 #include <pthread.h>
                 static void *flood(void *arg) {
                     (void)arg;
                     for (int i = 0; i < 70000; i++) host->post(me, "com.example.flood", NULL, NULL);
                     return NULL;
                 }
                 """, reason: "post refused with LC_ERR_QUEUE_FULL: post: refused: this thread already has 65536 posts waiting for the main loop "
                     + "(or all threads 1048576); nothing was queued: retry after the loop has run, or post less"),
             check: "host-api", isolated: .absorbed),
        Case(name: "removing another plugin's observer",
             build: observer("com.example.thief", "didBecomeActive", """
                 for (lc_observer_token token = 2; token <= 64; token++) host->remove_observer(me, token);
                 """, reason: "remove_observer refused with LC_ERR_NOT_FOUND: remove_observer: plugin 'com.example.thief' has no observer with token 2"),
             check: "host-api", isolated: .absorbed),
        Case(name: "ending another plugin's background task",
             build: observer("com.example.taskthief", "didEnterBackground", """
                 for (lc_task_id task = 1; task <= 64; task++) host->end_background_task(me, task);
                 """, reason: "end_background_task refused with LC_ERR_NOT_FOUND: end_background_task: plugin 'com.example.taskthief' has no open background task 1"),
             check: "host-api", isolated: .absorbed),
    ]

    func testEveryHostileCaseIsRefusedOrFailedWithItsReasonAndEchoBesideItIsComplete() throws {
        let options = ["--background-mode", "fetch"]
        let alone = try IsolationTests.run(["--plugin", Self.echo] + options, script: Self.script)
        XCTAssertEqual(alone.status, 0, alone.output)
        let echoAlone = try XCTUnwrap(alone.printed["echo"])
        XCTAssertEqual(echoAlone.count, 11, alone.output)
        var rightReason = 0, echoComplete = 0
        for hostile in Self.cases {
            let folder = try CBuild.temporaryFolder("corpus")
            defer { try? FileManager.default.removeItem(atPath: folder) }
            let (path, reason) = try hostile.build(folder)

            // (a) validate fails it on the right check, for the right reason.
            let report = try ValidateTests.validate(path, hostile.validateOptions)
            let check = report.checks[hostile.check]
            XCTAssertEqual(report.status, 1, "\(hostile.name): \(report.output)")
            XCTAssertEqual(check?.result, "fail", "\(hostile.name): \(report.output)")
            XCTAssertTrue(check?.reasons.contains(reason) == true, "\(hostile.name): \(check?.reasons ?? []) lacks '\(reason)'")
            if check?.result == "fail", check?.reasons.contains(reason) == true, report.status == 1 { rightReason += 1 }

            // (b) isolated beside Echo: the host survives and says what happened; Echo gets everything.
            guard let expected = hostile.isolated else { continue }
            let run = try IsolationTests.run(["--plugin", path, "--plugin", Self.echo, "--isolate"] + options + hostile.runOptions, script: Self.script)
            XCTAssertEqual(run.records.last { $0.kind == "state" }?.name, "not-running", "\(hostile.name): the run ended normally\n\(run.output)")
            let id = report.plugin?["id"] as? String
            switch expected {
            case .refused(let prefix):
                XCTAssertEqual(run.status, 3, "\(hostile.name): \(run.output)")
                let refusal = run.records.first { $0.kind == "error" && $0.name == "plugin refused" }?.detail
                XCTAssertEqual(refusal, "\(path): \(prefix)\(reason)", hostile.name)
            case .failed(let name, let detail):
                XCTAssertEqual(run.status, 7, "\(hostile.name): \(run.output)")
                XCTAssertEqual(run.failures().map(\.name), [name], hostile.name)
                XCTAssertEqual(run.failures().first?.detail, detail, hostile.name)
                XCTAssertEqual(run.failures().first?.plugin, id, hostile.name)
            case .traced(let kind, let name):
                XCTAssertEqual(run.status, 0, "\(hostile.name): \(run.output)")
                XCTAssertTrue(run.records.contains { $0.kind == kind && $0.name == name && $0.plugin == id }, "\(hostile.name): \(run.output)")
            case .absorbed:
                XCTAssertEqual(run.status, 0, "\(hostile.name): \(run.output)")
                XCTAssertEqual(run.failures(), [], hostile.name)
            }
            XCTAssertEqual(run.printed["echo"], echoAlone, "\(hostile.name): Echo beside it")
            if run.printed["echo"] == echoAlone { echoComplete += 1 }
        }
        let applicable = Self.cases.filter { $0.isolated != nil }.count
        print("hostile corpus: \(Self.cases.count) cases, \(rightReason) refused/failed with the right reason, Echo complete in \(echoComplete) of \(applicable)")
        XCTAssertEqual(rightReason, Self.cases.count)
        XCTAssertEqual(echoComplete, applicable)
    }
}
