import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import XCTest
@testable import LifecycleC

/// ABI 1.6: Low Power Mode and the thermal state through the C ABI — the actions, the getters, the
/// names, and a struct of 1.5 that cannot say them.
final class DeviceStateCTests: XCTestCase {
    func testTheActionsAndGettersAndNames() throws {
        var app: OpaquePointer?
        XCTAssertEqual(lc_app_create(nil, &app), lc_status(LC_OK))
        defer { lc_app_destroy(app) }
        XCTAssertFalse(lc_app_is_low_power_mode_enabled(app))
        XCTAssertEqual(lc_app_thermal_state(app), lc_thermal_state(LC_THERMAL_NOMINAL.rawValue))
        var action = lc_action_t()
        action.struct_size = UInt32(MemoryLayout<lc_action_t>.size)
        action.kind = lc_action_kind(LC_ACTION_LOW_POWER_MODE)
        action.low_power_mode = true
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_OK), String(cString: lc_last_error_message()))
        XCTAssertTrue(lc_app_is_low_power_mode_enabled(app))
        action.kind = lc_action_kind(LC_ACTION_THERMAL_STATE)
        action.thermal_state = lc_thermal_state(LC_THERMAL_SERIOUS.rawValue)
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_OK), String(cString: lc_last_error_message()))
        XCTAssertEqual(lc_app_thermal_state(app), lc_thermal_state(LC_THERMAL_SERIOUS.rawValue))
        action.thermal_state = lc_thermal_state(4)
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(String(cString: lc_last_error_message()),
                       "lc_app_perform: thermal_state 4 is not LC_THERMAL_NOMINAL, _FAIR, _SERIOUS or _CRITICAL")
        // A 1.5 struct ends before low_power_mode: it reads as false.
        action = lc_action_t()
        action.kind = lc_action_kind(LC_ACTION_LOW_POWER_MODE)
        action.low_power_mode = true
        action.struct_size = UInt32(MemoryLayout<lc_action_t>.offset(of: \lc_action_t.low_power_mode)!)
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_OK))
        XCTAssertFalse(lc_app_is_low_power_mode_enabled(app))
        XCTAssertFalse(lc_app_is_low_power_mode_enabled(nil))
        XCTAssertEqual(NotificationName.powerStateDidChange.id, UInt32(LC_NAME_POWER_STATE_DID_CHANGE))
        XCTAssertEqual(NotificationName.thermalStateDidChange.id, UInt32(LC_NAME_THERMAL_STATE_DID_CHANGE))
    }
}
