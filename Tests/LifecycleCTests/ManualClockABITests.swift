import Foundation
import TestSupport
import XCTest

/// ABI 1.7's manual clock, driven by a C program (Fixtures/manual_clock.c) compiled at test time
/// against include/lifecycle.h and linked with liblifecycle.so: a background task that expires at
/// 25 s and is ended by the watchdog at 30 s (not at 29.9), a completion handler timed out at 30 s,
/// the launch and hang budgets overrun by lc_app_advance from inside a callback (a timer passed
/// meanwhile runs after it), timers falling due in one advance in deadline order with the work they
/// post, and the refusals with their messages. About 110 s of virtual time in under a second.
final class ManualClockABITests: XCTestCase {
    func testTheManualClockThroughTheCABI() throws {
        let folder = try CBuild.temporaryFolder("manual-clock")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let started = Date()
        let (compile, run) = try CBuild.runLinkedProgram("Tests/LifecycleCTests/Fixtures/manual_clock.c", in: folder, extra: ["-lm"])
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try XCTUnwrap(run)
        XCTAssertEqual(result.status, 0, result.output)
        // The engine's own log lines (standard error) are not compared.
        let stdout = result.output.components(separatedBy: "--stderr--").first ?? ""
        let got = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        XCTAssertEqual(CBuild.mismatchedLines(got, Self.expected), [], result.output)
        // Compiling included, far less than the virtual time.
        XCTAssertLessThan(Date().timeIntervalSince(started), 30)
    }

    static let expected = """
        a background task (30 s of background time, the warning 5 s before):
            0.000 action launch
            0.000 state inactive
            0.000 notification didFinishLaunching
            0.000 state active
            0.000 notification didBecomeActive
         advance 10
         clock 10.000, state active
           10.000 action home
           10.000 notification willResignActive
           10.000 state inactive
           10.000 state background
           10.000 delegate applicationDidEnterBackground: by com.example.uploader
           10.000 background-task begin: #1 upload
           10.000 notification didEnterBackground
         advance 24.9
         clock 34.900, state background
         5.100 s left
         advance 0.1
           35.000 background-task expiring: #1 upload
          expiration handler at 35.000, 5.000 s left
         clock 35.000, state background
         advance 4.9
         clock 39.900, state background
         0.100 s left
         advance 0.1
           40.000 watchdog background task #1 'upload': background task #1 'upload' overran the backgroundTask budget: 30.000 s of 30.000 s (policy: terminate)
          on_watchdog at 40.000: budget backgroundTask, event background task #1 'upload', 30.000 s of 30.000 s
           40.000 state not-running: killed by the watchdog
         clock 40.000, state not-running
        a background fetch whose completion handler is never called (30 s):
            0.000 action launch background
            0.000 state background
            0.000 notification didFinishLaunching
            0.000 notification didEnterBackground
            0.000 state suspended
            0.000 action fetch
            0.000 state background
            0.000 notification didEnterBackground
            0.000 delegate application:performFetchWithCompletionHandler: by com.example.fetcher
          perform_fetch at 0.000: the completion handler is never called
         advance 29.9
         clock 29.900, state background
         advance 0.1
           30.000 watchdog completion handler of application:performFetchWithCompletionHandler: by com.example.fetcher: completion handler of application:performFetchWithCompletionHandler: by 'com.example.fetcher' overran the completionHandler budget: 30.000 s of 30.000 s (policy: report)
          on_watchdog at 30.000: budget completionHandler, event completion handler of application:performFetchWithCompletionHandler:, 30.000 s of 30.000 s
           30.000 state suspended
         clock 30.000, state suspended
        the launch and hang budgets (5 s each), a callback advancing the clock:
            0.000 action launch
            0.000 state inactive
            0.000 delegate application:didFinishLaunchingWithOptions: by com.example.slow
          did_finish_launching advances 6 s from inside
          on_watchdog at 6.000: budget launch, event application:didFinishLaunchingWithOptions:, 6.000 s of 5.000 s
          did_finish_launching returns at 6.000
            6.000 notification didFinishLaunching
            6.000 watchdog application:didFinishLaunchingWithOptions: by com.example.slow: application:didFinishLaunchingWithOptions: by 'com.example.slow' overran the launch budget: 6.000 s of 5.000 s (policy: report)
            6.000 state active
            6.000 notification didBecomeActive
          observer advances 4.9 s from inside
          observer advances 5.5 s from inside
          on_watchdog at 16.400: budget hang, event com.example.slow, 5.500 s of 5.000 s
         posts returned at 16.400
         advance 0
           16.400 watchdog com.example.slow: com.example.slow overran the hang budget: at least 5.500 s of 5.000 s (policy: report)
          timer due at 7 runs at 16.400, after the callback that passed it
         clock 16.400, state active
        timers falling due in one advance:
         advance 5
          timer 1 s at 1.000
            work posted by the 1 s timer at 1.000
            a 0 s timer added by the 1 s timer at 1.000
          timer 2 s (added first) at 2.000
          timer 2 s (added second) at 2.000
          timer 3 s at 3.000
         clock 5.000, state not-running
         next timeout -1 ms
         advance 0.5
          timer 5.5 s at 5.500
         clock 5.500, state not-running
         next timeout -1 ms
        refusals:
         advance nan: LC_ERR_INVALID_ARGUMENT: lc_app_advance: seconds must be a finite number from 0 to 9223372036, not nan
         advance -1: LC_ERR_INVALID_ARGUMENT: lc_app_advance: seconds must be a finite number from 0 to 9223372036, not -1.0
         advance inf: LC_ERR_INVALID_ARGUMENT: lc_app_advance: seconds must be a finite number from 0 to 9223372036, not inf
         advance 1e+300: LC_ERR_INVALID_ARGUMENT: lc_app_advance: seconds must be a finite number from 0 to 9223372036, not 1e+300
         advance 9.22337e+09: LC_ERR_INVALID_ARGUMENT: lc_app_advance: seconds must be a finite number from 0 to 9223372036, not 9223372037.0
         clock 0.000
         the largest advance: clock 9223372036
         advance 1: LC_ERR_INVALID_ARGUMENT: lc_app_advance: the application runs on the monotonic clock (lc_config_t.clock); only LC_CLOCK_MANUAL advances
         default clock 0
         clock 2: LC_ERR_INVALID_ARGUMENT: config->clock is 2; LC_CLOCK_MONOTONIC (0) or LC_CLOCK_MANUAL (1)
         advance 1: LC_ERR_INVALID_ARGUMENT: lc_app_advance: the application runs on the monotonic clock (lc_config_t.clock); only LC_CLOCK_MANUAL advances
        about 110 s of virtual time in under 1 s of wall time: yes
        """
}
