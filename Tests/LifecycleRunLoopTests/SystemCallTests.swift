import Foundation
import Glibc
import Synchronization
import XCTest

import LifecycleRunLoop

/// `systemCall` against real system calls: a real EINTR (a thread blocked in `read` on a pipe, a
/// signal whose handler was installed without `SA_RESTART`), a real failure, and EINTR surfaced.
final class SystemCallTests: XCTestCase {
    /// What a reader thread shares with the test.
    private final class Reader: Sendable {
        let fd: Int32
        /// The reader's `pthread_t`, once it runs (0 before).
        let thread = Atomic<UInt>(0)
        /// How many times `read` was called.
        let calls = Atomic<Int>(0)
        /// The outcome: the byte count (-1 on failure), the errno, the byte read.
        let outcome = Mutex<(count: Int, errno: Int32, byte: UInt8)>((0, 0, 0))
        /// The name the thrown error gave (wrapped reads that failed).
        let failedCall = Mutex<String>("")
        let finished = DispatchSemaphore(value: 0)

        init(fd: Int32) { self.fd = fd }
    }

    private enum Mode { case unwrapped, wrapped, wrappedNotRetrying }

    /// Installs a handler that does nothing, without `SA_RESTART` (so a blocked `read` fails with
    /// EINTR), runs `body`, then puts the previous disposition back.
    private func withNoOpHandler<T>(_ body: () throws -> T) rethrows -> T {
        var action = sigaction()
        action.__sigaction_handler.sa_handler = { _ in }
        sigemptyset(&action.sa_mask)
        action.sa_flags = 0
        var previous = sigaction()
        XCTAssertEqual(sigaction(testSignal, &action, &previous), 0)
        defer { sigaction(testSignal, &previous, nil) }
        return try body()
    }

    /// Starts a thread reading one byte from a fresh pipe in `mode`, interrupts its `read` with the
    /// signal (sent with `pthread_kill` until the read has failed with EINTR at least once), then
    /// writes one byte and waits for the thread. - Returns: its outcome and its number of `read` calls.
    private func interruptedRead(_ mode: Mode) throws -> (count: Int, errno: Int32, byte: UInt8, calls: Int, failedCall: String) {
        var pipeFDs: [Int32] = [-1, -1]
        XCTAssertEqual(pipe(&pipeFDs), 0)
        defer { for fd in pipeFDs { close(fd) } }
        let reader = Reader(fd: pipeFDs[0])
        Thread {
            // The test thread may have the signal blocked (a run-loop test blocks SIGUSR2, and threads
            // inherit the mask): let it through here.
            var unblocked = sigset_t()
            sigemptyset(&unblocked)
            sigaddset(&unblocked, testSignal)
            pthread_sigmask(SIG_UNBLOCK, &unblocked, nil)
            reader.thread.store(UInt(pthread_self()), ordering: .releasing)
            var byte: UInt8 = 0
            let outcome: (count: Int, errno: Int32, byte: UInt8)
            switch mode {
            case .unwrapped:
                reader.calls.add(1, ordering: .relaxed)
                let count = read(reader.fd, &byte, 1)
                outcome = (count, count < 0 ? errno : 0, byte)
            case .wrapped, .wrappedNotRetrying:
                do throws(SystemCallError) {
                    let count = try systemCall("read", retryingEINTR: mode == .wrapped) { () -> Int in
                        reader.calls.add(1, ordering: .relaxed)
                        return read(reader.fd, &byte, 1)
                    }
                    outcome = (count, 0, byte)
                } catch {
                    reader.failedCall.withLock { $0 = error.call }
                    outcome = (-1, error.errno, 0)
                }
            }
            reader.outcome.withLock { $0 = outcome }
            reader.finished.signal()
        }.start()

        let deadline = monotonicSeconds() + 2.0
        var tid: UInt = 0
        while tid == 0, monotonicSeconds() < deadline {
            tid = reader.thread.load(ordering: .acquiring)
            if tid == 0 { usleep(100) }
        }
        XCTAssertNotEqual(tid, 0, "the reader thread did not start")
        // A signal sent before the thread enters read interrupts nothing: send until a read came back
        // (the unwrapped and the non-retrying read end; the retrying one calls read a second time).
        func interrupted() -> Bool {
            mode == .wrapped ? reader.calls.load(ordering: .relaxed) >= 2 : reader.finished.wait(timeout: .now()) == .success
        }
        var signalled = false
        while !signalled, monotonicSeconds() < deadline {
            XCTAssertEqual(pthread_kill(pthread_t(tid), testSignal), 0)
            usleep(1000)
            if interrupted() { signalled = true }
        }
        XCTAssertTrue(signalled, "the read was never interrupted")
        // Data after the interruption: only a read that was retried gets it.
        var byte = UInt8(ascii: "x")
        XCTAssertEqual(write(pipeFDs[1], &byte, 1), 1)
        if mode == .wrapped {
            XCTAssertEqual(reader.finished.wait(timeout: .now() + 2), .success)
        }
        let outcome = reader.outcome.withLock { $0 }
        return (outcome.count, outcome.errno, outcome.byte, reader.calls.load(ordering: .relaxed), reader.failedCall.withLock { $0 })
    }

