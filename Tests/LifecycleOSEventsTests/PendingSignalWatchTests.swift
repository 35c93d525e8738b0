@preconcurrency import Glibc
import Synchronization
import XCTest

@testable import LifecycleOSEvents

/// The pending-signal watch's own contract. Its real work — noticing a SIGTERM that a stuck loop never
/// reads — needs the signal blocked in every thread of the process, which XCTest's threads do not do:
/// it is proved on the built host (HostEndsTests: SIGTERM while an observer loops for ever).
final class PendingSignalWatchTests: XCTestCase {
    func testSignalsThatCannotBeWatchedAreRefusedWithTheirNumber() {
        for signo in [SIGKILL, SIGSTOP, 0, 65] {
            XCTAssertThrowsError(try PendingSignalWatch(signals: [SIGTERM, signo]) { _ in }) { error in
                let error = error as? OSEventError
                XCTAssertEqual(error?.code, .invalidArgument)
                XCTAssertEqual(error?.message, "pending-signal watch: signal \(signo) cannot be watched")
            }
        }
    }

    func testStopEndsTheThreadAndTheHandlerIsNeverCalledAfter() throws {
        let called = Atomic<Int>(0)
        let watch = try PendingSignalWatch(signals: [SIGTERM, SIGINT]) { _ in called.add(1, ordering: .relaxed) }
        XCTAssertEqual(watch.signals, [SIGTERM, SIGINT])
        let start = MonotonicInstant.now
        watch.stop()
        watch.stop()  // idempotent
        XCTAssertLessThan(MonotonicInstant.now.duration(since: start), .seconds(1), "stop wakes the thread, it does not wait for a signal")
        XCTAssertEqual(called.load(ordering: .relaxed), 0)
    }
}
