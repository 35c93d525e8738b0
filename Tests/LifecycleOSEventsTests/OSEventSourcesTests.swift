@preconcurrency import Glibc
import CLifecycleSystem
import Foundation
import TestSupport
import XCTest

@testable import LifecycleOSEvents

/// The sources on a real loop: real signals (sent to the loop thread itself with `pthread_kill`: a
/// signal sent to the process could land on one of XCTest's threads, which do not block it), a real
/// `CLOCK_REALTIME` timerfd, real PSI triggers on `/proc/pressure/cpu`.
final class OSEventSourcesTests: XCTestCase {
    private var loop: MainRunLoop!
    private var sources: OSEventSources!
    private var events: [OSEvent] = []
    private var problems: [OSEventError] = []

    override func tearDown() {
        // Consume what a failing test left pending (a signal would otherwise reach the next test's
        // signalfd), then remove everything.
        loop?.dispatchPending()
        sources?.stop()
        sources = nil
        loop = nil
        events = []
        problems = []
        super.tearDown()
    }

    /// Makes the loop and the sources (not started); events and problems are recorded.
    private func makeSources(signals: [Int32] = [], pressure: Bool = false, clock: Bool = false,
                             configure: (inout OSEventSources.Options) -> Void = { _ in }) throws -> OSEventSources
    {
        let loop = try MainRunLoop()
        self.loop = loop
        var options = OSEventSources.Options()
        options.signals = signals
        options.pressure = pressure
        options.clock = clock
        configure(&options)
        let sources = OSEventSources(loop: loop, options: options, problem: { [unowned self] in problems.append($0) }) {
            [unowned self] event in
            XCTAssertTrue(loop.isOnLoopThread)
            events.append(event)
        }
        self.sources = sources
        return sources
    }

    private var messages: [String] { problems.map(\.message) }

    private func raiseOnLoopThread(_ signo: Int32) {
        XCTAssertEqual(pthread_kill(pthread_self(), signo), 0)
    }

    // MARK: The event type

    func testEventsCompareAndDescribe() {
        XCTAssertEqual(OSEvent.signal(SIGTERM, senderPID: 7), .signal(SIGTERM, senderPID: 7))
        XCTAssertNotEqual(OSEvent.signal(SIGTERM, senderPID: 7), .signal(SIGINT, senderPID: 7))
        XCTAssertEqual(OSEvent.signal(SIGTERM).kind, .signal)
        XCTAssertEqual(OSEvent.clockChanged.kind, .clockChanged)
        XCTAssertNil(OSEvent.clockChanged.signalNumber)
        let pressure = OSEvent.memoryPressure(level: .critical, source: "/proc/pressure/memory", trigger: "full 1 2000000")
        XCTAssertEqual(pressure.kind, .memoryPressure)
        XCTAssertEqual(pressure.memoryPressure?.level, .critical)
        XCTAssertEqual(OSEvent.signal(SIGTSTP, senderPID: 0).description, "signal SIGTSTP from pid 0")
        XCTAssertEqual(pressure.description, "memory pressure critical (/proc/pressure/memory: full 1 2000000)")
        XCTAssertEqual(OSEvent.clockChanged.description, "clock changed")
        XCTAssertEqual(OSEvent.signalName(SIGUSR1), "SIGUSR1")
        XCTAssertEqual(OSEvent.signalName(36), "SIGRTMIN+2")
        XCTAssertEqual(OSEvent.signalName(99), "signal 99")
    }

    // MARK: Signals

    func testSignalsArriveTypedWithTheSender() throws {
        try makeSources(signals: [SIGUSR1, SIGTERM, SIGINT]).start()
        raiseOnLoopThread(SIGUSR1)
        loop.dispatchPending()
        XCTAssertEqual(events, [.signal(SIGUSR1, senderPID: getpid())])
        raiseOnLoopThread(SIGTERM)
        raiseOnLoopThread(SIGINT)
        loop.dispatchPending()
        // Pending together: the signalfd gives the lower number first.
        XCTAssertEqual(events.dropFirst().compactMap(\.signalNumber).sorted(), [SIGINT, SIGTERM].sorted())
        XCTAssertTrue(problems.isEmpty)
    }

