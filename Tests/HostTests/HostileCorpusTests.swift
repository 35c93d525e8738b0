import Foundation
import TestSupport
import XCTest

/// The hostile corpus of issue 10, "What was measured", and the holes of issue 18, in one table, built
/// at test time. Each case asserts (a) that `validate` fails it on the right check with the right
/// reason (or, for the one it has no verdict on, passes it), and (b), where it applies, that
/// `run --isolate` with Echo beside it ends in bounded time, survives, reports it in the right words,
/// leaves no process of the plugin running and no archive lost, and that Echo receives every
/// notification it receives alone (and what the plugin posted to it). The fixtures are the shared ones
/// (`IsolationFixtures`, `HostileFiles`, `CBuild.plugin`, `QuotaFixtures`' call, `LimitFixtures`,
/// `StrayProcesses`); the cases the other suites prove in the host's own process (HostEndsTests,
/// LoaderHardeningTests) or one by one (IsolationDeadlineTests, PluginQuotaHostTests,
/// IsolationLimitsTests, ArchiveKeptTests, IsolationContainmentTests, IsolationParityTests) are proved
/// here against `validate` and isolation, in one run.
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
        /// The check `validate` fails it on, with the reason. Nil: `validate` has no verdict on it (it
        /// passes: what it does is refused where it is done, out of the checks' sight), and the case
        /// is here for its isolated run.
        let check: String?
        var validateOptions: [String] = []
        /// Nil: the isolated run does not apply (the host does not police it; `validate` does).
        var isolated: Isolated?
        var runOptions: [String] = []
        /// The environment of `validate` and of the isolated run (the fixture's mode).
        var environment: [String: String] = [:]
        /// What the plugin prints in the isolated run: every line of each prefix (before the colon)
        /// used here, in order. It shows that the attack was made.
        var printed: [String] = []
        /// The lines Echo prints besides those it prints alone: what the plugin posted to it, each once.
        var echoAlso: [String] = []
        /// The run gets `--archive FOLDER/archive`, where `build` left a good archive: every file there
        /// is the same, byte for byte, after the run (no archive lost).
        var archive = false
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

    struct Unbuilt: Error, CustomStringConvertible { let description: String }

    /// `run --isolate …` as `IsolationTests.run` runs it, but bounded (`HostRun`): a host that never
    /// ends, or whose outputs something it started keeps open, fails the case instead of hanging the
    /// test. The run, and how it ended.
    static func run(_ arguments: [String], script: String = HostileCorpusTests.script, environment: [String: String] = [:]) throws
        -> (run: Run, bounded: BoundedRun)
    {
        let bounded = try HostRun.start(arguments, script: script, timeout: 30, environment: environment).bounded
        var run = Run(status: bounded.status ?? -1, output: bounded.output + "--stderr--\n" + bounded.errorText)
        for object in bounded.records {
            let field = { (name: String) in object[name] as? String ?? "" }
            run.records.append(Run.Record(kind: field("kind"), name: field("name"), state: field("state"), plugin: field("plugin"),
                                          detail: field("detail"), scene: field("scene")))
        }
        // With the JSON trace on standard output, the plugins' own lines are on standard error.
        for line in bounded.errorText.split(separator: "\n") {
            if let colon = line.firstIndex(of: ":") { run.printed[String(line[..<colon]), default: []].append(String(line)) }
        }
        return (run, bounded)
    }

    /// `validate --json` as `ValidateTests.validate` reads it, but bounded: a validator held up (by a
    /// daemon keeping its output open) fails the case instead of hanging the test.
    static func validate(_ path: String, _ options: [String], environment: [String: String]) throws -> (report: ValidateTests.Report, bounded: BoundedRun) {
        let bounded = try BoundedRun.run(IsolationTests.host, ["validate", "--json"] + options + [path], environment: environment, timeout: 90)
        var report = ValidateTests.Report(status: bounded.status ?? -1, output: bounded.output + "--stderr--\n" + bounded.errorText)
        guard let object = try? JSONSerialization.jsonObject(with: Data(bounded.output.utf8)) as? [String: Any] else { return (report, bounded) }
        report.plugin = object["plugin"] as? [String: Any]
        for check in object["checks"] as? [[String: Any]] ?? [] {
            let id = check["id"] as? String ?? "?"
            let findings = check["findings"] as? [[String: Any]] ?? []
            report.ids.append(id)
            report.checks[id] = ValidateTests.Report.Check(result: check["result"] as? String ?? "?", reasons: findings.map { $0["reason"] as? String ?? "" },
                                                           sequences: findings.map { $0["in"] as? [String] ?? [] })
        }
        return (report, bounded)
    }

    /// The archives in `folder` (none when it does not exist), by file name.
    static func archives(in folder: String) throws -> [String: Data] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
        return try Dictionary(uniqueKeysWithValues: names.map { ($0, try Data(contentsOf: URL(fileURLWithPath: folder + "/" + $0))) })
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

        // Issue 18's holes.
        Case(name: "a launch delegate that never returns while its progress page lies",
             build: { folder in
                 // Isolated, a thread copies the page's `handling` into `completed` (the page says no
                 // frame is outstanding); in the validator's process there is no page: a plain hang.
                 (try CBuild.sharedObject(IsolationFixtures.exporter(id: "com.example.pageliar", functions: IsolationDeadlineTests.liar + """
                     bool application_willFinishLaunchingWithOptions(lc_app *a, const lc_dict *o) {
                         (void)a, (void)o;
                         start_lying();
                         if (page) { printf("liar: the progress page says every frame is finished\\n"); fflush(stdout); }
                         for (;;) pause();
                         return true;
                     }
                     """), named: "pageliar", in: folder),
                  "application:willFinishLaunchingWithOptions: overran the 0.300 s launch budget")
             },
             check: "budgets", validateOptions: ["--budget", "launch=0.3"],
             isolated: .failed(name: "overran launch budget", detail: "did not return within its 0.300 s launch budget: killed (SIGKILL); "
                 + "while handling application:willFinishLaunchingWithOptions:; not restarted (policy never)"),
             runOptions: ["--budget", "launch=0.3"],
             printed: ["liar: the progress page says every frame is finished"]),
        Case(name: "a timer flood past the quota",
             build: { folder in
                 // 10,000 timers (the quota), then the 1,000 refusals that cut an isolated plugin off; the
                 // cut-off names the observer that made them, however late the host hears of the last.
                 (try CBuild.sharedObject(IsolationFixtures.observer(id: "com.example.timerflood", name: "didBecomeActive", body: """
                     static int once;
                     if (once++) return;
                     long accepted = 0;
                     int reported = 0;
                     for (long i = 0; i < 11000; i++) {
                         lc_status s;
                         \(PluginQuotaHostTests.timerCall)
                         if (s == LC_OK) {
                             accepted++;
                         } else if (!reported++) {
                             printf("timerflood: refused after %ld calls with %d\\n", accepted, (int)s);
                             fflush(stdout);
                         }
                     }
                     """, extra: "static void nothing(void *c) { (void)c; }"), named: "timerflood", in: folder),
                  "add_timer refused with LC_ERR_QUOTA: add_timer: plugin 'com.example.timerflood' is at its quota of 10000 timers; refused, nothing changed")
             },
             check: "host-api",
             isolated: .failed(name: "quota exceeded", detail: "cut off (SIGKILL): went on calling past its quota of 10000 timers "
                 + "(1000 calls refused within 10.000 s); while handling didBecomeActive; not restarted (policy never)"),
             printed: ["timerflood: refused after 10000 calls with -18"]),
        Case(name: "a userInfo 100 levels deep posted to Echo",
             build: { folder in
                 // `validate` passes it: the 65th level is refused by `set_dict`, a dictionary call, which
                 // `host-api` does not count (it sees the calls that name a plugin), and what it posts is
                 // within the limits. Isolated, Echo's runner gets the 64 levels and prints them.
                 (try CBuild.sharedObject(LimitFixtures.deepPoster(id: "com.example.deep", trigger: "didReceiveMemoryWarning",
                                                                   name: "userDefaultsDidChange", levels: 100), named: "deep", in: folder), "")
             },
             check: nil, isolated: .absorbed,
             printed: ["poster: level 65 refused: -1", "poster: post -> 0"],
             echoAlso: ["echo: userDefaultsDidChange " + IsolationLimitsTests.chainJSON(64)]),
        Case(name: "a daemon started in init",
             build: { folder in
                 (try CBuild.sharedObject(IsolationFixtures.observer(
                     id: "com.example.daemon", name: "didBecomeActive", body: "", extra: StrayProcesses.source(folder: folder),
                     extraInit: #"start_stray(1); printf("daemon: started a daemon in a session of its own\n"); fflush(stdout);"#),
                  named: "daemon", in: folder),
                  "a process it started was still running when its step ended: killed by the validator")
             },
             check: "unload", isolated: .absorbed,
             printed: ["daemon: started a daemon in a session of its own"]),
        Case(name: "exit(3) in deinit",
             build: { folder in
                 (try CBuild.sharedObject(IsolationFixtures.finaliser(id: "com.example.exitdeinit", body: "exit(3);"), named: "exitdeinit", in: folder),
                  "called exit(3) while running deinit")
             },
             check: "unload",
             isolated: .failed(name: "exit 3", detail: "exited with status 3; while handling deinit; not restarted (policy never)")),
        Case(name: "a crash in a thread 50 ms after init",
             build: { folder in
                 (try CBuild.sharedObject(CBuild.plugin(id: "com.example.latecrash", initBody: """
                     pthread_t thread;
                     if (pthread_create(&thread, NULL, crash_later, NULL) == 0) pthread_detach(thread);
                     return LC_OK;
                     """, extra: """
                     #include <pthread.h>
                     #include <unistd.h>
                     static void *crash_later(void *unused) { (void)unused; usleep(50000); *(volatile int *)0 = 1; return NULL; }
                     """), named: "latecrash", in: folder),
                  "killed by SIGSEGV after its init (in a thread or timer of the plugin)")
             },
             check: "init",
             // It observes nothing: no frame is outstanding when it crashes, none is named.
             isolated: .failed(name: "SIGSEGV", detail: "killed by SIGSEGV; not restarted (policy never)")),
        Case(name: "a crash while saving its state",
             build: { folder in
                 let keeper = try CBuild.sharedObject(LimitFixtures.keeper(id: "com.example.keeper"), named: "keeper", in: folder)
                 // A first run saves its good archive, {"counter": 7}: 52 bytes.
                 let good = try run(["--plugin", keeper, "--archive", folder + "/archive"], script: "launch\nhome\nterminate\n",
                                    environment: ["KEEPER_MODE": "good"])
                 guard good.run.status == 0, try archives(in: folder + "/archive").values.map(\.count) == [52] else {
                     throw Unbuilt(description: "the keeper saved no good archive: \(good.run.output)")
                 }
                 return (keeper, "killed by SIGSEGV while handling application:willEncodeRestorableStateWithCoder:")
             },
             check: "sequence:restoration",
             isolated: .failed(name: "SIGSEGV", detail: "killed by SIGSEGV; while handling application:willEncodeRestorableStateWithCoder:; "
                 + "not restarted (policy never)"),
             environment: ["KEEPER_MODE": "segv"],
             printed: ["keeper: restored counter 7, 1 keys, blob 0 bytes"],
             archive: true),
    ]

    func testEveryHostileCaseIsRefusedOrFailedWithItsReasonAndEchoBesideItIsComplete() throws {
        let options = ["--background-mode", "fetch"]
        let alone = try Self.run(["--plugin", Self.echo] + options).run
        XCTAssertEqual(alone.status, 0, alone.output)
        let echoAlone = try XCTUnwrap(alone.printed["echo"])
        XCTAssertEqual(echoAlone.count, 11, alone.output)
        var rightReason = 0, passed = 0, echoComplete = 0
        for hostile in Self.cases {
            let folder = try CBuild.temporaryFolder("corpus")
            defer {
                StrayProcesses.killAll(in: folder)
                try? FileManager.default.removeItem(atPath: folder)
            }
            let (path, reason) = try hostile.build(folder)

            // (a) validate fails it on the right check, for the right reason (or, with no check, passes it).
            let (report, validated) = try Self.validate(path, hostile.validateOptions, environment: hostile.environment)
            XCTAssertNotNil(validated.status, "\(hostile.name): validate still ran after 90 s")
            XCTAssertNotNil(validated.outputsEndedAfterExit, "\(hostile.name): something kept validate's outputs open")
            XCTAssertEqual(StrayProcesses.running(in: folder), [], "\(hostile.name): a process it started outlived validate")
            if let id = hostile.check {
                let check = report.checks[id]
                XCTAssertEqual(report.status, 1, "\(hostile.name): \(report.output)")
                XCTAssertEqual(check?.result, "fail", "\(hostile.name): \(report.output)")
                XCTAssertTrue(check?.reasons.contains(reason) == true, "\(hostile.name): \(check?.reasons ?? []) lacks '\(reason)'")
                if check?.result == "fail", check?.reasons.contains(reason) == true, report.status == 1 { rightReason += 1 }
            } else {
                XCTAssertEqual(report.status, 0, "\(hostile.name): \(report.output)")
                XCTAssertEqual(report.failed, [], "\(hostile.name): \(report.output)")
                if report.status == 0, report.failed.isEmpty, !report.ids.isEmpty { passed += 1 }
            }

            // (b) isolated beside Echo: the host survives and says what happened; Echo gets everything.
            guard let expected = hostile.isolated else { continue }
            let archive = folder + "/archive"
            let kept = hostile.archive ? try Self.archives(in: archive) : [:]
            XCTAssertEqual(kept.isEmpty, !hostile.archive, "\(hostile.name): the archive the run starts from")
            let (run, bounded) = try Self.run(["--plugin", path, "--plugin", Self.echo, "--isolate"] + options + hostile.runOptions
                                                + (hostile.archive ? ["--archive", archive] : []), environment: hostile.environment)
            XCTAssertNotNil(bounded.status, "\(hostile.name): the host still ran after 30 s\n\(run.output)")
            XCTAssertNotNil(bounded.outputsEndedAfterExit, "\(hostile.name): something kept the host's outputs open")
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
            for prefix in Set(hostile.printed.map { String($0.prefix { $0 != ":" }) }) {
                XCTAssertEqual(run.printed[prefix] ?? [], hostile.printed.filter { $0.hasPrefix(prefix + ":") }, "\(hostile.name): what it printed")
            }
            XCTAssertEqual(StrayProcesses.running(in: folder), [], "\(hostile.name): a process it started outlived the run")
            if hostile.archive { XCTAssertEqual(try Self.archives(in: archive), kept, "\(hostile.name): the previous archive, byte for byte") }
            // What Echo printed, less the lines the plugin posted to it (each once): what it prints alone.
            var echo = run.printed["echo"] ?? []
            for line in hostile.echoAlso {
                guard let index = echo.firstIndex(of: line) else { XCTFail("\(hostile.name): Echo did not print '\(line)'"); continue }
                echo.remove(at: index)
            }
            XCTAssertEqual(echo, echoAlone, "\(hostile.name): Echo beside it")
            if echo == echoAlone, echo.count + hostile.echoAlso.count == run.printed["echo"]?.count { echoComplete += 1 }
        }
        let judged = Self.cases.filter { $0.check != nil }.count
        let applicable = Self.cases.filter { $0.isolated != nil }.count
        print("hostile corpus: \(Self.cases.count) cases, \(rightReason) refused/failed with the right reason, \(passed) passed by validate as expected, "
              + "Echo complete in \(echoComplete) of \(applicable)")
        XCTAssertEqual(rightReason, judged)
        XCTAssertEqual(passed, Self.cases.count - judged)
        XCTAssertEqual(echoComplete, applicable)
    }
}
