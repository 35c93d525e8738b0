import Foundation
import TestSupport
import XCTest

/// ABI 1.3's hang budget and nesting limit, driven by a C program (Fixtures/robustness.c) compiled at
/// test time against include/lifecycle.h and linked with liblifecycle.so.
final class RobustnessABITests: XCTestCase {
    func testHangBudgetAndNestingLimitThroughTheCABI() throws {
        let folder = try CBuild.temporaryFolder("robustness")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (compile, run) = try CBuild.runLinkedProgram("Tests/LifecycleCTests/Fixtures/robustness.c", in: folder)
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try XCTUnwrap(run)
        XCTAssertEqual(result.status, 0, result.output)
        // The engine's own log lines (standard error) are not compared.
        let stdout = result.output.components(separatedBy: "--stderr--").first ?? ""
        var got = stdout.split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        // A plain post is no action: the hang is traced on the loop's next turn (lc_app_run_for), after
        // on_watchdog heard of it while the observer still ran. Its elapsed time varies: compare its fixed parts.
        let hang = try XCTUnwrap(got.firstIndex { $0.hasPrefix("  trace: watchdog com.example.slow") })
        XCTAssertTrue(got[hang].hasPrefix("  trace: watchdog com.example.slow (com.example.slow overran the hang budget: at least 0."), got[hang])
        XCTAssertTrue(got[hang].hasSuffix(" of 0.200 s (policy: report))"), got[hang])
        got[hang] = "  trace: watchdog com.example.slow (…)"
        XCTAssertEqual(CBuild.mismatchedLines(got, Self.expected), [], result.output)
    }

    static let expected = """
        abi 1.7
        LC_ERR_NESTING_LIMIT: a post from inside 64 nested dispatches was refused; nothing was delivered
        default hang_budget 5
        hang_budget 0.2, an observer taking 0.5 s:
          on_watchdog: budget hang, event com.example.slow, observer '', 0.200 s budget, at least the budget: yes, policy report
          post returned
          trace: watchdog com.example.slow (…)
        a 1.2-sized lc_config_t (the default 5 s), the same observer:
          post returned
        an observer re-posting from its own callback, 100000 deep:
          trace: error post refused (com.example.again: 64 dispatches were already nested (the limit is 64); nothing was delivered)
          outer post: LC_OK; deepest 64; the one beside it called 64 times
          first refusal at depth 64: LC_ERR_NESTING_LIMIT: lc_app_post: 'com.example.again' was not posted: 64 dispatches are already nested (the nesting limit; an observer re-posting from its own callback?); nothing was delivered
          trace: error post refused (com.example.again: 64 dispatches were already nested (the limit is 64); nothing was delivered)
          again: the one beside it called 64 times
        """

    /// `lc_app_destroy` from inside one of the application's own calls (an observer run by
    /// `lc_app_perform`): the call finishes and returns its status, the program goes on, and another
    /// application works on the same thread. The application is freed when the outermost call returns
    /// (`withApp`, which borrows the caller's reference); freed memory is overwritten at once
    /// (`M_PERTURB`), and under AddressSanitizer a use after free stops the program.
    func testDestroyingTheApplicationInsideItsOwnCallIsSafe() throws {
        let folder = try CBuild.temporaryFolder("destroy-inside")
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let (compile, run) = try CBuild.runLinkedProgram("Tests/LifecycleCTests/Fixtures/destroy_inside.c", in: folder)
        XCTAssertEqual(compile.status, 0, compile.output)
        let result = try XCTUnwrap(run)
        XCTAssertEqual(result.status, 0, result.output)
        let stdout = result.output.components(separatedBy: "--stderr--").first ?? ""
        XCTAssertEqual(stdout.split(separator: "\n").map(String.init),
                       ["destroyed inside the observer", "lc_app_perform returned LC_OK", "another application: LC_OK"], result.output)
    }
}
