@preconcurrency import Glibc
import AppLifecycle
import CLifecycleSystem
import XCTest

@testable import lifecycle_host

/// OS events → host commands. Signals go to the loop thread itself with `pthread_kill` (a signal sent to
/// the process could land on one of XCTest's threads, which do not block it, and take its default action).
final class OSEventTests: XCTestCase {
    /// What the sources asked the host to do, and a stand-in for the application's state.
    private final class Host {
        var state: ApplicationState = .active
        var performed: [String] = []
        var logs: [String] = []
        var stops = 0
        /// Run inside `perform`, after recording: what the engine would do (change the state, …).
        var onPerform: ((HostCommand) -> Void)?
    }

    private var loop: MainRunLoop!
    private var host: Host!
    private var sources: OSEventSources!

    override func setUp() {
        super.setUp()
        host = Host()
    }

    override func tearDown() {
        // Consume what a failing test left pending (a signal would otherwise reach the next test's
        // signalfd), then remove everything.
        loop?.dispatchPending()
        sources?.stop()
        sources = nil
        loop = nil
        super.tearDown()
    }

    /// Makes the loop and the sources (not started), everything recorded in `host`.
    private func makeSources(signals: Bool = false, pressure: Bool = false, clock: Bool = false,
                             configure: (inout OSEventSources.Options) -> Void = { _ in }) throws -> OSEventSources
    {
        let loop = try MainRunLoop()
        self.loop = loop
        var options = OSEventSources.Options()
        options.signals = signals
        options.pressure = pressure
        options.clock = clock
        configure(&options)
        let host = host!
        let sources = OSEventSources(
            loop: loop, options: options,
            perform: { command, origin in
                host.performed.append("\(command) <- \(origin)")
                host.onPerform?(command)
            },
            state: { host.state },
            log: { host.logs.append($0) }
        )
        sources.stopProcess = { host.stops += 1 }
        self.sources = sources
        return sources
    }

    /// Sends `signo` to the calling (loop) thread, where `start()` blocked it: it waits for the signalfd.
    private func raiseOnLoopThread(_ signo: Int32) {
        XCTAssertEqual(pthread_kill(pthread_self(), signo), 0)
    }

    // MARK: Signals

