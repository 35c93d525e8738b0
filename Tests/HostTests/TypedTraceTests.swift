@preconcurrency import Glibc
import AppLifecycle
import XCTest

@testable import lifecycle_host

/// The host decides from the trace's typed payloads, never from its words: the exit status of a
/// watchdog kill and the timeline's phases, overruns and background tasks survive rewording every
/// message; and a watchdog report carries its budget's name, length and the time taken.
final class TypedTraceTests: XCTestCase {
    /// Runs the engine on a fresh loop and returns every trace event.
    private func run(_ configure: (inout Configuration) -> Void, handlers: DelegateHandlers,
                     _ script: (Application, MainRunLoop) throws -> Void) throws -> [TraceEvent]
    {
        var configuration = Configuration()
        configure(&configuration)
        let loop = try MainRunLoop()
        let app = Application(configuration: configuration, loop: loop)
        var events: [TraceEvent] = []
        app.traceHandler = { events.append($0) }
        try app.addDelegate(handlers, id: "slow")
        try script(app, loop)
        return events
    }

    /// A launch whose didFinishLaunching takes 120 ms against a 40 ms budget, policy terminate.
    private func killedLaunch() throws -> [TraceEvent] {
        var handlers = DelegateHandlers()
        handlers.didFinishLaunching = { _, _ in
            usleep(120_000)
            return true
        }
        return try run({
            $0.budgets.launch = .milliseconds(40)
            $0.watchdogPolicy = .terminate
        }, handlers: handlers) { app, _ in try app.perform(.launch()) }
    }

    /// Policy report: didEnterBackground overruns its 40 ms budget, then a background task never ends,
    /// so it gets its expiration warning and the watchdog ends it.
    private func overrunsInTheBackground() throws -> [TraceEvent] {
        var handlers = DelegateHandlers()
        handlers.didEnterBackground = { app in
            usleep(80_000)
            _ = try? app.beginBackgroundTask(named: "upload", owner: "uploader")
        }
        return try run({
            $0.watchdogPolicy = .report
            $0.budgets.didEnterBackground = .milliseconds(40)
            $0.budgets.backgroundTask = .milliseconds(300)
            $0.budgets.expirationWarning = .milliseconds(150)
        }, handlers: handlers) { app, loop in
            try app.perform(.launch())
            try app.perform(.home)
            try loop.run(for: .milliseconds(450))
            try app.perform(.terminate)
        }
    }

    /// The same events with every word replaced: other kinds, names, observers and details, some of
    /// them the very words the host once matched, on the wrong events.
    private func garbled(_ events: [TraceEvent]) -> [TraceEvent] {
        events.enumerated().map { index, event in
            TraceEvent(seq: event.seq, time: event.time, payload: event.payload, state: event.state,
                       kind: TraceEvent.Kind(rawValue: "kind-\(index % 3)"),
                       name: index.isMultiple(of: 2) ? "background task #1" : "renamed",
                       observer: nil,
                       detail: index.isMultiple(of: 2) ? "#1 ended by the watchdog" : "gone: 9.000 s of 0.001 s")
        }
    }

    func testWatchdogKillPayloadCarriesBudget() throws {
        let events = try killedLaunch()
        let reports = events.compactMap { event -> WatchdogReport? in
            if case .watchdogOverrun(let report) = event.payload { return report }
            return nil
        }
        let report = try XCTUnwrap(reports.first, "the slow launch overran")
        XCTAssertEqual(reports.count, 1)
        XCTAssertEqual(report.budgetKind, .launch)
        XCTAssertEqual(report.budgetName, "launch")
        XCTAssertEqual(report.budget, .milliseconds(40))
        XCTAssertGreaterThanOrEqual(report.elapsed, .milliseconds(40))
        XCTAssertEqual(report.observer, "slow")
        XCTAssertEqual(report.event, DelegateMethod.didFinishLaunching.selector)
        XCTAssertEqual(report.policy, .terminate)
        XCTAssertEqual(report.subject, .callback)

        let last = try XCTUnwrap(events.last)
        guard case .stateChanged(let from, let to, let reason) = last.payload else {
            return XCTFail("the run ends with a state change, not \(last)")
        }
        XCTAssertEqual(from, .inactive)
        XCTAssertEqual(to, .notRunning)
        XCTAssertEqual(reason, .killedByWatchdog)
        XCTAssertTrue(HostExit.isWatchdogKill(last))
        // The words are rendered from the payload, as the traces have always had them.
        XCTAssertEqual(last.description, "state not-running (killed by the watchdog)")
    }

