@preconcurrency import Glibc
import AppLifecycle
import HostInput
import CLifecycleSystem
import LifecycleOSEvents
import XCTest

@testable import lifecycle_host

/// OS events → host commands, and Ctrl-Z job control: the host's policy over the `LifecycleOSEvents`
/// sources (whose own tests are in LifecycleOSEventsTests). Real signals go to the loop thread itself with `pthread_kill` (a signal sent to
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
    private var sources: HostOSEvents!

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
                             configure: (inout HostOSEvents.Options) -> Void = { _ in }) throws -> HostOSEvents
    {
        let loop = try MainRunLoop()
        self.loop = loop
        var options = HostOSEvents.Options()
        options.signals = signals
        options.pressure = pressure
        options.clock = clock
        configure(&options)
        let host = host!
        let sources = HostOSEvents(
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
        let code = Mutexed<OSEventError.Code?>(nil)
        Thread {
            do throws(OSEventError) { try sources.start() } catch { code.value = error.code }
        }.start()
        for _ in 0..<500 where code.value == nil { usleep(10_000) }
        XCTAssertEqual(code.value, .notOnLoopThread)
    }

    // MARK: Events → commands

    func testPressureAndClockEventsMapToCommands() throws {
        let sources = try makeSources()
        try sources.start()
        sources.handle(.memoryPressure(level: .warning, source: "/proc/pressure/memory", trigger: "some 150000 2000000"))
        sources.handle(.memoryPressure(level: .critical, source: "/proc/pressure/memory", trigger: "full 150000 2000000"))
        sources.handle(.clockChanged)
        XCTAssertEqual(host.performed, [
            "memory-warning warning <- psi warning", "memory-warning critical <- psi critical", "time-change <- clock",
        ])
    }

    func testUnmappedSignalDoesNothing() throws {
        let sources = try makeSources()
        try sources.start()
        sources.handle(.signal(SIGUSR2, senderPID: getpid()))
        XCTAssertEqual(host.performed, [])
    }

    /// The host's options reach the library: the five signals, the triggers, the delay.
    func testHostOptionsBecomeLibraryOptions() {
        var options = HostOSEvents.Options()
        XCTAssertEqual(options.library.signals, [SIGTSTP, SIGCONT, SIGTERM, SIGINT, SIGUSR1])
        XCTAssertNil(options.library.pressureFile)
        XCTAssertEqual(options.library.warningTrigger, "some 150000 2000000")
        XCTAssertEqual(options.library.criticalTrigger, "full 150000 2000000")
        XCTAssertGreaterThan(options.library.pressureDelay, .zero, "the default run does not open PSI triggers at once")
        options.signals = false
        options.pressureFile = "/proc/pressure/cpu"
        XCTAssertEqual(options.library.signals, [])
        XCTAssertEqual(options.library.pressureFile, "/proc/pressure/cpu")
    }

    /// Everything on, as `lifecycle-host run` has it by default, with PSI armed at once: a real PSI
    /// trigger, the real clock timerfd, real signals.
    func testEverythingTogetherStartsAndStops() throws {
        let sources = try makeSources(signals: true, pressure: true, clock: true) {
            $0.pressureFile = "/proc/pressure/memory"
            $0.pressureDelay = .zero
        }
        try sources.start()
        try sources.start()  // idempotent
        XCTAssertGreaterThanOrEqual(sources.sources.clock.fd, 0)
        if access("/proc/pressure/memory", W_OK) == 0 {
            XCTAssertEqual(host.logs, [])
            XCTAssertEqual(sources.sources.pressure.triggers.count, 2)
        }
        raiseOnLoopThread(SIGUSR1)
        loop.dispatchPending()
        XCTAssertEqual(host.performed, ["memory-warning warning <- signal SIGUSR1"])
        sources.stop()
        sources.stop()
        XCTAssertEqual(sources.sources.clock.fd, -1)
        XCTAssertEqual(sources.sources.pressure.triggers.count, 0)
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
