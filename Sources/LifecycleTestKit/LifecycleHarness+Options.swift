import CLifecycleABI
import Foundation

extension LifecycleHarness {
    /// How the harness makes its application. Every budget is in seconds; nil keeps the engine's
    /// default (launch, didEnterBackground, willTerminate 5; completion handlers 30; background time
    /// 30; expiration warning 5; hang 5).
    public struct Options: Sendable {
        /// false (the default): the manual clock, moved only by `advance(by:)`; true: the monotonic
        /// clock (`advance(by:)` runs the loop in real time).
        public var realClock = false
        /// `lc_config_t.background_modes`: `LC_BACKGROUND_*` bits (`LC_BACKGROUND_FETCH` for fetches).
        public var backgroundModes: UInt32 = 0
        /// true: an overrun is reported and the application goes on (`LC_WATCHDOG_REPORT`); false (the
        /// default): it is killed, as on iOS.
        public var watchdogReportsOnly = false
        public var launchBudget: Double?
        public var didEnterBackgroundBudget: Double?
        public var willTerminateBudget: Double?
        public var completionHandlerBudget: Double?
        public var backgroundTimeBudget: Double?
        public var expirationWarning: Double?
        public var hangBudget: Double?

        public init() {}

        func apply(to config: inout lc_config_t) {
            config.background_modes = backgroundModes
            if watchdogReportsOnly { config.watchdog_policy = lc_watchdog_policy(LC_WATCHDOG_REPORT) }
            if let launchBudget { config.launch_budget = launchBudget }
            if let didEnterBackgroundBudget { config.did_enter_background_budget = didEnterBackgroundBudget }
            if let willTerminateBudget { config.will_terminate_budget = willTerminateBudget }
            if let completionHandlerBudget { config.completion_handler_budget = completionHandlerBudget }
            if let backgroundTimeBudget { config.background_task_budget = backgroundTimeBudget }
            if let expirationWarning { config.expiration_warning = expirationWarning }
            if let hangBudget { config.hang_budget = hangBudget }
        }
    }

    /// The harness could not be made: the engine refused its options.
    public struct CreationError: Error, CustomStringConvertible {
        /// The `lc_status` (negative).
        public let status: Int32
        /// The engine's sentence (`lc_last_error_message()`), naming the field.
        public let message: String
        public var description: String { message }
    }
}

extension LifecycleHarness {
    /// The path of `lib<name>.so`, the dynamic library product `name` of the package under test, in the
    /// folder SwiftPM builds it to: the folder of the running test bundle (`.build/debug`). `swift build`
    /// (and `swift test`, which builds first) makes it there. Read from `/proc/self/exe`.
    public static func builtPlugin(_ name: String) -> String {
        var folder = URL(fileURLWithPath: (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
            ?? CommandLine.arguments[0]).deletingLastPathComponent()
        while folder.path.contains(".xctest") { folder.deleteLastPathComponent() }
        return folder.appendingPathComponent("lib\(name).so").path
    }
}
