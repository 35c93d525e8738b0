import Foundation
import Glibc
import XCTest

@testable import LifecycleRunLoop

/// `MainRunLoop(clock: .manual)`: timers fall due only by `advance(by:)`, in deadline order at their
/// own deadlines with the work they post, while descriptors, posted work and real-time timers stay
/// live in real time.
final class ManualClockLoopTests: XCTestCase {
    func testAdvanceRunsDueTimersInDeadlineOrderEachAtItsDeadline() throws {
        let loop = try MainRunLoop(clock: .manual)
        var seen: [String] = []
        func note(_ what: String) { seen.append("\(what) @\(loop.elapsed)") }
        loop.addTimer(after: .seconds(3)) { note("3 s") }
        loop.addTimer(after: .seconds(2)) { note("2 s, first") }
        loop.addTimer(after: .seconds(1)) {
            note("1 s")
            loop.addTimer(after: .zero) { note("a 0 s timer added at 1 s") }
            loop.addTimer(after: .seconds(1)) { note("1 s after 1 s") }
            loop.performNext { note("work added at 1 s") }
        }
        loop.addTimer(after: .seconds(2)) { note("2 s, second") }
        let repeating = loop.addTimer(after: .milliseconds(1_500), repeating: .seconds(1)) { note("every 1 s from 1.5 s") }
        loop.addTimer(after: .seconds(6)) { note("6 s") }
        try loop.advance(by: .zero)
        XCTAssertEqual(seen, [], "nothing is due at 0")
        try loop.advance(by: .seconds(5))
        repeating.cancel()
        XCTAssertEqual(seen, [
            "1 s @1.0 seconds", "work added at 1 s @1.0 seconds", "a 0 s timer added at 1 s @1.0 seconds",
            "every 1 s from 1.5 s @1.5 seconds",
            "2 s, first @2.0 seconds", "2 s, second @2.0 seconds", "1 s after 1 s @2.0 seconds",
            "every 1 s from 1.5 s @2.5 seconds", "3 s @3.0 seconds", "every 1 s from 1.5 s @3.5 seconds",
            "every 1 s from 1.5 s @4.5 seconds",
        ])
        XCTAssertEqual(loop.elapsed, .seconds(5))
        XCTAssertEqual(loop.nextTimerDeadline, loop.origin + .seconds(6))
        XCTAssertEqual(loop.now, loop.origin + .seconds(5))
    }

    func testIOPostedWorkAndRealTimeTimersStayLiveWhileManualTimersWait() throws {
        let loop = try MainRunLoop(clock: .manual)
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        var read: [UInt8] = []
        let reader = try loop.addReader(fd: fds[0]) {
            var byte: UInt8 = 0
            if Glibc.read(fds[0], &byte, 1) == 1 { read.append(byte) }
        }
        defer { reader.cancel() }
        var manualFired = false
        var realFired = false
        let posted = LoopConfinedBox(false)
        loop.addTimer(after: .milliseconds(10)) { manualFired = true }
        loop.addRealTimeTimer(after: .milliseconds(10)) { realFired = true }
        let writeEnd = fds[1]
        Thread {
            var byte: UInt8 = 7
            _ = write(writeEnd, &byte, 1)
        }.start()
        loop.perform { posted.value = true }
        let started = MonotonicInstant.now
        try loop.run(for: .milliseconds(100))
        XCTAssertGreaterThanOrEqual(MonotonicInstant.now.duration(since: started), .milliseconds(100), "run(for:) is real time")
        XCTAssertEqual(read, [7])
        XCTAssertTrue(posted.value)
        XCTAssertTrue(realFired, "a real-time timer passes in real time")
        XCTAssertFalse(manualFired, "a manual-clock timer waits for advance")
        XCTAssertEqual(loop.elapsed, .zero)
        try loop.advance(by: .milliseconds(10))
        XCTAssertTrue(manualFired)
    }

    func testAdvanceFromInsideALoopCallbackOnlyMovesTheClock() throws {
        let loop = try MainRunLoop(clock: .manual)
        var seen: [String] = []
        var moves: [String] = []
        let observer = loop.addClockObserver { from, to in moves.append("\(from.duration(since: loop.origin)) -> \(to.duration(since: loop.origin))") }
        loop.addTimer(after: .zero) {
            loop.addTimer(after: .seconds(1)) { seen.append("B (added inside, due at 1 s) at \(loop.elapsed)") }
            try? loop.advance(by: .seconds(3))
            seen.append("A returns at \(loop.elapsed)")
        }
        loop.addTimer(after: .seconds(2)) { seen.append("C (due at 2 s) at \(loop.elapsed)") }
        XCTAssertEqual(loop.dispatchPending(), 1, "A only: the turn's timers were those due when it began")
        XCTAssertEqual(seen, ["A returns at 3.0 seconds"])
        XCTAssertEqual(moves, ["0.0 seconds -> 3.0 seconds"], "the clock observers heard it while A ran")
        // The due timers make the descriptor readable for a foreign poller.
        var poll = pollfd(fd: loop.fileDescriptor, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(Glibc.poll(&poll, 1, 0), 1)
        XCTAssertEqual(loop.dispatchPending(), 2)
        XCTAssertEqual(seen, ["A returns at 3.0 seconds", "B (added inside, due at 1 s) at 3.0 seconds", "C (due at 2 s) at 3.0 seconds"])
        loop.removeClockObserver(observer)
        try loop.advance(by: .seconds(1))
        XCTAssertEqual(moves.count, 1)
        XCTAssertEqual(loop.elapsed, .seconds(4))
    }

    func testAdvanceIsRefusedOnTheMonotonicClockNegativeDurationsAndOtherThreads() throws {
        let real = try MainRunLoop()
        XCTAssertEqual(real.clock, .monotonic)
        XCTAssertThrowsError(try real.advance(by: .seconds(1))) { error in
            XCTAssertEqual((error as? RunLoopError)?.code, .invalidArgument)
            XCTAssertEqual((error as? RunLoopError)?.message,
                           "MainRunLoop.advance(by:): the loop runs on the monotonic clock; only a manual clock advances")
        }
        let manual = try MainRunLoop(clock: .manual)
        XCTAssertThrowsError(try manual.advance(by: .seconds(-1))) { error in
            XCTAssertEqual((error as? RunLoopError)?.message, "MainRunLoop.advance(by:): the duration -1.0 seconds is negative")
        }
        let message = LoopConfinedBox<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            do throws(RunLoopError) { try manual.advance(by: .seconds(1)) } catch { message.value = error.message }
            done.signal()
        }.start()
        done.wait()
        XCTAssertEqual(message.value, "MainRunLoop.advance(by:) must be called on the loop's thread")
        // The largest advance saturates, never wraps.
        try manual.advance(by: MainRunLoop.maxAdvance)
        try manual.advance(by: MainRunLoop.maxAdvance)
        XCTAssertEqual(manual.now.nanoseconds, .max)
    }
}

/// A value written by one thread and read by another after a semaphore (which orders them).
private final class LoopConfinedBox<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}
