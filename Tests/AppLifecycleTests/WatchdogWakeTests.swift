import Synchronization
import XCTest
@testable import AppLifecycle

/// The watchdog thread is woken (an eventfd write) only when a deadline comes before the time it will
/// wake by itself; a stopped and restarted clock — around every isolated plugin's call — costs no
/// wake-up, and a restarted clock whose deadline is now the nearest is still reported on time.
final class WatchdogWakeTests: XCTestCase {
    private final class Reports: @unchecked Sendable {
        let list = Mutex<[(WatchdogReport, ContinuousClock.Instant)]>([])
        func add(_ report: WatchdogReport) { list.withLock { $0.append((report, .now)) } }
        var first: (WatchdogReport, ContinuousClock.Instant)? { list.withLock { $0.first } }
    }

    private func makeWatchdog(_ reports: Reports) -> Watchdog {
        var configuration = Configuration()
        configuration.budgets.hang = .seconds(8)  // samples every second: a later wake than any deadline below
        configuration.watchdogPolicy = .report
        // The watchdog reads the loop's (monotonic) clock.
        let loop = try! MainRunLoop()
        return Watchdog(configuration: configuration, probe: CallbackProbe(), loop: loop, onOverrun: { reports.add($0) },
                        onTerminationOverdue: { _ in })
    }

    /// A phase whose clock was stopped while the watchdog slept past its first deadline: restarted, its
    /// moved deadline is the nearest, and the overrun is reported then — not at the next hang sample.
    func testARestartedClockIsReportedAtItsMovedDeadline() throws {
        let reports = Reports()
        let watchdog = makeWatchdog(reports)
        defer { watchdog.shutdown() }
        let started = ContinuousClock.now
        watchdog.begin(.didEnterBackground, budget: .milliseconds(100))
        watchdog.pause()
        usleep(250_000)  // the watchdog woke at the first deadline, saw the clock stopped, sleeps ~1 s
        watchdog.resume()  // deadline now ~350 ms after the start: before its next wake
        while reports.first == nil, ContinuousClock.now - started < .seconds(3) { usleep(5_000) }
        let (report, at) = try XCTUnwrap(reports.first, "no overrun reported")
        XCTAssertEqual(report.budgetKind, .didEnterBackground)
        XCTAssertGreaterThanOrEqual(at - started, .milliseconds(340), "not before the moved deadline")
        XCTAssertLessThan(at - started, .milliseconds(800), "the restarted clock woke the watchdog")
        XCTAssertNotNil(watchdog.end())
    }

    /// Stopping and restarting the clock a thousand times inside a phase with a far deadline wakes the
    /// watchdog thread not once: what the round trip to an isolated plugin pays is the lock only.
    func testStoppingAndRestartingTheClockWakesNothing() throws {
        let reports = Reports()
        let watchdog = makeWatchdog(reports)
        defer { watchdog.shutdown() }
        watchdog.begin(.didEnterBackground, budget: .seconds(30))
        usleep(50_000)  // the watchdog has read the phase and sleeps until its next sample
        let before = watchdog.wakeUps
        for _ in 0..<1000 {
            watchdog.pause()
            watchdog.resume()
        }
        XCTAssertEqual(watchdog.wakeUps, before)
        XCTAssertNil(watchdog.end())
        XCTAssertNil(reports.first)
    }
}