    /// The setup can fail: a plain `read` comes back with -1 and EINTR.
    func testUnwrappedReadFailsWithEINTR() throws {
        let result = try withNoOpHandler { try interruptedRead(.unwrapped) }
        XCTAssertEqual(result.count, -1)
        XCTAssertEqual(result.errno, EINTR)
        XCTAssertEqual(result.calls, 1)
    }

    /// The same interrupted read through `systemCall` is called again and returns the data.
    func testWrappedReadRetriesEINTRAndReturnsTheData() throws {
        let result = try withNoOpHandler { try interruptedRead(.wrapped) }
        XCTAssertEqual(result.count, 1)
        XCTAssertEqual(result.byte, UInt8(ascii: "x"))
        XCTAssertGreaterThanOrEqual(result.calls, 2, "read was not interrupted, so nothing was retried")
    }

    /// `retryingEINTR: false` throws EINTR like any other errno (epoll_wait's case).
    func testNotRetryingSurfacesEINTR() throws {
        let result = try withNoOpHandler { try interruptedRead(.wrappedNotRetrying) }
        XCTAssertEqual(result.count, -1)
        XCTAssertEqual(result.errno, EINTR)
        XCTAssertEqual(result.failedCall, "read")
        XCTAssertEqual(result.calls, 1)
    }

    /// A failing call throws an error naming it, with its errno and the usual text.
    func testFailureNamesTheCall() {
        do throws(SystemCallError) {
            let fd = try systemCall("open") { open("/nonexistent/x", O_RDONLY) }
            close(fd)
            XCTFail("opening /nonexistent/x succeeded")
        } catch {
            XCTAssertEqual(error.call, "open")
            XCTAssertEqual(error.errno, ENOENT)
            XCTAssertEqual(error.description, "open failed: No such file or directory (errno 2)")
            XCTAssertEqual(error, SystemCallError("open", errno: ENOENT))
            XCTAssertNotEqual(error, SystemCallError("openat", errno: ENOENT))
            XCTAssertEqual(Set([error, SystemCallError("open", errno: ENOENT)]).count, 1)
            // The run loop's .system errors carry the same text.
            let loopError = RunLoopError(error)
            XCTAssertEqual(loopError.code, .system)
            XCTAssertEqual(loopError.message, error.description)
            XCTAssertEqual(loopError.call, "open")
            XCTAssertEqual(loopError.errno, ENOENT)
        }
    }

    /// A successful call returns its result untouched, called once.
    func testSuccessReturnsTheResult() throws {
        var calls = 0
        let pid = try systemCall("getpid") { () -> pid_t in
            calls += 1
            return getpid()
        }
        XCTAssertEqual(pid, getpid())
        XCTAssertEqual(calls, 1)
    }
}

/// The signal that interrupts the reads: its handler does nothing.
private let testSignal = SIGUSR1

/// Monotonic seconds, for the tests' deadlines.
private func monotonicSeconds() -> Double {
    var time = timespec()
    clock_gettime(CLOCK_MONOTONIC, &time)
    return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
}
