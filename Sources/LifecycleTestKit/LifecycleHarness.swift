import CLifecycleABI
import CLifecycleTestKit
import XCTest

/// A test harness for a plugin, in Swift: the C test kit (`include/lifecycle_testkit.h`) under
/// XCTest. One application on the manual clock, your plugin loaded into it, every trace event recorded;
/// a test performs actions, moves the clock, and states in order what must have happened.
///
/// ```swift
/// let harness = try LifecycleHarness()
/// harness.load(pluginPath)
/// harness.perform(.launch)
/// harness.perform(.home)
/// harness.expectNotification("didEnterBackground")
/// harness.advance(by: 30)        // 30 s on the manual clock, no real time
/// harness.expectEvent(kind: "background-task", name: "end", observer: "com.example.mine")
/// harness.expectState(.suspended)
/// ```
///
/// Guarantees:
/// - **Failures are XCTest failures.** Every call is a check; one that fails calls `XCTFail` with the
///   report (what was expected, the events recorded around it with their clock times) at the caller's
///   `file` and `line`, and returns `false`; the test goes on. Nothing throws but `init`.
/// - **Ordered expectations** over the recorded events (a cursor: each expectation finds its event
///   after the previous match, skipping others), matched on the events' typed fields.
/// - **One engine.** The harness drives the engine through the public C ABI, as `liblifecycle.so`'s
///   users do; plugins are loaded in this process, from their `.so`.
/// - **Thread.** A harness belongs to the thread that made it (the application's main thread, the
///   test's); it is not `Sendable`.
public final class LifecycleHarness {
    private let harness: OpaquePointer

    /// Makes the application (on the calling thread) with the trace recorded from the start.
    /// - Throws: `CreationError` when the engine refuses the options (a budget out of range: the
    ///   message names the field, as the C kit reports it).
    public init(_ options: Options = Options(), file: StaticString = #filePath, line: UInt = #line) throws(CreationError) {
        var config = lc_config_t()
        lc_config_init(&config)
        options.apply(to: &config)
        var made: OpaquePointer?
        let status = withUnsafePointer(to: &config) { config in
            var kit = lct_options_t(struct_size: UInt32(MemoryLayout<lct_options_t>.size), real_clock: options.realClock ? 1 : 0,
                                    config: config, quiet: 1)
            return "\(file)".withCString { lct_harness_create_at(&kit, &made, $0, Int32(clamping: line)) }
        }
        guard status == LC_OK, let made else {
            // "FILE:LINE: lct_harness_create: WHY\n": the thrown error carries WHY.
            var message = String(cString: lct_create_failure())
            if let colon = message.range(of: "lct_harness_create: ") { message = String(message[colon.upperBound...]) }
            if message.hasSuffix("\n") { message.removeLast() }
            throw CreationError(status: status, message: message)
        }
        harness = made
    }

    deinit { lct_harness_destroy(harness) }

    /// The application (`lc_app *`), for any `lc_app_*` call the harness does not wrap; its events are
    /// recorded like the others'. Owned by the harness.
    public var app: OpaquePointer { lct_app(harness) }

    /// The checks counted so far, and how many failed.
    public var checks: Int { lct_checks(harness) }
    public var failures: Int { lct_failures(harness) }

    /// The events recorded so far, in order, their times on the clock.
    public var events: [Event] {
        (0..<lct_event_count(harness)).compactMap { lct_event_at(harness, $0).map { Event($0.pointee) } }
    }

    /// Loads the plugin at `path` (made absolute against the working directory) into this process, or
    /// with `isolated`, into a process of its own (the plugin runner: `$LC_PLUGIN_RUNNER`, or
    /// `lifecycle-plugin-runner` beside the test bundle, which `swift build --product
    /// lifecycle-plugin-runner` makes).
    @discardableResult
    public func load(_ path: String, isolated: Bool = false, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { isolated ? lct_load_isolated_at(harness, path, $0, $1) == LC_OK : lct_load_at(harness, path, $0, $1) == LC_OK }
    }

    /// Records each delivery of the notification `name` as an event of kind `posted` (detail: the
    /// userInfo's JSON): a plugin's own posts are not in the trace, so a test observes their name first.
    @discardableResult
    public func observe(_ name: String, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { lct_observe_at(harness, name, $0, $1) == LC_OK }
    }

    /// Performs an action; then runs the work already due (posts, zero-delay timers).
    @discardableResult
    public func perform(_ action: Action, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { lct_perform_at(harness, action.kind, $0, $1) == LC_OK }
    }

    /// Performs an action with its arguments (`lc_action_t`: a URL, a payload, a scene…).
    @discardableResult
    public func perform(_ action: lc_action_t, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        var action = action
        return check(file, line) { lct_perform_action_at(harness, &action, $0, $1) == LC_OK }
    }

    /// Moves the clock forward by `seconds` (finite, ≥ 0): every timer, budget and deadline that falls
    /// due runs, in deadline order, at its own deadline. With `Options.realClock`, runs the loop that long.
    @discardableResult
    public func advance(by seconds: Double, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { lct_advance_at(harness, seconds, $0, $1) == LC_OK }
    }

    /// The next call of a delegate method: its selector (`"applicationDidEnterBackground:"`) or the
    /// name of its C function (`"applicationDidEnterBackground"`).
    @discardableResult
    public func expectDelegate(_ selector: String, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { lct_expect_delegate_at(harness, selector, $0, $1) }
    }

    /// The next delivery of the notification `name` (`"didEnterBackground"`, a UIKit alias, or a
    /// custom dotted name).
    @discardableResult
    public func expectNotification(_ name: String, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { lct_expect_notification_named_at(harness, name, $0, $1) }
    }

    /// The next change of the application's state to `state`.
    @discardableResult
    public func expectState(_ state: AppState, file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { lct_expect_state_at(harness, state.rawValue, $0, $1) }
    }

    /// The next event of `kind` (`"background-task"`, `"completion"`, `"watchdog"`…) named `name`, of
    /// `observer` (a delegate or plugin id); nil: any.
    @discardableResult
    public func expectEvent(kind: String, name: String? = nil, observer: String? = nil, file: StaticString = #filePath,
                            line: UInt = #line) -> Bool
    {
        check(file, line) { lct_expect_event_at(harness, kind, name, observer, $0, $1) }
    }

    /// No event after the last match but actions (the test's own inputs).
    @discardableResult
    public func expectNothingMore(file: StaticString = #filePath, line: UInt = #line) -> Bool {
        check(file, line) { lct_expect_nothing_more_at(harness, $0, $1) }
    }

    /// Runs one C check with the caller's file and line; reports its failure to XCTest there.
    private func check(_ file: StaticString, _ line: UInt, _ call: (UnsafePointer<CChar>, Int32) -> Bool) -> Bool {
        let before = lct_failures(harness)
        let passed = "\(file)".withCString { call($0, Int32(clamping: line)) }
        if lct_failures(harness) > before {
            // The report starts with "FILE:LINE: ", which XCTest shows already.
            var report = String(cString: lct_last_failure(harness))
            let prefix = "\(file):\(line): "
            if report.hasPrefix(prefix) { report.removeFirst(prefix.count) }
            XCTFail(report, file: file, line: line)
            return false
        }
        return passed
    }
}