    func testBackgroundTaskOverrunPayload() throws {
        let events = try overrunsInTheBackground()
        let reports = events.compactMap { event -> WatchdogReport? in
            if case .watchdogOverrun(let report) = event.payload { return report }
            return nil
        }
        XCTAssertEqual(reports.map(\.budgetKind), [.didEnterBackground, .backgroundTask])
        let task = try XCTUnwrap(reports.last)
        guard case .backgroundTask(let id, let name) = task.subject else { return XCTFail("subject \(task.subject)") }
        XCTAssertEqual(name, "upload")
        XCTAssertEqual(task.observer, "uploader")
        XCTAssertEqual(task.budget, .milliseconds(300))
        XCTAssertGreaterThanOrEqual(task.elapsed, .milliseconds(300))
        let phases = events.compactMap { event -> TraceEvent.BackgroundTaskPhase? in
            if case .backgroundTask(id, let phase, _, _) = event.payload { return phase }
            return nil
        }
        XCTAssertEqual(phases, [.began, .expiring, .endedByWatchdog])
    }

    func testExitStatusIgnoresWords() throws {
        let killed = try killedLaunch()
        let survived = try overrunsInTheBackground()
        XCTAssertEqual(killed.filter(HostExit.isWatchdogKill).count, 1)
        XCTAssertEqual(garbled(killed).filter(HostExit.isWatchdogKill).count, 1, "found by its payload, whatever it says")
        XCTAssertEqual(survived.filter(HostExit.isWatchdogKill).count, 0)
        XCTAssertEqual(garbled(survived).filter(HostExit.isWatchdogKill).count, 0)

        // The words of a kill on an event that is no kill: no kill.
        let impostor = TraceEvent(seq: 1, time: .zero, payload: .stateChanged(from: .active, to: .notRunning, reason: .terminated),
                                  state: .notRunning, kind: .state, name: "not-running", observer: nil,
                                  detail: "killed by the watchdog")
        XCTAssertFalse(HostExit.isWatchdogKill(impostor))
    }

    func testTimelineIgnoresWords() throws {
        let events = try overrunsInTheBackground()
        let finish = (events.last?.time.secondsDouble ?? 0) + 0.1
        let plain = TimelineAnalysis(events, finish: finish)
        // What the run holds, so that the comparison below compares something.
        XCTAssertEqual(plain.phases.map(\.name), ["launch", "didEnterBackground"])
        let overrun = try XCTUnwrap(plain.phases.last)
        XCTAssertEqual(try XCTUnwrap(overrun.overrunFrom), overrun.start + 0.040, accuracy: 1e-9)
        XCTAssertEqual(plain.tasks.count, 1)
        let task = try XCTUnwrap(plain.tasks.first)
        XCTAssertEqual(task.label, "#1 upload")
        XCTAssertEqual(task.owner, "uploader")
        XCTAssertTrue(task.ended)
        XCTAssertTrue(task.endedByWatchdog)
        XCTAssertNotNil(task.expiring)

        let reworded = TimelineAnalysis(garbled(events), finish: finish)
        XCTAssertEqual(reworded.intervals, plain.intervals)
        XCTAssertEqual(reworded.phases, plain.phases)
        XCTAssertEqual(reworded.tasks, plain.tasks)
    }
}