    func testSignalEventsComeBeforeDescriptorsOfTheSameTurn() throws {
        try makeSources(signals: [SIGUSR2]).start()
        let eventFD = lcs_eventfd()
        defer { close(eventFD) }
        var order: [String] = []
        let reader = try loop.addReader(fd: eventFD) { [unowned self] in
            _ = lcs_eventfd_drain(eventFD)
            order.append("reader, after \(events.count) event(s)")
        }
        defer { reader.cancel() }
        XCTAssertEqual(lcs_eventfd_signal(eventFD), 0)
        raiseOnLoopThread(SIGUSR2)
        loop.dispatchPending()
        XCTAssertEqual(order, ["reader, after 1 event(s)"])
    }

    func testStoppedSourcesIgnoreSignalsAndStartAgain() throws {
        let sources = try makeSources(signals: [SIGUSR1])
        try sources.start()
        XCTAssertTrue(sources.signals.isWatching)
        sources.stop()
        XCTAssertFalse(sources.signals.isWatching)
        raiseOnLoopThread(SIGUSR1)  // stays pending, blocked: harmless
        loop.dispatchPending()
        XCTAssertEqual(events, [])
        try sources.start()
        loop.dispatchPending()
        XCTAssertEqual(events, [.signal(SIGUSR1, senderPID: getpid())])
    }

    func testUncatchableSignalThrowsAndLeavesNothingInstalled() throws {
        let sources = try makeSources(signals: [SIGUSR1, SIGKILL], clock: true)
        XCTAssertThrowsError(try sources.start()) { error in
            XCTAssertEqual((error as? OSEventError)?.code, .invalidArgument)
        }
        XCTAssertFalse(sources.signals.isWatching)
        XCTAssertEqual(sources.clock.fd, -1)
    }

