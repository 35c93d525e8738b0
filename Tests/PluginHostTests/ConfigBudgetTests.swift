import AppLifecycle
import CLifecycle
import CLifecycleABI
import Foundation
import TestSupport
import XCTest
@testable import LifecycleC
@testable import PluginHost

/// `lc_config_t` budgets are range-checked before they become durations: what a nanosecond count
/// cannot hold is refused with the field and the limit, never trapped on.
final class ConfigBudgetTests: XCTestCase {
    func testBudgetsANanosecondCountCannotHoldAreRefusedByName() throws {
        let limit = "a budget is 0 (the default) or a number of seconds above 0 and at most 9223372036"
        let cases: [(WritableKeyPath<lc_config_t, Double>, String, Double, String)] = [
            (\.launch_budget, "launch_budget", 1e10, "10000000000.0"),
            (\.did_enter_background_budget, "did_enter_background_budget", -1, "-1.0"),
            (\.will_terminate_budget, "will_terminate_budget", .nan, "nan"),
            (\.completion_handler_budget, "completion_handler_budget", .infinity, "inf"),
            (\.background_task_budget, "background_task_budget", -.infinity, "-inf"),
            (\.expiration_warning, "expiration_warning", 9_223_372_037, "9223372037.0"),
        ]
        for (field, name, value, shown) in cases {
            var config = lc_config_t()
            lc_config_init(&config)
            config[keyPath: field] = value
            var app: OpaquePointer?
            XCTAssertEqual(lc_app_create(&config, &app), lc_status(LC_ERR_INVALID_ARGUMENT), name)
            XCTAssertNil(app)
            XCTAssertEqual(String(cString: lc_last_error_message()), "config->\(name) is \(shown); \(limit)")
        }
        // The limit itself, and 0 (the default), are accepted.
        var config = lc_config_t()
        lc_config_init(&config)
        config.launch_budget = 9_223_372_036
        config.will_terminate_budget = 0
        let configuration = try LifecycleC.configuration(from: &config)
        XCTAssertEqual(configuration.budgets.launch, .seconds(9_223_372_036))
        XCTAssertEqual(configuration.budgets.willTerminate, Configuration().budgets.willTerminate)
        let handle = try AppHandle(configuration: configuration)
        defer { handle.shutdown() }
        XCTAssertEqual(try handle.loadPlugin(path: CBuild.products + "/libEcho.so").id, "org.applifecycle.echo")
    }
}
