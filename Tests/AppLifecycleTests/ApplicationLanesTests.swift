import XCTest
@testable import AppLifecycle

/// The application's loop-bound bytes are lanes of one word (`LoopBoundBytes`): each is written alone,
/// and `frameContext` reads three of them at once, as each reads alone.
final class ApplicationLanesTests: XCTestCase {
    func testEachBudgetPhaseHasItsOwnLaneValueAndComesBack() {
        var lanes: Set<UInt8> = []
        for phase in WatchdogReport.Budget.allCases {
            let lane = Application.lane(of: phase)
            XCTAssertEqual(Application.budgetPhase(lane), phase)
            XCTAssertNotEqual(lane, 0, "0 is no phase")
            lanes.insert(lane)
        }
        XCTAssertEqual(lanes.count, WatchdogReport.Budget.allCases.count)
        XCTAssertEqual(Application.lane(of: nil), 0)
        XCTAssertNil(Application.budgetPhase(0))
        XCTAssertNil(Application.budgetPhase(200))
    }

    func testAWriteChangesItsLaneOnlyAndTheFrameContextReadsThemAtOnce() throws {
        let h = try Harness()
        let app = h.app
        var context = app.frameContext
        XCTAssertEqual(context.state, .notRunning)
        XCTAssertTrue(context.isProtectedDataAvailable)
        XCTAssertNil(context.budgetPhase)

        try h.launch()
        app.budgetPhase = .backgroundTask
        app.isProtectedDataAvailable = false
        app.thermalState = .critical
        context = app.frameContext
        XCTAssertEqual(context.state, app.state)
        XCTAssertEqual(context.state, .active)
        XCTAssertFalse(context.isProtectedDataAvailable)
        XCTAssertEqual(context.budgetPhase, .backgroundTask)
        XCTAssertFalse(app.isDeviceLocked, "its lane untouched")
        XCTAssertFalse(app.isLowPowerModeEnabled, "its lane untouched")

        app.isLowPowerModeEnabled = true
        app.isDeviceLocked = true
        app.budgetPhase = nil
        context = app.frameContext
        XCTAssertEqual(context.state, .active)
        XCTAssertFalse(context.isProtectedDataAvailable)
        XCTAssertNil(context.budgetPhase)
        XCTAssertEqual(app.thermalState, .critical)
        XCTAssertTrue(app.isLowPowerModeEnabled)
        XCTAssertTrue(app.isDeviceLocked)
    }
}