    func testStartOffTheLoopThreadThrowsNotOnLoopThread() throws {
        let sources = try makeSources(signals: [SIGUSR1])
        let code = Mutexed<OSEventError.Code?>(nil)
        Thread {
            do throws(OSEventError) { try sources.start() } catch { code.value = error.code }
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
        XCTAssertEqual(messages, [])
        let triggers = sources.pressure.triggers
        XCTAssertEqual(triggers.map(\.level), [.warning, .critical])
        XCTAssertEqual(triggers.map(\.window), [2_000_000_000, 2_000_000_000])
        XCTAssertEqual(triggers.map(\.source), [file, file])
        XCTAssertEqual(triggers.map(\.trigger), ["some 150000 2000000", "full 150000 2000000"])
        XCTAssertTrue(triggers.allSatisfy { $0.isWatching && $0.priority })
        // Registered with this loop: epoll refuses the same descriptor twice.
        for trigger in triggers {
            XCTAssertThrowsError(try loop.addReader(fd: trigger.fd, priority: true) {})
        }
        // The descriptors are closed on detached threads, soon after stop() (which returns at once: below).
        sources.stop()
        XCTAssertEqual(sources.pressure.triggers.count, 0)
        for trigger in triggers {
            for _ in 0..<500 where fcntl(trigger.fd, F_GETFD) != -1 { usleep(2_000) }
        }
        // The numbers may be reused by now (other tests run concurrently only in other processes).
        XCTAssertTrue(triggers.allSatisfy { fcntl($0.fd, F_GETFD) == -1 }, "closed")
    }

    /// stop() returns at once: closing a PSI trigger waits for an RCU grace period, which the detached
    /// threads pay, not the caller.
    func testStopDoesNotWaitForAnRCUGracePeriod() throws {
        let file = "/proc/pressure/cpu"
        guard access(file, R_OK | W_OK) == 0 else { throw XCTSkip("\(file) is not available here") }
        try XCTSkipIf(CBuild.underThreadSanitizer, "stop() is not timed under ThreadSanitizer: its pthread_create waits until the "
                      + "new thread has started, a scheduler's turn or more on a loaded machine, once for each trigger")
        let sources = try makeSources(pressure: true) { $0.pressureFile = file }
        try sources.start()
        let triggers = sources.pressure.triggers
        XCTAssertEqual(triggers.count, 2)
        let began = lcs_monotonic_ns()
        sources.stop()
        XCTAssertLessThan(lcs_monotonic_ns() - began, 5_000_000, "stop() does not wait for an RCU grace period")
        // Closed before the next test can be given the same numbers.
        for trigger in triggers {
            for _ in 0..<500 where fcntl(trigger.fd, F_GETFD) != -1 { usleep(2_000) }
        }
    }

    func testPressureDelayArmsTheTriggersLater() throws {
        let file = "/proc/pressure/cpu"
        guard access(file, R_OK | W_OK) == 0 else { throw XCTSkip("\(file) is not available here") }
        let sources = try makeSources(pressure: true) {
            $0.pressureFile = file
            $0.pressureDelay = .milliseconds(50)
        }
        try sources.start()
        XCTAssertEqual(sources.pressure.triggers.count, 0, "not opened in start()")
        try loop.run(for: .milliseconds(150))
        XCTAssertEqual(sources.pressure.triggers.count, 2)
        XCTAssertEqual(messages, [])
        // Stopped before the delay: never armed.
        sources.stop()
        try sources.start()
        sources.stop()
        try loop.run(for: .milliseconds(100))
        XCTAssertEqual(sources.pressure.triggers.count, 0)
    }

    func testDefaultPressureFileExistsOrIsProcPressure() {
        let file = MemoryPressureSource.defaultFile
        XCTAssertTrue(file == "/proc/pressure/memory" || (file.hasPrefix("/sys/fs/cgroup/") && access(file, F_OK) == 0), file)
    }

    func testPSIFileThatCannotBeOpenedIsAProblemNotFatal() throws {
        let sources = try makeSources(pressure: true) { $0.pressureFile = "/nonexistent/memory.pressure" }
        try sources.start()
        XCTAssertEqual(sources.pressure.triggers.count, 0)
        XCTAssertEqual(problems.count, 2)
        XCTAssertTrue(problems.allSatisfy { $0.code == .system && $0.errno == ENOENT }, "\(problems)")
        XCTAssertTrue(messages.allSatisfy { $0.contains("/nonexistent/memory.pressure") && $0.contains("errno 2") }, "\(messages)")
    }

    func testRefusedAndMalformedPSITriggersAreProblemsNotFatal() throws {
        let file = "/proc/pressure/cpu"
        guard access(file, R_OK | W_OK) == 0 else { throw XCTSkip("\(file) is not available here") }
        let sources = try makeSources(pressure: true) {
            $0.pressureFile = file
            $0.warningTrigger = "bogus 150000 2000000"  // well-shaped; the kernel says EINVAL
            $0.criticalTrigger = "full 150000"  // not even shaped
        }
        try sources.start()
        XCTAssertEqual(sources.pressure.triggers.count, 0)
        XCTAssertEqual(messages.count, 2, "\(messages)")
        XCTAssertTrue(messages[0].hasPrefix("psi warning:") && messages[0].contains("errno \(EINVAL)"), messages[0])
        XCTAssertTrue(messages[1].hasPrefix("psi critical:") && messages[1].contains("not 'some|full"), messages[1])
        XCTAssertEqual(problems.map(\.code), [.system, .invalidArgument])
    }

    func testALevelWithoutATriggerIsOff() throws {
        let file = "/proc/pressure/cpu"
        guard access(file, R_OK | W_OK) == 0 else { throw XCTSkip("\(file) is not available here") }
        let sources = try makeSources(pressure: true) {
            $0.pressureFile = file
            $0.warningTrigger = nil
        }
        try sources.start()
        XCTAssertEqual(sources.pressure.triggers.map(\.level), [.critical])
    }

    func testTriggerWindowParsing() {
        XCTAssertEqual(MemoryPressureSource.window(ofTrigger: "some 150000 2000000"), 2_000_000_000)
        XCTAssertEqual(MemoryPressureSource.window(ofTrigger: "full  70000\t4000000"), 4_000_000_000)
        XCTAssertNil(MemoryPressureSource.window(ofTrigger: "some 150000"))
        XCTAssertNil(MemoryPressureSource.window(ofTrigger: "some x 2000000"))
        XCTAssertNil(MemoryPressureSource.window(ofTrigger: "some 150000 0"))
    }

    func testPSIEventsAreRateLimitedToOnePerWindowAndCannotSpin() throws {
        let sources = try makeSources()
        try sources.start()
        let eventFD = lcs_eventfd()  // non-blocking; stands in for a PSI descriptor
        XCTAssertGreaterThanOrEqual(eventFD, 0)
        let window: UInt64 = 300_000_000
        try sources.pressure.watch(fd: eventFD, level: .critical, window: window, priority: false, ownsFD: true,
                                   source: "test", trigger: "full 1 300000")
        let trigger = try XCTUnwrap(sources.pressure.triggers.first)
        let expected = OSEvent.memoryPressure(level: .critical, source: "test", trigger: "full 1 300000")

        XCTAssertEqual(lcs_eventfd_signal(eventFD), 0)
        loop.dispatchPending()
        XCTAssertEqual(events, [expected])
        XCTAssertFalse(trigger.isWatching, "paused for the window")

        // A second event within the window: nothing, and the descriptor, readable, is not polled.
        XCTAssertEqual(lcs_eventfd_signal(eventFD), 0)
        for _ in 0..<100 { XCTAssertEqual(loop.dispatchPending(), 0) }
        XCTAssertEqual(events.count, 1)

        // After the window the held event is reported once.
        try loop.run(for: .milliseconds(Int64(window / 1_000_000) + 100))
        XCTAssertEqual(events, [expected, expected])
        let gap = try XCTUnwrap(trigger.lastEvent)
        // Nothing new: nothing more, and watching again after the second window.
        try loop.run(for: .milliseconds(Int64(window / 1_000_000) + 100))
        XCTAssertEqual(events.count, 2)
        XCTAssertTrue(trigger.isWatching)
        XCTAssertEqual(trigger.lastEvent, gap)
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
        XCTAssertEqual(events.compactMap(\.memoryPressure?.level), [.warning, .critical])
    }

    // MARK: Clock

    func testClockTimerfdArmsRealtimeWithCancelOnSet() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        XCTAssertEqual(messages, [])
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
        XCTAssertEqual(events, [])
        sources.stop()
        XCTAssertEqual(sources.clock.fd, -1)
        XCTAssertEqual(fcntl(fd, F_GETFD), -1, "closed")
    }

