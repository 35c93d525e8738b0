import Foundation
import TestSupport
import XCTest

/// `lifecycle-host` as users run it: the built binary, real C plugins built at test time, real
/// signals, a real socket, the JSON trace read back line by line.
final class HostEndToEndTests: XCTestCase {
    static let host = CBuild.products + "/lifecycle-host"
    static let scenarios = CBuild.root + "/docs/scenarios"

    /// A quiet plugin implementing every void delegate function, answering yes, completing at once.
    static let recorder: String = {
        let folder = (try? CBuild.temporaryFolder("recorder")) ?? "/tmp"
        let source = """
            #define LC_DECLARE_DELEGATE_FUNCTIONS
            #include "lifecycle.h"
            static lc_status recorder_init(const lc_host_api_t *host, lc_plugin *plugin, void **state) {
                (void)host, (void)plugin, (void)state; return LC_OK;
            }
            bool application_willFinishLaunchingWithOptions(lc_app *a, const lc_dict *o) { (void)a, (void)o; return true; }
            bool application_didFinishLaunchingWithOptions(lc_app *a, const lc_dict *o) { (void)a, (void)o; return true; }
            void applicationDidBecomeActive(lc_app *a) { (void)a; }
            void applicationWillResignActive(lc_app *a) { (void)a; }
            void applicationDidEnterBackground(lc_app *a) { (void)a; }
            void applicationWillEnterForeground(lc_app *a) { (void)a; }
            void applicationWillTerminate(lc_app *a) { (void)a; }
            void applicationDidReceiveMemoryWarning(lc_app *a) { (void)a; }
            void applicationSignificantTimeChange(lc_app *a) { (void)a; }
            void applicationProtectedDataWillBecomeUnavailable(lc_app *a) { (void)a; }
            void applicationProtectedDataDidBecomeAvailable(lc_app *a) { (void)a; }
            bool application_openURL(lc_app *a, const char *u, const char *s, const lc_dict *n) { (void)a, (void)u, (void)s, (void)n; return true; }
            void application_performFetchWithCompletionHandler(lc_app *a, void (*done)(lc_fetch_result)) { (void)a; done(LC_FETCH_NEW_DATA); }
            void application_didReceiveRemoteNotification_fetchCompletionHandler(lc_app *a, const lc_dict *p, void (*done)(lc_fetch_result)) {
                (void)a, (void)p; done(LC_FETCH_NO_DATA);
            }
            static const lc_plugin_descriptor_t descriptor = {
                .struct_size = sizeof descriptor, .magic = LC_PLUGIN_MAGIC, .abi_major = LC_ABI_VERSION_MAJOR,
                .abi_minor = LC_ABI_VERSION_MINOR, .id = "com.example.recorder", .version = "1.0", .description = "quiet",
                .init = recorder_init,
            };
            LC_EXPORT const lc_plugin_descriptor_t *lc_plugin_entry(void) { return &descriptor; }
            """
        return (try? CBuild.sharedObject(source, named: "recorder", in: folder)) ?? "recorder-did-not-build"
    }()

    /// Runs a scenario of docs/scenarios and returns the trace as `kind name state [plugin] (detail)` lines.
    ///
    /// The recorder implements background fetch: without `--background-mode fetch` the host says so, on
    /// standard error (the only line there) and in a `warning` line right after the plugin's `loaded`
    /// line (checked here, and left out of what is returned).
    func trace(_ scenario: String, _ extra: [String] = [], file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let result = try CBuild.run(Self.host, ["run", "--trace", "json", "--no-socket", "--no-pressure", "--no-clock",
                                                "--script", "\(Self.scenarios)/\(scenario).scenario", "--plugin", Self.recorder] + extra)
        XCTAssertEqual(result.status, 0, result.output, file: file, line: line)
        let parts = result.output.components(separatedBy: "--stderr--\n")
        var lines = try project(parts[0], file: file, line: line)
        let fetchOn = extra.joined(separator: " ").contains("--background-mode fetch")
        let sentence = "com.example.recorder implements background fetch (application:performFetchWithCompletionHandler:), which is off: "
            + "run with --background-mode fetch to turn it on"
        XCTAssertEqual(parts.count > 1 ? parts[1] : "", fetchOn ? "" : "lifecycle-host: \(sentence)\n", file: file, line: line)
        if !fetchOn {
            XCTAssertEqual(lines.count > 1 ? lines.remove(at: 1) : "", "warning fetch off not-running [rec] (\(sentence))", file: file, line: line)
        }
        return lines
    }

