import Foundation
import TestSupport
import XCTest

/// `lifecycle-host run --clock virtual` against `--clock real`: one scenario whose `wait` outlasts a
/// background-time budget (2 s, the warning 1 s before), with a plugin holding two background tasks —
/// one ended by its expiration handler, one left open for the watchdog. Both clocks give the same
/// trace, every line and every time in the virtual run exact; the virtual run takes far less wall
/// time. In the host's process and `--isolate`d (the runner's answers are waited for at each
/// deadline of the virtual clock).
final class VirtualClockHostTests: XCTestCase {
    static let source = #"""
    #include "lifecycle.h"
    static const lc_host_api_t *host;
    static lc_plugin *me;
    static lc_task_id upload, leak;
    static void expiring(void *ctx) {
        (void)ctx;
        host->end_background_task(me, upload);
    }
    static void entered(const lc_notification_t *note, void *ctx) {
        (void)note, (void)ctx;
        host->begin_background_task(me, "upload", expiring, NULL, &upload);
        host->begin_background_task(me, "leak", NULL, NULL, &leak);
    }
    static lc_status fixture_init(const lc_host_api_t *api, lc_plugin *plugin, void **state) {
        (void)state; host = api; me = plugin;
        return api->observe(plugin, "didEnterBackground", NULL, entered, NULL, NULL);
    }
    """# + "\n" + IsolationFixtures.descriptorSource("com.example.tasks")

    static let scenario = "launch\nhome\nwait 2.5s\nexpect-state suspended\nterminate\n"

    /// The engine's events of both runs, in order (times aside).
    static let expected = [
        "action launch not-running [] ()",
        "state inactive inactive [] ()",
        "notification didFinishLaunching inactive [] ()",
        "state active active [] ()",
        "notification didBecomeActive active [] ()",
        "action home active [] ()",
        "notification willResignActive active [] ()",
        "state inactive inactive [] ()",
        "state background background [] ()",
        "notification didEnterBackground background [] ()",
        "background-task begin background [com.example.tasks] (#1 upload)",
        "background-task begin background [com.example.tasks] (#2 leak)",
        "background-task expiring background [com.example.tasks] (#1 upload)",
        "background-task end background [com.example.tasks] (#1 upload)",
        "background-task expiring background [com.example.tasks] (#2 leak)",
        "watchdog background task #2 'leak' background [com.example.tasks] (background task #2 'leak' by 'com.example.tasks' overran the backgroundTask budget: 2.000 s of 2.000 s (policy: report))",
        "background-task end background [com.example.tasks] (#2 ended by the watchdog)",
        "state suspended suspended [] ()",
        "action terminate suspended [] ()",
        "state not-running not-running [] (terminated while suspended: no callback, as on iOS)",
    ]

    /// `trace` with the measured time of each watchdog overrun ("budget: 2.002 s of") replaced by "…",
    /// and those times, in order.
    static func maskingMeasuredTime(_ trace: [String]) -> (trace: [String], measured: [Double]) {
        var measured: [Double] = []
        let masked = trace.map { line -> String in
            guard line.hasPrefix("watchdog "), let range = line.range(of: #"budget: [0-9.]+ s of"#, options: .regularExpression) else {
                return line
            }
            let figure = line[range].dropFirst("budget: ".count).dropLast(" s of".count)
            if let value = Double(figure) { measured.append(value) }
            return line.replacingCharacters(in: range, with: "budget: … s of")
        }
        return (masked, measured)
    }

    func testAScenarioGivesTheSameTraceOnTheVirtualClockInFarLessTime() throws {
        let plugin = try IsolationFixtures.build(Self.source, named: "virtual-clock")
        let arguments = ["--plugin", plugin, "--no-signals", "--budget", "background-task=2", "--budget", "expiration-warning=1",
                         "--watchdog", "report"]
        for isolate in [[], ["--isolate"]] {
            var started = Date()
            let real = try IsolationTests.run(arguments + isolate + ["--clock", "real"], script: Self.scenario)
            let realWall = Date().timeIntervalSince(started)
            started = Date()
            let virtual = try IsolationTests.run(arguments + isolate + ["--clock", "virtual"], script: Self.scenario)
            let virtualWall = Date().timeIntervalSince(started)
            XCTAssertEqual(real.status, 0, real.output)
            XCTAssertEqual(virtual.status, 0, virtual.output)
            // The expiration handler's end of #1 comes back from an isolated plugin's process after the
            // engine expired #2 as well: compare each mode's run with its own order.
            let want = isolate.isEmpty ? Self.expected : Self.isolatedOrder(Self.expected)
            // The real run's watchdog line says how long the task overran by the wall clock: 2.000 s and
            // up to a few ms more under load or a sanitizer. That figure alone is compared by range; on
            // the virtual clock it is exact, and every other word of both traces is compared as is.
            let (realTrace, realMeasured) = Self.maskingMeasuredTime(real.trace)
            XCTAssertEqual(realTrace, Self.maskingMeasuredTime(want).trace, "\(isolate) real:\n" + real.output)
            XCTAssertEqual(realMeasured.count, 1, real.output)
            for measured in realMeasured {
                XCTAssertTrue(measured >= 2.0 && measured < 2.5, "the real overrun at \(measured) s:\n" + real.output)
            }
            XCTAssertEqual(virtual.trace, want, "\(isolate) virtual:\n" + virtual.output)
            XCTAssertEqual(Self.maskingMeasuredTime(virtual.trace).trace, realTrace, "\(isolate) virtual against real")
            XCTAssertGreaterThanOrEqual(realWall, 2.5, "the real run waits its 2.5 s")
            XCTAssertLessThan(virtualWall, realWall / 2, "the virtual run does not wait: \(virtualWall) s against \(realWall) s")
            // On the virtual clock every time is exact: the expiry at 1 s, the watchdog at 2 s, the rest at 2.5 s.
            let times = try Self.times(virtual.output)
            XCTAssertEqual(times["background-task expiring"], [1, 1], virtual.output)
            XCTAssertEqual(times["watchdog background task #2 'leak'"], [2], virtual.output)
            XCTAssertEqual(times["state suspended"], [2], virtual.output)
            XCTAssertEqual(times["action terminate"], [2.5], virtual.output)
        }
    }

    /// Isolated, the plugin's end of #1 is applied after #2's expiry was sent.
    static func isolatedOrder(_ lines: [String]) -> [String] {
        var lines = lines
        let end = lines.firstIndex(of: "background-task end background [com.example.tasks] (#1 upload)")!
        lines.swapAt(end, end + 1)
        return lines
    }

    /// The JSON trace's times by "kind name".
    static func times(_ output: String) throws -> [String: [Double]] {
        var times: [String: [Double]] = [:]
        for line in output.split(separator: "\n") where line.hasPrefix("{") {
            guard let object = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let kind = object["kind"] as? String, let name = object["name"] as? String, let time = object["t"] as? Double else { continue }
            times["\(kind) \(name)", default: []].append(time)
        }
        return times
    }

    /// The control socket is served in real time on the virtual clock, while the application's timers
    /// wait for a `wait`: a background time of 0.2 s does not run out in 0.5 s of real time.
    func testTheControlSocketIsLiveWhileTheVirtualClockStandsStill() throws {
        let folder = try CBuild.temporaryFolder("virtual-socket")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let plugin = try IsolationFixtures.build(Self.source, named: "virtual-socket")
        let (process, socket) = try startHostWithSocket(in: folder, ["--clock", "virtual", "--plugin", plugin, "--budget", "background-task=0.2",
                                                                    "--budget", "expiration-warning=0.1"])
        XCTAssertEqual(try CBuild.run(HostEndToEndTests.host, ["send", "--socket", socket, "home"]).output, "ok background\n")
        usleep(500_000)
        let status = try CBuild.run(HostEndToEndTests.host, ["status", "--socket", socket])
        XCTAssertTrue(status.output.hasPrefix("{\"state\":\"background\""), status.output)
        XCTAssertEqual(try CBuild.run(HostEndToEndTests.host, ["send", "--socket", socket, "terminate"]).output, "ok not-running\n")
        XCTAssertEqual(process.wait(), 0)
        XCTAssertFalse(process.output.contains { $0.contains("\"name\":\"expiring\"") }, "no expiry: \(process.output)")
    }

    func testAClockOtherThanRealOrVirtualIsRefused() throws {
        let result = try CBuild.run(HostEndToEndTests.host, ["run", "--clock", "wall", "--no-socket"])
        XCTAssertEqual(result.status, 64, result.output)
        XCTAssertTrue(result.output.hasPrefix("--stderr--\nError: --clock must be real or virtual, not 'wall'\n"), result.output)
    }
}
