import XCTest
@testable import AppLifecycle

/// Drives one application on a loop bound to the test's thread and records what happened:
/// `trace` is the engine's view (compact event strings, actions left out), `seen` is what delegates
/// and observers actually received, in order.
final class Harness {
    let loop: MainRunLoop
    let app: Application
    var trace: [String] = []
    var seen: [String] = []
    var fullTrace: [TraceEvent] = []
    /// Answers the recording delegates give, by delegate id and method.
    var answers: [String: [DelegateMethod: Bool]] = [:]
    /// Extra behaviour run inside a delegate method, by "id selector".
    var hooks: [String: (Application) -> Void] = [:]
    /// Completion handlers handed to delegates, in order.
    var completions: [FetchCompletionHandler] = []
    /// What the recording scene delegates answer to `stateRestorationActivityForScene:`, by scene id.
    var restoring: [String: UserActivity] = [:]

    init(clock: LoopClock = .monotonic, _ configure: (inout Configuration) -> Void = { _ in }, delegates: [String] = ["a"],
         observe: Bool = true) throws
    {
        var configuration = Configuration()
        configure(&configuration)
        loop = try MainRunLoop(clock: clock)
        app = Application(configuration: configuration, loop: loop)
        app.traceHandler = { [unowned self] event in
            self.fullTrace.append(event)
            if event.kind != .action { self.trace.append(event.description) }
        }
        for id in delegates { try app.addDelegate(recordingDelegate(id), id: id) }
        if observe {
            for name in NotificationName.standard {
                app.center.observe(name, owner: "observer") { [unowned self] note in
                    self.seen.append(note.userInfo.isEmpty ? "note \(note.name)" : "note \(note.name) \(note.userInfo)")
                }
            }
        }
    }

    func recordingDelegate(_ id: String) -> DelegateHandlers {
        var h = DelegateHandlers()
        func log(_ m: DelegateMethod, _ app: Application, _ extra: String = "") {
            seen.append("\(id) \(m.selector)\(extra) state=\(app.state)")
            hooks["\(id) \(m.selector)"]?(app)
        }
        func answer(_ m: DelegateMethod, _ fallback: Bool) -> Bool { answers[id]?[m] ?? fallback }
        h.willFinishLaunching = { app, options in log(.willFinishLaunching, app, " \(options)"); return answer(.willFinishLaunching, true) }
        h.didFinishLaunching = { app, options in log(.didFinishLaunching, app, " \(options)"); return answer(.didFinishLaunching, true) }
        h.didBecomeActive = { log(.didBecomeActive, $0) }
        h.willResignActive = { log(.willResignActive, $0) }
        h.didEnterBackground = { log(.didEnterBackground, $0) }
        h.willEnterForeground = { log(.willEnterForeground, $0) }
        h.willTerminate = { log(.willTerminate, $0) }
        h.didReceiveMemoryWarning = { log(.didReceiveMemoryWarning, $0) }
        h.significantTimeChange = { log(.significantTimeChange, $0) }
        h.protectedDataWillBecomeUnavailable = { log(.protectedDataWillBecomeUnavailable, $0) }
        h.protectedDataDidBecomeAvailable = { log(.protectedDataDidBecomeAvailable, $0) }
        h.openURL = { app, url, source, annotation in
            log(.openURL, app, " \(url) \(source ?? "-") \(annotation?.description ?? "-")")
            return answer(.openURL, true)
        }
        h.performFetch = { [unowned self] app, done in log(.performFetch, app); self.completions.append(done) }
        h.didReceiveRemoteNotificationWithCompletion = { [unowned self] app, payload, done in
            log(.didReceiveRemoteNotificationWithCompletion, app, " \(payload)")
            self.completions.append(done)
        }
        return h
    }

    /// Performs `action` and returns the trace it produced.
    @discardableResult
    func perform(_ action: Action, file: StaticString = #filePath, line: UInt = #line) throws -> [String] {
        let start = trace.count
        try app.perform(action)
        return Array(trace[start...])
    }

    /// Performs `action` and returns what delegates and observers saw during it.
    @discardableResult
    func seenDuring(_ action: Action) throws -> [String] {
        let start = seen.count
        try app.perform(action)
        return Array(seen[start...])
    }

    func launch(_ options: UserInfo = [:]) throws { try perform(.launch(options: options)) }

    /// Runs the loop until `condition` holds or `timeout` passes.
    func runLoop(until condition: () -> Bool, timeout: Duration = .seconds(10)) throws {
        let deadline = MonotonicInstant.now + timeout
        while !condition(), MonotonicInstant.now < deadline {
            try loop.run(until: min(deadline, MonotonicInstant.now + .milliseconds(5)))
        }
    }
}

/// Asserts that `body` throws an `ApplicationError` with `code` and exactly `message`.
func XCTAssertApplicationError(_ body: @autoclosure () throws -> Void, _ code: ApplicationError.Code, _ message: String,
                               file: StaticString = #filePath, line: UInt = #line)
{
    do {
        try body()
        XCTFail("expected \(code): \(message)", file: file, line: line)
    } catch let error as ApplicationError {
        XCTAssertEqual(error.code, code, file: file, line: line)
        XCTAssertEqual(error.message, message, file: file, line: line)
    } catch {
        XCTFail("unexpected error \(error)", file: file, line: line)
    }
}