    /// Checks every line is a JSON object with t, seq (1, 2, …), kind, name, state; returns compact lines.
    func project(_ output: String, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        var lines: [String] = []
        var lastTime = 0.0
        for (index, text) in output.split(separator: "\n").enumerated() {
            guard let object = try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any] else {
                XCTFail("not a JSON object: \(text)", file: file, line: line)
                continue
            }
            XCTAssertEqual(object["seq"] as? Int, index + 1, "seq counts from 1", file: file, line: line)
            let time = try XCTUnwrap(object["t"] as? Double, file: file, line: line)
            XCTAssertGreaterThanOrEqual(time, lastTime, "t is monotonic", file: file, line: line)
            lastTime = time
            let kind = try XCTUnwrap(object["kind"] as? String, file: file, line: line)
            let name = try XCTUnwrap(object["name"] as? String, file: file, line: line)
            let state = try XCTUnwrap(object["state"] as? String, file: file, line: line)
            var compact = "\(kind) \(name) \(state)"
            if let plugin = object["plugin"] as? String { compact += " [\(plugin == "com.example.recorder" ? "rec" : plugin)]" }
            if kind != "plugin", let detail = object["detail"] as? String {
                compact += " (\(detail.replacingOccurrences(of: Self.scenarios + "/", with: "")))"
            }
            lines.append(compact)
        }
        return lines
    }

    // MARK: Every row of the sequence table (docs/scenarios)

    func testLaunchIntoTheForeground() throws {
        XCTAssertEqual(try trace("launch-foreground"), [
            "plugin loaded not-running [rec]",
            "action launch not-running ({\"source\":\"test\"})",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive ({\"source\":\"test\"})",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "input expect-state active active (script launch-foreground.scenario:3)",
            "action terminate active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running",
        ])
    }

    func testLaunchIntoTheBackground() throws {
        XCTAssertEqual(try trace("launch-background"), [
            "plugin loaded not-running [rec]",
            "action launch background not-running",
            "state background background",
            "delegate application:willFinishLaunchingWithOptions: background [rec]",
            "delegate application:didFinishLaunchingWithOptions: background [rec]",
            "notification didFinishLaunching background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "state suspended suspended",
            "input expect-state suspended suspended (script launch-background.scenario:3)",
            "action terminate suspended",
            "state not-running not-running (terminated while suspended: no callback, as on iOS)",
        ])
    }

    func testLaunchToOpenAURLAndOpenWhileSuspended() throws {
        XCTAssertEqual(try trace("open-url"), [
            "plugin loaded not-running [rec]",
            "action open-url not-running (app://item/7 from com.example.mail)",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive ({\"url\":\"app://item/7\",\"sourceApplication\":\"com.example.mail\"})",
            "delegate application:openURL:sourceApplication:annotation: inactive [rec]",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "input expect-state active active (script open-url.scenario:3)",
            "action home active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "state suspended suspended",
            "action open-url suspended (app://item/8)",
            "state background background",
            "notification willEnterForeground background",
            "delegate applicationWillEnterForeground: background [rec]",
            "state inactive inactive",
            "delegate application:openURL:sourceApplication:annotation: inactive [rec]",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "input expect-state active active (script open-url.scenario:6)",
            "action terminate active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running",
        ])
    }

    func testAlertInterruptionDismissedThenTaken() throws {
        XCTAssertEqual(try trace("interruption"), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action interrupt active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "input expect-state inactive inactive (script interruption.scenario:4)",
            "action dismiss inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "input expect-state active active (script interruption.scenario:6)",
            "action interrupt active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "action accept inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "state suspended suspended",
            "input expect-state suspended suspended (script interruption.scenario:9)",
            "action terminate suspended",
            "state not-running not-running (terminated while suspended: no callback, as on iOS)",
        ])
    }

    func testHomeAndReturn() throws {
        XCTAssertEqual(try trace("home-and-return"), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action home active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "state suspended suspended",
            "input expect-state suspended suspended (script home-and-return.scenario:4)",
            "action foreground suspended",
            "state background background",
            "notification willEnterForeground background",
            "delegate applicationWillEnterForeground: background [rec]",
            "state inactive inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "input expect-state active active (script home-and-return.scenario:6)",
            "action terminate active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running",
        ])
    }

    func testLockThenUnlock() throws {
        XCTAssertEqual(try trace("lock-unlock"), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action lock active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate applicationProtectedDataWillBecomeUnavailable: background [rec]",
            "notification protectedDataWillBecomeUnavailable background",
            "state suspended suspended",
            "input expect-state suspended suspended (script lock-unlock.scenario:4)",
            "action unlock suspended",
            "queued protectedDataDidBecomeAvailable suspended (coalescing kind protected-data)",
            "state background background",
            "delegate applicationProtectedDataDidBecomeAvailable: background [rec]",
            "notification protectedDataDidBecomeAvailable background",
            "notification willEnterForeground background",
            "delegate applicationWillEnterForeground: background [rec]",
            "state inactive inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "input expect-state active active (script lock-unlock.scenario:6)",
            "action terminate active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running",
        ])
    }

    func testMemoryWarning() throws {
        XCTAssertEqual(try trace("memory-warning"), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action memory-warning active (critical)",
            "delegate applicationDidReceiveMemoryWarning: active [rec]",
            "notification didReceiveMemoryWarning active ({\"level\":\"critical\"})",
            "input expect-state active active (script memory-warning.scenario:4)",
            "action terminate active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running",
        ])
    }

    func testPurgeWhileSuspended() throws {
        XCTAssertEqual(try trace("purge"), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action home active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "state suspended suspended",
            "action purge suspended",
            "state not-running not-running (purged while suspended: no callback, as on iOS)",
            "input expect-state not-running not-running (script purge.scenario:5)",
        ])
    }

    /// A purge of an application running in the background: the recorder (a C plugin) gets
    /// applicationWillTerminate: (seed 000, decision 49).
    func testPurgeWhileRunningInTheBackground() throws {
        XCTAssertEqual(Array(try trace("purge-background", ["--background-mode", "audio"]).suffix(7)), [
            "notification didEnterBackground background",
            "input expect-state background background (script purge-background.scenario:5)",
            "action purge background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running (purged while running in the background, after applicationWillTerminate:)",
            "input expect-state not-running not-running (script purge-background.scenario:7)",
        ])
    }

    /// `--memory-warning-limit 2`: the recorder (a C plugin) gets two warnings; the third ends the
    /// application outright, with no callback (seed 002, decision 50); the run ends cleanly.
    func testTheMemoryWarningLimitEndsTheApplicationOutright() throws {
        XCTAssertEqual(Array(try trace("memory-limit", ["--memory-warning-limit", "2"]).suffix(8)), [
            "delegate applicationDidReceiveMemoryWarning: active [rec]",
            #"notification didReceiveMemoryWarning active ({"level":"warning"})"#,
            "action memory-warning active (critical)",
            "delegate applicationDidReceiveMemoryWarning: active [rec]",
            #"notification didReceiveMemoryWarning active ({"level":"critical"})"#,
            "action memory-warning active (warning)",
            "state not-running not-running (terminated outright: memory still short after 2 memory warnings without relief "
                + "(the memory-warning limit); no callback)",
            "input expect-state not-running not-running (script memory-limit.scenario:7)",
        ])
    }

    func testTerminateWhileInTheBackground() throws {
        XCTAssertEqual(try trace("terminate-background", ["--background-mode", "audio"]), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action home active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "input expect-state background background (script terminate-background.scenario:5)",
            "action terminate background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running",
        ])
    }

    func testExitsOnSuspend() throws {
        XCTAssertEqual(try trace("exits-on-suspend", ["--exits-on-suspend"]), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action home active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "delegate applicationWillTerminate: inactive [rec]",
            "notification willTerminate inactive",
            "state not-running not-running",
            "input expect-state not-running not-running (script exits-on-suspend.scenario:4)",
        ])
    }

    func testSignificantTimeChangeCoalescedWhileSuspended() throws {
        XCTAssertEqual(try trace("time-change"), [
            "plugin loaded not-running [rec]",
            "action launch not-running",
            "state inactive inactive",
            "delegate application:willFinishLaunchingWithOptions: inactive [rec]",
            "delegate application:didFinishLaunchingWithOptions: inactive [rec]",
            "notification didFinishLaunching inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action time-change active",
            "notification significantTimeChange active",
            "delegate applicationSignificantTimeChange: active [rec]",
            "action home active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "state suspended suspended",
            "action time-change suspended",
            "queued significantTimeChange suspended (coalescing kind time)",
            "action time-change suspended",
            "queued significantTimeChange suspended (coalescing kind time)",
            "action foreground suspended",
            "state background background",
            "notification significantTimeChange background (coalesced from 2)",
            "delegate applicationSignificantTimeChange: background [rec]",
            "notification willEnterForeground background",
            "delegate applicationWillEnterForeground: background [rec]",
            "state inactive inactive",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
            "action terminate active",
            "delegate applicationWillResignActive: active [rec]",
            "notification willResignActive active",
            "state inactive inactive",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate applicationWillTerminate: background [rec]",
            "notification willTerminate background",
            "state not-running not-running",
        ])
    }

    func testBackgroundFetch() throws {
        XCTAssertEqual(try trace("fetch", ["--background-mode", "fetch"]), [
            "plugin loaded not-running [rec]",
            "action fetch not-running",
            "state background background",
            "delegate application:willFinishLaunchingWithOptions: background [rec]",
            "delegate application:didFinishLaunchingWithOptions: background [rec]",
            "notification didFinishLaunching background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate application:performFetchWithCompletionHandler: background [rec]",
            "completion application:performFetchWithCompletionHandler: background [rec] (newData)",
            "state suspended suspended",
            "input expect-state suspended suspended (script fetch.scenario:4)",
            "action fetch suspended",
            "state background background",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate application:performFetchWithCompletionHandler: background [rec]",
            "completion application:performFetchWithCompletionHandler: background [rec] (newData)",
            "state suspended suspended",
            "input expect-state suspended suspended (script fetch.scenario:6)",
            "action terminate suspended",
            "state not-running not-running (terminated while suspended: no callback, as on iOS)",
        ])
    }

    func testRemoteNotification() throws {
        XCTAssertEqual(try trace("remote-notification", ["--background-mode", "remote-notification"]), [
            "plugin loaded not-running [rec]",
            "action remote-notification not-running ({\"badge\":3})",
            "state background background",
            "delegate application:willFinishLaunchingWithOptions: background [rec]",
            "delegate application:didFinishLaunchingWithOptions: background [rec]",
            "notification didFinishLaunching background ({\"remoteNotification\":{\"badge\":3}})",
            "delegate applicationDidEnterBackground: background [rec]",
            "notification didEnterBackground background",
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: background [rec]",
            "completion application:didReceiveRemoteNotification:fetchCompletionHandler: background [rec] (noData)",
            "state suspended suspended",
            "input expect-state suspended suspended (script remote-notification.scenario:4)",
            "action terminate suspended",
            "state not-running not-running (terminated while suspended: no callback, as on iOS)",
        ])
    }

    /// The user opens the app from the push's alert (`open-notification`): the recorder (a C plugin)
    /// is called again with the payload, in state inactive, before didBecomeActive (seed 002, decision 51).
    func testOpeningTheAppFromThePushAlert() throws {
        let lines = try trace("open-notification", ["--background-mode", "remote-notification"])
        let start = try XCTUnwrap(lines.firstIndex { $0.hasPrefix("action open-notification") }, lines.joined(separator: "\n"))
        XCTAssertEqual(Array(lines[start...].prefix(10)), [
            "action open-notification suspended ({\"badge\":3})",
            "state background background",
            "notification willEnterForeground background",
            "delegate applicationWillEnterForeground: background [rec]",
            "state inactive inactive",
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: inactive [rec]",
            "completion application:didReceiveRemoteNotification:fetchCompletionHandler: inactive [rec] (noData)",
            "state active active",
            "delegate applicationDidBecomeActive: active [rec]",
            "notification didBecomeActive active",
        ])
    }
}