    func testCanceledClockReadEmitsClockChangedOnceAndRearms() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        sources.clock.handleClockRead(result: -1, errno: ECANCELED)
        XCTAssertEqual(events, [.clockChanged])
        XCTAssertEqual(sources.clock.armCount, 2)
        XCTAssertGreaterThanOrEqual(sources.clock.fd, 0)
        loop.dispatchPending()
        XCTAssertEqual(events.count, 1)
    }

    func testNothingToReadOnTheClockDoesNothing() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        sources.clock.handleClockRead(result: -1, errno: EAGAIN)
        sources.clock.handleClockRead(result: 0, errno: EAGAIN)
        XCTAssertEqual(events, [])
        XCTAssertEqual(sources.clock.armCount, 1)
        XCTAssertEqual(messages, [])
    }

    func testFailingClockReadIsAProblemAndTurnsDetectionOff() throws {
        let sources = try makeSources(clock: true)
        try sources.start()
        sources.clock.handleClockRead(result: -1, errno: EBADF)
        XCTAssertEqual(events, [])
        XCTAssertEqual(sources.clock.fd, -1)
        XCTAssertEqual(messages.count, 1)
        XCTAssertTrue(messages[0].hasPrefix("clock:") && messages[0].contains("errno \(EBADF)"), messages[0])
        XCTAssertEqual(problems.first?.errno, EBADF)
        sources.clock.handleClockRead(result: -1, errno: ECANCELED)
        XCTAssertEqual(events, [])
    }

    // MARK: All of them

    func testEverythingTogetherStartsAndStops() throws {
        let sources = try makeSources(signals: [SIGUSR1], pressure: true, clock: true) { $0.pressureFile = "/proc/pressure/memory" }
        try sources.start()
        try sources.start()  // idempotent
        XCTAssertGreaterThanOrEqual(sources.clock.fd, 0)
        if access("/proc/pressure/memory", W_OK) == 0 {
            XCTAssertEqual(messages, [])
            XCTAssertEqual(sources.pressure.triggers.count, 2)
        }
        sources.stop()
        sources.stop()
        XCTAssertEqual(sources.clock.fd, -1)
        XCTAssertEqual(sources.pressure.triggers.count, 0)
        XCTAssertFalse(sources.signals.isWatching)
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
