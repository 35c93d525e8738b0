import LifecycleTestKit
import XCTest

/// A wrong expectation in Swift is an XCTest failure at the caller's file and line, with the C kit's
/// report (the file:line prefix left to XCTest), and the call returns false. The failure is caught
/// here (recordFailure) instead of failing this test.
final class HarnessFailureTests: XCTestCase {
    private var caught: [(description: String, file: String, line: Int)] = []
    private var catching = false

    override func recordFailure(withDescription description: String, inFile filePath: String, atLine lineNumber: Int, expected: Bool) {
        guard catching else {
            return super.recordFailure(withDescription: description, inFile: filePath, atLine: lineNumber, expected: expected)
        }
        caught.append((description, filePath, lineNumber))
    }

    func testAWrongExpectationFailsAtItsLineWithTheReport() throws {
        let harness = try LifecycleHarness()
        harness.load(LifecycleHarness.builtPlugin("CacheTrimmer"))
        harness.advance(by: 2)
        harness.perform(.launch)
        catching = true
        let line = #line + 1
        let passed = harness.expectState(.background)
        catching = false
        XCTAssertFalse(passed)
        XCTAssertEqual(harness.checks, 4)
        XCTAssertEqual(harness.failures, 1)
        XCTAssertEqual(caught.count, 1)
        XCTAssertEqual(caught.first?.file, #filePath)
        XCTAssertEqual(caught.first?.line, line)
        // XCTFail's own words first ("failed - "), then the report.
        XCTAssertEqual(caught.first?.description, """
            failed - expected state background; not recorded
              #1        2.000 s  action launch
              #2        2.000 s  state inactive
              #3        2.000 s  notification didFinishLaunching
              #4        2.000 s  state active
              #5        2.000 s  notification didBecomeActive

            """)
        // The cursor did not move: the right expectation still finds its event.
        XCTAssertTrue(harness.expectState(.active))
        XCTAssertEqual(harness.events.map(\.description), [
            "action launch", "state inactive", "notification didFinishLaunching", "state active", "notification didBecomeActive",
        ])
    }
}