    func testSIGUSR1PerformsMemoryWarning() throws {
        try makeSources(signals: true).start()
        raiseOnLoopThread(SIGUSR1)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["memory-warning warning <- signal SIGUSR1"])
    }

    func testSIGTERMAndSIGINTPerformTerminate() throws {
        try makeSources(signals: true).start()
        raiseOnLoopThread(SIGTERM)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["terminate <- signal SIGTERM"])
        raiseOnLoopThread(SIGINT)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["terminate <- signal SIGTERM", "terminate <- signal SIGINT"])
    }

    func testSIGTSTPWhileActiveSendsHomeAndStopsOnlyOnceSuspended() throws {
        let sources = try makeSources(signals: true)
        try sources.start()
        let host = host!
        host.onPerform = { command in
            if case .action(let action) = command, action.name == "home" { host.state = .background }
        }
        raiseOnLoopThread(SIGTSTP)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["home <- signal SIGTSTP"])
        XCTAssertEqual(host.stops, 0, "the process must not stop while the app still runs in the background")
        loop.dispatchPending()
        sources.applicationStateChanged(to: .background)
        loop.dispatchPending()
        XCTAssertEqual(host.stops, 0)

        host.state = .suspended
        sources.applicationStateChanged(to: .suspended)
        XCTAssertEqual(host.stops, 0, "the stop waits for the next loop turn (the transition's output first)")
        loop.dispatchPending()
        XCTAssertEqual(host.stops, 1)
        // Once only: later state changes and turns do not stop it again.
        sources.applicationStateChanged(to: .suspended)
        loop.dispatchPending()
        XCTAssertEqual(host.stops, 1)
        XCTAssertEqual(host.performed, ["home <- signal SIGTSTP"])
    }

    func testSIGTSTPWhenHomeSuspendsAtOnceStopsExactlyOnce() throws {
        let sources = try makeSources(signals: true)
        try sources.start()
        // An app without background work: the engine suspends it inside `home`.
        let host = host!
        host.onPerform = { command in
            guard case .action(let action) = command, action.name == "home" else { return }
            host.state = .background
            sources.applicationStateChanged(to: .background)
            host.state = .suspended
            sources.applicationStateChanged(to: .suspended)
        }
        raiseOnLoopThread(SIGTSTP)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["home <- signal SIGTSTP"])
        XCTAssertEqual(host.stops, 1)
        loop.dispatchPending()
        loop.dispatchPending()
        XCTAssertEqual(host.stops, 1)
    }

    func testSIGTSTPWhileSuspendedStopsAtOnceWithoutHome() throws {
        try makeSources(signals: true).start()
        host.state = .suspended
        raiseOnLoopThread(SIGTSTP)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, [])
        XCTAssertEqual(host.stops, 1)
    }

    func testSIGTSTPWhileInBackgroundWaitsForSuspensionWithoutHome() throws {
        let sources = try makeSources(signals: true)
        try sources.start()
        host.state = .background
        raiseOnLoopThread(SIGTSTP)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, [])
        XCTAssertEqual(host.stops, 0)
        host.state = .suspended
        sources.applicationStateChanged(to: .suspended)
        loop.dispatchPending()
        XCTAssertEqual(host.stops, 1)
    }

    func testSIGCONTWhileSuspendedForegroundsOnALaterTurnAfterThisTurnsReaders() throws {
        try makeSources(signals: true).start()
        host.state = .suspended
        // Something that arrived while the process was stopped (as a clock step would): a readable fd.
        let eventFD = lcs_eventfd()
        XCTAssertGreaterThanOrEqual(eventFD, 0)
        defer { close(eventFD) }
        let host = host!
        let reader = try loop.addReader(fd: eventFD) {
            _ = lcs_eventfd_drain(eventFD)
            host.performed.append("reader")
        }
        defer { reader.cancel() }
        XCTAssertEqual(lcs_eventfd_signal(eventFD), 0)
        raiseOnLoopThread(SIGCONT)

        loop.dispatchPending()  // signal, then the reader
        XCTAssertEqual(host.performed, ["reader"], "foreground must not run in the turn that read SIGCONT")
        loop.dispatchPending()  // posted work
        XCTAssertEqual(host.performed, ["reader", "foreground <- signal SIGCONT"])
    }

    func testSIGCONTWhileActiveDoesNothing() throws {
        try makeSources(signals: true).start()
        for state in [ApplicationState.active, .inactive] {
            host.state = state
            raiseOnLoopThread(SIGCONT)
            loop.dispatchPending()
            loop.dispatchPending()
        }
        XCTAssertEqual(host.performed, [])
    }

    func testSIGCONTCancelsAPendingStop() throws {
        let sources = try makeSources(signals: true)
        try sources.start()
        host.state = .background
        raiseOnLoopThread(SIGTSTP)
        loop.dispatchPending()
        raiseOnLoopThread(SIGCONT)
        loop.dispatchPending()
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["foreground <- signal SIGCONT"])
        host.state = .suspended
        sources.applicationStateChanged(to: .suspended)
        loop.dispatchPending()
        XCTAssertEqual(host.stops, 0)
    }

    func testStoppedSourcesIgnoreSignals() throws {
        let sources = try makeSources(signals: true)
        try sources.start()
        sources.stop()
        raiseOnLoopThread(SIGUSR1)  // stays pending, blocked: harmless
        loop.dispatchPending()
        XCTAssertEqual(host.performed, [])
        // Consume it so that it cannot reach a later test's signalfd.
        try sources.start()
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["memory-warning warning <- signal SIGUSR1"])
    }

    func testStartOffTheLoopThreadThrowsNotOnLoopThread() throws {
        let sources = try makeSources(signals: true)
        let code = Mutexed<ApplicationError.Code?>(nil)
        Thread {
            do throws(ApplicationError) { try sources.start() } catch { code.value = error.code }
        }.start()
        for _ in 0..<500 where code.value == nil { usleep(10_000) }
        XCTAssertEqual(code.value, .notOnLoopThread)
    }

    // MARK: PSI

    func testPSITriggersArmOnARealPressureFile() throws {
        let file = "/proc/pressure/cpu"
        guard access(file, R_OK | W_OK) == 0 else { throw XCTSkip("\(file) is not available here") }
        let sources = try makeSources(pressure: true) { $0.pressureFile = file }
        try sources.start()
        XCTAssertEqual(host.logs, [])
        XCTAssertEqual(sources.pressure.triggers.map(\.level), [.warning, .critical])
        XCTAssertEqual(sources.pressure.triggers.map(\.window), [2_000_000_000, 2_000_000_000])
        XCTAssertTrue(sources.pressure.triggers.allSatisfy { $0.isWatching && $0.priority })
        // Registered with this loop: epoll refuses the same descriptor twice.
        for trigger in sources.pressure.triggers {
            XCTAssertThrowsError(try loop.addReader(fd: trigger.fd, priority: true) {})
        }
        sources.stop()
        XCTAssertEqual(sources.pressure.triggers.count, 0)
    }

    func testDefaultPressureFileExistsOrIsProcPressure() {
        let file = OSEventSources.Options.defaultPressureFile
        XCTAssertTrue(file == "/proc/pressure/memory" || (file.hasPrefix("/sys/fs/cgroup/") && access(file, F_OK) == 0), file)
    }

    func testPSIFileThatCannotBeOpenedIsLoggedNotFatal() throws {
        let sources = try makeSources(pressure: true) { $0.pressureFile = "/nonexistent/memory.pressure" }
        try sources.start()
        XCTAssertEqual(sources.pressure.triggers.count, 0)
        XCTAssertEqual(host.logs.count, 2)
        XCTAssertTrue(host.logs.allSatisfy { $0.contains("/nonexistent/memory.pressure") && $0.contains("errno 2") }, "\(host.logs)")
    }

    func testRefusedAndMalformedPSITriggersAreLoggedNotFatal() throws {
        let file = "/proc/pressure/cpu"
        guard access(file, R_OK | W_OK) == 0 else { throw XCTSkip("\(file) is not available here") }
        let sources = try makeSources(pressure: true) {
            $0.pressureFile = file
            $0.warningTrigger = "bogus 150000 2000000"  // well-shaped; the kernel says EINVAL
            $0.criticalTrigger = "full 150000"  // not even shaped
        }
        try sources.start()
        XCTAssertEqual(sources.pressure.triggers.count, 0)
        XCTAssertEqual(host.logs.count, 2, "\(host.logs)")
        XCTAssertTrue(host.logs[0].hasPrefix("psi warning:") && host.logs[0].contains("errno \(EINVAL)"), host.logs[0])
        XCTAssertTrue(host.logs[1].hasPrefix("psi critical:") && host.logs[1].contains("not 'some|full"), host.logs[1])
    }

    func testTriggerWindowParsing() {
        XCTAssertEqual(PressureSource.window(ofTrigger: "some 150000 2000000"), 2_000_000_000)
        XCTAssertEqual(PressureSource.window(ofTrigger: "full  70000\t4000000"), 4_000_000_000)
        XCTAssertNil(PressureSource.window(ofTrigger: "some 150000"))
        XCTAssertNil(PressureSource.window(ofTrigger: "some x 2000000"))
        XCTAssertNil(PressureSource.window(ofTrigger: "some 150000 0"))
    }

    func testPSIEventsAreRateLimitedToOnePerWindowAndCannotSpin() throws {
        let sources = try makeSources()
        try sources.start()
        let eventFD = lcs_eventfd()  // non-blocking; stands in for a PSI descriptor
        XCTAssertGreaterThanOrEqual(eventFD, 0)
        let window: UInt64 = 300_000_000
        try sources.pressure.watch(fd: eventFD, level: .critical, window: window, priority: false, ownsFD: true)
        let trigger = try XCTUnwrap(sources.pressure.triggers.first)

        XCTAssertEqual(lcs_eventfd_signal(eventFD), 0)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["memory-warning critical <- psi critical"])
        XCTAssertFalse(trigger.isWatching, "paused for the window")

        // A second event within the window: no warning, and the descriptor, readable, is not polled.
        XCTAssertEqual(lcs_eventfd_signal(eventFD), 0)
        for _ in 0..<100 { XCTAssertEqual(loop.dispatchPending(), 0) }
        XCTAssertEqual(host.performed.count, 1)

        // After the window the held event is reported once.
        try loop.run(for: .milliseconds(Int64(window / 1_000_000) + 100))
        XCTAssertEqual(host.performed, ["memory-warning critical <- psi critical", "memory-warning critical <- psi critical"])
        let gap = try XCTUnwrap(trigger.lastWarning)
        // Nothing new: nothing more, and watching again after the second window.
        try loop.run(for: .milliseconds(Int64(window / 1_000_000) + 100))
        XCTAssertEqual(host.performed.count, 2)
        XCTAssertTrue(trigger.isWatching)
        XCTAssertEqual(trigger.lastWarning, gap)
    }

    func testPSILevelsAreRateLimitedIndependently() throws {
        let sources = try makeSources()
        try sources.start()
        let warningFD = lcs_eventfd(), criticalFD = lcs_eventfd()
        try sources.pressure.watch(fd: warningFD, level: .warning, window: 10_000_000_000, priority: false, ownsFD: true)
        try sources.pressure.watch(fd: criticalFD, level: .critical, window: 10_000_000_000, priority: false, ownsFD: true)
        XCTAssertEqual(lcs_eventfd_signal(warningFD), 0)
        loop.dispatchPending()
        XCTAssertEqual(lcs_eventfd_signal(criticalFD), 0)
        XCTAssertEqual(lcs_eventfd_signal(warningFD), 0)
        loop.dispatchPending()
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["memory-warning warning <- psi warning", "memory-warning critical <- psi critical"])
    }

    // MARK: Clock

    func testClockTimerfdArmsRealtimeWithCancelOnSet() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        XCTAssertEqual(host.logs, [])
        let fd = sources.clock.fd
        XCTAssertGreaterThanOrEqual(fd, 0)
        XCTAssertEqual(sources.clock.armCount, 1)
        // The kernel's view: clock 0 (CLOCK_REALTIME), flags 3 (TFD_TIMER_ABSTIME | TFD_TIMER_CANCEL_ON_SET).
        let info = try String(contentsOfFile: "/proc/self/fdinfo/\(fd)", encoding: .utf8)
        XCTAssertTrue(info.contains("clockid: \(CLOCK_REALTIME)"), info)
        XCTAssertTrue(info.contains("settime flags: 03"), info)
        // Armed, and not for soon (years ahead).
        let value = try XCTUnwrap(info.split(separator: "\n").first { $0.hasPrefix("it_value:") })
        let seconds = value.split(whereSeparator: { "(,) ".contains($0) }).dropFirst().first.flatMap { Int64($0) }
        XCTAssertGreaterThan(try XCTUnwrap(seconds), 100 * 365 * 86_400, String(value))
        // Nothing to read now: a real read does nothing.
        loop.dispatchPending()
        XCTAssertEqual(host.performed, [])
        sources.stop()
        XCTAssertEqual(sources.clock.fd, -1)
        XCTAssertEqual(fcntl(fd, F_GETFD), -1, "closed")
    }

    func testCanceledClockReadPerformsTimeChangeOnceAndRearms() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        sources.handleClockRead(result: -1, errno: ECANCELED)
        XCTAssertEqual(host.performed, ["time-change <- clock"])
        XCTAssertEqual(sources.clock.armCount, 2)
        XCTAssertGreaterThanOrEqual(sources.clock.fd, 0)
        loop.dispatchPending()
        XCTAssertEqual(host.performed.count, 1)
    }

    func testNothingToReadOnTheClockDoesNothing() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        sources.handleClockRead(result: -1, errno: EAGAIN)
        sources.handleClockRead(result: 0, errno: EAGAIN)
        XCTAssertEqual(host.performed, [])
        XCTAssertEqual(sources.clock.armCount, 1)
        XCTAssertEqual(host.logs, [])
    }

    func testFailingClockReadIsLoggedAndTurnsDetectionOff() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        sources.handleClockRead(result: -1, errno: EBADF)
        XCTAssertEqual(host.performed, [])
        XCTAssertEqual(sources.clock.fd, -1)
        XCTAssertEqual(host.logs.count, 1)
        XCTAssertTrue(host.logs[0].hasPrefix("clock:") && host.logs[0].contains("errno \(EBADF)"), host.logs[0])
        sources.handleClockRead(result: -1, errno: ECANCELED)
        XCTAssertEqual(host.performed, [])
    }

    func testEverythingTogetherStartsAndStops() throws {
        let sources = try makeSources(signals: true, pressure: true, clock: true) { $0.pressureFile = "/proc/pressure/memory" }
        try sources.start()
        try sources.start()  // idempotent
        XCTAssertGreaterThanOrEqual(sources.clock.fd, 0)
        if access("/proc/pressure/memory", W_OK) == 0 {
            XCTAssertEqual(host.logs, [])
            XCTAssertEqual(sources.pressure.triggers.count, 2)
        }
        sources.stop()
        sources.stop()
        XCTAssertEqual(sources.clock.fd, -1)
        XCTAssertEqual(sources.pressure.triggers.count, 0)
    }
}

/// A value shared between a test and one thread it starts.
private final class Mutexed<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: Value
    init(_ value: Value) { stored = value }
    var value: Value {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
