import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import XCTest
@testable import LifecycleC

/// The append-only struct rule where the host reads a caller's struct.
final class ABITests: XCTestCase {
    /// The header promises that a shorter, older lc_action_t is accepted with its tail zero-filled.
    func testShortActionStructsAreAcceptedWithTheTailZeroFilled() throws {
        var app: OpaquePointer?
        XCTAssertEqual(lc_app_create(nil, &app), lc_status(LC_OK))
        defer { lc_app_destroy(app) }
        // Garbage past struct_size must not be read: the struct says it ends after `kind`.
        var action = lc_action_t()
        action.kind = lc_action_kind(LC_ACTION_LAUNCH)
        action.options = OpaquePointer(bitPattern: 0xDEAD)
        action.struct_size = 8
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_OK), String(cString: lc_last_error_message()))
        XCTAssertEqual(lc_app_state(app), lc_state(LC_STATE_ACTIVE))
        // Up to options: memory_level is missing, so it reads as LC_MEMORY_NORMAL (valid).
        action = lc_action_t()
        action.kind = lc_action_kind(LC_ACTION_MEMORY_WARNING)
        action.memory_level = 77
        action.struct_size = UInt32(MemoryLayout<lc_action_t>.offset(of: \lc_action_t.memory_level)!)
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_OK), String(cString: lc_last_error_message()))
        // Shorter than struct_size + kind: refused.
        action.struct_size = 4
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_ERR_INVALID_ARGUMENT))
        XCTAssertEqual(String(cString: lc_last_error_message()),
                       "lc_app_perform: action->struct_size is 4; an action has at least struct_size and kind (8 bytes)")
        // The full struct as before.
        action = lc_action_t()
        action.struct_size = UInt32(MemoryLayout<lc_action_t>.size)
        action.kind = lc_action_kind(LC_ACTION_HOME)
        XCTAssertEqual(lc_app_perform(app, &action), lc_status(LC_OK))
    }
}
