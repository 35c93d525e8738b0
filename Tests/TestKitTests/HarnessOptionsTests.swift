import LifecycleTestKit
import XCTest

/// LifecycleHarness's own refusals: options the engine refuses throw, naming the field.
final class HarnessOptionsTests: XCTestCase {
    func testABackgroundModeTheHeaderDoesNotDefineIsRefusedByName() {
        var options = LifecycleHarness.Options()
        options.backgroundModes = 0x400
        XCTAssertThrowsError(try LifecycleHarness(options)) { error in
            let refusal = error as? LifecycleHarness.CreationError
            XCTAssertEqual(refusal?.status, -1)
            XCTAssertEqual(refusal?.message, "LC_ERR_INVALID_ARGUMENT: config->background_modes has unknown bits 0x400; the LC_BACKGROUND_* bits (0x1ff) only")
        }
    }
}
