import Foundation
import FoundationXML
import TestSupport
import XCTest
@testable import lifecycle_host
import HostInput

/// The other commands and inputs of the built `lifecycle-host`: errors, exit codes, signals, the
/// control socket, `check`, PSI, the timeline, the prompt, the demo.
final class HostCommandTests: XCTestCase {
    let host = HostEndToEndTests.host
    let recorder = HostEndToEndTests.recorder

    func writeScenario(_ text: String, in folder: String, name: String = "test.scenario") throws -> String {
        let path = folder + "/" + name
        try text.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    func jsonLines(_ lines: [String]) -> [[String: Any]] {
        lines.compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
    }

    // MARK: Scenario errors

    func testABadScenarioLineStopsTheRunWithFileLineAndExit2() throws {
        let folder = try CBuild.temporaryFolder("badline")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = try writeScenario("launch\n# a comment\nhme\nterminate\n", in: folder)
        let result = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", script])
        XCTAssertEqual(result.status, 2)
        XCTAssertEqual(result.output, "--stderr--\n\(script):3: unknown action 'hme' (did you mean 'home'?); 'help' lists the actions\n",
                       "nothing runs before the whole file parsed")
        for (line, message) in [
            ("memory-warning extreme", "unknown memory-warning level 'extreme' (normal, warning or critical)"),
            ("wait soon", "bad duration 'soon': not a number with a unit (e.g. 250ms, 2s, 1.5s)"),
            // These trapped in the conversion (SIGILL) before the range check.
            ("wait 1e300s", "bad duration '1e300s': out of range: at most 9223372036 s (about 292 years)"),
            ("wait 1e10s", "bad duration '1e10s': out of range: at most 9223372036 s (about 292 years)"),
            ("wait 200000000m", "bad duration '200000000m': out of range: at most 9223372036 s (about 292 years)"),
            ("wait -1s", "bad duration '-1s': cannot be negative"),
            ("wait nan", "bad duration 'nan': not a number with a unit (e.g. 250ms, 2s, 1.5s)"),
            ("wait infs", "bad duration 'infs': not a number with a unit (e.g. 250ms, 2s, 1.5s)"),
            ("post didEnterBackgrond", "unknown notification name 'didEnterBackgrond' (did you mean 'didEnterBackground'?); custom names must be reverse-DNS style, e.g. 'com.example.didEnterBackgrond'"),
            ("launch background now", "'launch' expects KEY=VALUE, got 'now'"),
            ("home now", "'home' takes no arguments"),
            ("expect-state asleep", "unknown state 'asleep' (not-running, inactive, active, background or suspended)"),
        ] {
            let bad = try writeScenario("launch\n\(line)\n", in: folder, name: "bad.scenario")
            let r = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", bad])
            XCTAssertEqual(r.status, 2, line)
            XCTAssertEqual(r.output.components(separatedBy: "--stderr--\n").last, "\(bad):2: \(message)\n")
        }
    }

    func testAnExpectStateThatDoesNotHoldAndAnIllegalActionAreScriptErrors() throws {
        let folder = try CBuild.temporaryFolder("expect")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let script = try writeScenario("launch\nhome\nexpect-state background\nterminate\n", in: folder)
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script])
        XCTAssertEqual(result.status, 2)
        XCTAssertTrue(result.output.hasSuffix("--stderr--\n\(script):3: expected state background, found suspended\n"), result.output)
        let illegal = try writeScenario("launch\ndismiss\n", in: folder, name: "illegal.scenario")
        let r = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--script", illegal])
        XCTAssertEqual(r.status, 2)
        XCTAssertTrue(r.output.hasSuffix("\(illegal):2: action 'dismiss' is not allowed while the application is active: no interruption is in progress\n"), r.output)
    }

    // MARK: Exit codes

    func testARefusedPluginExits3AndTheOthersRun() throws {
        let folder = try CBuild.temporaryFolder("refused")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bad = try CBuild.sharedObject(CBuild.plugin(major: "2"), named: "bad", in: folder)
        let script = try writeScenario("launch\nterminate\n", in: folder)
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script,
                                           "--plugin", bad, "--plugin", recorder, "--background-mode", "fetch"])
        XCTAssertEqual(result.status, 3)
        XCTAssertTrue(result.output.contains("\"kind\":\"error\",\"name\":\"plugin refused\""), result.output)
        XCTAssertTrue(result.output.contains("\"kind\":\"delegate\",\"name\":\"applicationWillTerminate:\""), "the good plugin ran")
        XCTAssertTrue(result.output.hasSuffix("lifecycle-host: plugin refused: \(bad): built for ABI 2.7; this host speaks ABI 1.7 (the major version must match)\n"))
    }

    func testAWatchdogKillExits4WithoutWillTerminate() throws {
        let folder = try CBuild.temporaryFolder("watchdog")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let slow = try CBuild.sharedObject(CBuild.plugin(id: "com.example.slow", extra: """
            #include <unistd.h>
            void applicationDidEnterBackground(lc_app *a) { (void)a; usleep(2000000); }
            void applicationWillTerminate(lc_app *a) { (void)a; }
            """), named: "slow", in: folder)
        let script = try writeScenario("launch\nhome\nterminate\n", in: folder)
        let started = Date()
        let result = try CBuild.run(host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock", "--script", script,
                                           "--plugin", slow, "--budget", "did-enter-background=0.2"])
        XCTAssertEqual(result.status, 4)
        XCTAssertLessThan(Date().timeIntervalSince(started), 1.8, "killed at the budget, not after the callback")
        let lines = result.output.components(separatedBy: "--stderr--")[0].split(separator: "\n").map(String.init)
        let last = jsonLines([lines.last ?? ""]).first
        XCTAssertEqual(last?["kind"] as? String, "watchdog")
        XCTAssertEqual(last?["name"] as? String, "applicationDidEnterBackground:")
        XCTAssertEqual(last?["plugin"] as? String, "com.example.slow")
        XCTAssertFalse(result.output.contains("applicationWillTerminate"))
    }

    // MARK: Signals

    func testSignalsDriveTheApplicationAndCtrlZReallyStopsTheProcess() throws {
        let socket = try CBuild.temporaryFolder("signals") + "/host.sock"
        let process = try RunningProcess(host, ["run", "--trace", "json", "--socket", socket, "--no-pressure", "--no-clock",
                                                "--plugin", recorder])
        defer { _ = process.wait(timeout: 1) }
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") }, "launched")

        process.signal(SIGUSR1)
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"notification\",\"name\":\"didReceiveMemoryWarning\"") })
        XCTAssertNotNil(process.output.first { $0.contains("\"kind\":\"input\",\"name\":\"memory-warning warning\"") && $0.contains("signal SIGUSR1") })

        process.signal(SIGTSTP)
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"state\",\"name\":\"suspended\"") })
        var stopped = false
        for _ in 0..<200 where !stopped { stopped = process.procState == "T"; usleep(10_000) }
        XCTAssertTrue(stopped, "once suspended, the process really stops (job control)")
        let linesWhileStopped = process.output.count

        process.signal(SIGCONT)
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"action\",\"name\":\"foreground\"") })
        XCTAssertNotNil(process.waitForLine(after: linesWhileStopped) { $0.contains("\"name\":\"didBecomeActive\"") })
        XCTAssertNotEqual(process.procState, "T")

        process.signal(SIGTERM)
        let status = process.wait()
        XCTAssertEqual(status, 0)
        let tail = jsonLines(Array(process.output.suffix(4))).map { "\($0["kind"] ?? "") \($0["name"] ?? "")" }
        // SIGTERM terminates the active application through the background (as iOS does).
        XCTAssertEqual(tail, ["notification didEnterBackground", "delegate applicationWillTerminate:", "notification willTerminate", "state not-running"])
    }

    // MARK: The control socket

    func testSendAndStatusTalkToARunningHost() throws {
        let folder = try CBuild.temporaryFolder("socket")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (process, socket) = try startHostWithSocket(in: folder)
        defer { _ = process.wait(timeout: 1) }

        let status = try CBuild.run(host, ["status", "--socket", socket])
        XCTAssertEqual(status.status, 0, status.output)
        let object = try XCTUnwrap(try JSONSerialization.jsonObject(with: Data(status.output.utf8)) as? [String: Any])
        XCTAssertEqual(object["state"] as? String, "active")
        XCTAssertEqual(object["pid"] as? Int, Int(process.pid))
        let plugins = try XCTUnwrap(object["plugins"] as? [[String: Any]])
        XCTAssertEqual(plugins.map { $0["id"] as? String }, ["com.example.recorder"])
        XCTAssertEqual((plugins.first?["delegates"] as? [String])?.count, 14, "the recorder exports 14 delegate functions")

        let home = try CBuild.run(host, ["send", "--socket", socket, "home"])
        XCTAssertEqual(home.output, "ok suspended\n")
        XCTAssertEqual(try CBuild.run(host, ["send", "--socket", socket, "time-change"]).output, "ok suspended\n")
        XCTAssertEqual(try CBuild.run(host, ["send", "--socket", socket, "time-change"]).output, "ok suspended\n")
        let queued = try CBuild.run(host, ["status", "--socket", socket]).output
        XCTAssertTrue(queued.contains("\"queued\":[{\"name\":\"significantTimeChange\",\"count\":2}]"), queued)

        let bad = try CBuild.run(host, ["send", "--socket", socket, "dismiss"])
        XCTAssertEqual(bad.status, 1)
        XCTAssertEqual(bad.output, "error: action 'dismiss' is not allowed while the application is suspended: no interruption is in progress\n")
        let unknown = try CBuild.run(host, ["send", "--socket", socket, "fly", "away"])
        XCTAssertEqual(unknown.status, 1)
        XCTAssertEqual(unknown.output, "error: unknown action 'fly'; 'help' lists the actions\n")

        XCTAssertEqual(try CBuild.run(host, ["send", "--socket", socket, "terminate"]).output, "ok not-running\n")
        XCTAssertEqual(process.wait(), 0)
        XCTAssertTrue(process.output.contains { $0.contains("\"kind\":\"input\",\"name\":\"home\"") && $0.contains("\"detail\":\"socket\"") })
        XCTAssertFalse(FileManager.default.fileExists(atPath: socket), "the socket file is removed at exit")
        let gone = try CBuild.run(host, ["status", "--socket", socket])
        XCTAssertEqual(gone.status, 1)
        XCTAssertEqual(gone.output, "--stderr--\nlifecycle-host: no lifecycle-host is listening on \(socket)\n")
    }

    // MARK: check

    func testCheckDescribesGoodPluginsAndRefusesBadOnes() throws {
        let good = try CBuild.run(host, ["check", CBuild.products + "/libGreeter.so"])
        XCTAssertEqual(good.status, 0)
        XCTAssertEqual(good.output, """
            \(CBuild.products)/libGreeter.so
              id:          org.applifecycle.greeter
              version:     1.0.0
              abi:         1.7
              description: Delegate functions only, called through libffi
              observes:    (nothing)
              delegates:   application:willFinishLaunchingWithOptions:, application:didFinishLaunchingWithOptions:, applicationDidEnterBackground:, applicationWillEnterForeground:, applicationWillTerminate:, application:openURL:sourceApplication:annotation:, application:performFetchWithCompletionHandler:, application:didReceiveRemoteNotification:fetchCompletionHandler:
              needs:       --background-mode fetch for background fetch (application:performFetchWithCompletionHandler:)

            """)
        let folder = try CBuild.temporaryFolder("check")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let bad = try CBuild.sharedObject(CBuild.plugin(magic: "0x1u"), named: "bad", in: folder)
        let mixed = try CBuild.run(host, ["check", CBuild.products + "/libEcho.so", bad])
        XCTAssertEqual(mixed.status, 3)
        XCTAssertTrue(mixed.output.hasSuffix("\(bad)\n  refused:     wrong magic 0x1 (expected 0x4C43504C, \"LCPL\")\n"), mixed.output)
        XCTAssertTrue(mixed.output.contains("  observes:    didFinishLaunching, didBecomeActive, willResignActive"))
    }

    /// The handoff fixture (the application delegate's rows added after ABI 1.0): check lists its
    /// methods in table order, whether exported by name (1.0) or in its delegate table (1.1).
    func testCheckListsTheHandoffAndSceneSessionDelegateMethods() throws {
        let folder = try CBuild.temporaryFolder("check-handoff")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        for fixture in [HandoffFixture.exported, .table] {
            let path = try fixture.build(in: folder)
            let result = try CBuild.run(host, ["check", path])
            XCTAssertEqual(result.status, 0, result.output)
            XCTAssertEqual(result.output, """
                \(path)
                  id:          \(fixture.id)
                  version:     1.2.0
                  abi:         1.7
                  description: Handoff, scene-session and openURL:options: delegate functions
                  observes:    didFinishLaunching, didBecomeActive, willResignActive, didEnterBackground, willEnterForeground
                  delegates:   application:willFinishLaunchingWithOptions:, applicationDidBecomeActive:, applicationWillEnterForeground:, \
                application:openURL:options:, application:configurationForConnectingSceneSession:options:, \
                application:didDiscardSceneSessions:, application:willContinueUserActivityWithType:, \
                application:continueUserActivity:restorationHandler:, application:didFailToContinueUserActivityWithType:error:, \
                application:didUpdateUserActivity:

                """, fixture.rawValue)
        }
    }

    // MARK: PSI

    /// A real PSI trigger: CPU pressure made by busy threads on the cpu pressure file (memory pressure
    /// cannot be produced here), wired to the host's memory-warning source.
    func testAPressureTriggerBecomesAMemoryWarning() throws {
        let process = try RunningProcess(host, ["run", "--trace", "json", "--no-socket", "--no-signals", "--no-clock",
                                                "--pressure-file", "/proc/pressure/cpu",
                                                "--pressure-warning", "some 50000 2000000",
                                                "--pressure-critical", "full 1900000 2000000", "--plugin", recorder])
        defer {
            process.signal(SIGKILL)
            _ = process.wait(timeout: 1)
        }
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") })
        // More runnable threads than cores: tasks wait for a CPU, which is what "some" CPU pressure counts.
        let stop = ManagedAtomicFlag()
        let burners = (0..<6).map { _ in Thread { while !stop.isSet { _ = (0..<1000).reduce(0, &+) } } }
        burners.forEach { $0.start() }
        defer { stop.set() }
        // The warning trigger ("some") is the one this load can fire; a critical one may come too.
        let warning = process.waitForLine(timeout: 15) {
            $0.contains("\"kind\":\"notification\",\"name\":\"didReceiveMemoryWarning\"") && $0.contains("{\\\"level\\\":\\\"warning\\\"}")
        }
        stop.set()
        XCTAssertNotNil(warning, "the trigger fired and became a memory warning")
        XCTAssertNotNil(process.output.first { $0.contains("\"kind\":\"input\"") && $0.contains("psi warning") })
    }

    // MARK: Timeline

    func testTimelineWritesAValidSVG() throws {
        let folder = try CBuild.temporaryFolder("timeline")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let svg = folder + "/run.svg"
        let result = try CBuild.run(host, ["run", "--no-socket", "--no-pressure", "--no-clock", "--plugin", recorder,
                                           "--script", HostEndToEndTests.scenarios + "/lock-unlock.scenario", "--timeline", svg])
        XCTAssertEqual(result.status, 0)
        let data = try Data(contentsOf: URL(fileURLWithPath: svg))
        let parser = XMLParser(data: data)
        final class Root: NSObject, XMLParserDelegate {
            var root: String?
            var rects = 0
            func parser(_ p: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
                if root == nil { root = name }
                if name == "rect" { rects += 1 }
            }
        }
        let delegate = Root()
        parser.delegate = delegate
        XCTAssertTrue(parser.parse(), "well-formed XML: \(parser.parserError.map { "\($0)" } ?? "")")
        XCTAssertEqual(delegate.root, "svg")
        XCTAssertGreaterThan(delegate.rects, 5, "state bands and bars")
        XCTAssertTrue(String(decoding: data, as: UTF8.self).contains("http://www.w3.org/2000/svg"))
    }

    // MARK: The prompt

    func testInteractiveInputTakesOneActionALine() throws {
        let process = try RunningProcess(host, ["run", "--interactive", "--trace", "json", "--no-socket", "--no-signals",
                                                "--no-pressure", "--no-clock", "--plugin", recorder])
        defer { _ = process.wait(timeout: 1) }
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"didBecomeActive\"") })
        process.send("lock")
        XCTAssertNotNil(process.waitForLine { $0.contains("\"name\":\"protectedDataWillBecomeUnavailable\"") })
        process.send("dismiss")
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"error\",\"name\":\"dismiss\"") })
        process.send("post com.example.refresh count=2")
        XCTAssertNotNil(process.waitForLine { $0.contains("\"kind\":\"discarded\",\"name\":\"com.example.refresh\"") },
                        "suspended: a non-coalescing notification reaches no one")
        process.closeInput()  // end of input terminates
        XCTAssertEqual(process.wait(), 0)
        XCTAssertTrue(process.standardError.contains("error: action 'dismiss' is not allowed while the application is suspended"), process.standardError)
    }

    // MARK: The demo

    func testTheDemoRunsEverySequenceAndItsScenarioIsTheShippedOne() throws {
        let result = try CBuild.run(host, ["demo", "--trace", "json", "--archive", try CBuild.temporaryFolder("demo")])
        XCTAssertEqual(result.status, 0, result.output)
        for expected in ["\"name\":\"suspended\"", "\"name\":\"significantTimeChange\",\"state\":\"background\",\"detail\":\"coalesced from 2\"",
                         "protectedDataWillBecomeUnavailable", "\"name\":\"purge\"", "application:performFetchWithCompletionHandler:",
                         "\"name\":\"willTerminate\"", "restored counter"] {
            XCTAssertTrue(result.output.contains(expected), expected)
        }
        let shipped = try String(contentsOfFile: HostEndToEndTests.scenarios + "/demo.scenario", encoding: .utf8)
        let source = try String(contentsOfFile: CBuild.root + "/Sources/lifecycle-host/DemoScenario.swift", encoding: .utf8)
        let embedded = source.components(separatedBy: "\"\"\"\n")[1].components(separatedBy: "        \"\"\"")[0]
            .split(separator: "\n", omittingEmptySubsequences: false)
            .map { $0.hasPrefix("        ") ? String($0.dropFirst(8)) : String($0) }.joined(separator: "\n")
        XCTAssertEqual(embedded, shipped, "DemoScenario.swift and docs/scenarios/demo.scenario must not drift")
    }

    /// The demo reads like a walkthrough: no line wider than 100 columns, each step's comment before
    /// its events (in the scenario's order), and a closing summary naming the plugins, the counts and
    /// the command that draws the timeline.
    func testTheDemoIsAWalkthroughOfNarrowLinesWithItsStepsAndASummary() throws {
        let result = try CBuild.run(host, ["demo", "--archive", try CBuild.temporaryFolder("demo-walk")])
        XCTAssertEqual(result.status, 0, result.output)
        let lines = result.output.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(lines.filter { $0.count > 100 }, [], "every line at most 100 columns")
        XCTAssertEqual(lines.first, "time   state       kind          name, plugin, detail")
        // Each step: its action and the scenario's comment, in order, before the action's trace line.
        let steps = lines.filter { $0.hasPrefix("▸ ") }
        let shipped = try ScenarioParser.parse(text: DemoScenario.text, file: "demo.scenario").compactMap { line -> String? in
            guard case .action(let action) = line.command else { return nil }
            return "▸ " + action.description + (line.comment.map { " — \($0)" } ?? "")
        }
        XCTAssertEqual(steps, shipped)
        XCTAssertEqual(steps.first, "▸ launch — willFinish, restoration, didFinish, didBecomeActive")
        let launchStep = try XCTUnwrap(lines.firstIndex(of: steps[0]))
        XCTAssertTrue(lines[launchStep + 1].hasSuffix("action        launch"), lines[launchStep + 1])
        let summary = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("Summary: ") })
        XCTAssertEqual(Array(lines[summary...]).joined(separator: "\n"), """
            Summary: the demo scenario ran \(shipped.count) actions with 4 plugins (org.applifecycle.echo,
              org.applifecycle.statekeeper, org.applifecycle.greeter, org.applifecycle.cachetrimmer).
              Events: 40 delegate calls, 28 notifications, 32 state changes, 13 background-task events, 8
                archive events, 0 errors; exit status 0.
              Draw this run as a timeline: lifecycle-host demo --timeline demo.svg (then open demo.svg).
              The same steps with your own plugin: lifecycle-host run --plugin ./libmine.so --script
                docs/scenarios/demo.scenario

            """)
    }
}

/// A flag threads can poll.
final class ManagedAtomicFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}
