import Glibc
import XCTest
@testable import LifecycleRunLoop

private final class Box: @unchecked Sendable { var ran = 0 }

/// The wake-up eventfd is edge-triggered: a wake-up consumed by a turn that returned for stop() must not
/// strand work queued at the same moment.
final class MainRunLoopWakeupTests: XCTestCase {
    /// Work posted together with a stop that lands while the loop waits must run on the next run
    /// (it must not wait for another post).
    func testWorkQueuedWithAStopWhileWaitingRunsOnTheNextRun() throws {
        for _ in 0..<50 {
            let loop = try MainRunLoop()
            let box = Box()
            let t = Thread {
                usleep(2_000)
                loop.perform { box.ran += 1 }
                loop.stop()
            }
            t.start()
            try loop.run()
            // Whether or not the stop returned before running the work, the next bounded run must run it.
            if box.ran == 0 {
                let start = MonotonicInstant.now
                loop.perform { loop.stop() }
                try loop.run(for: .milliseconds(200))
                XCTAssertLessThan(MonotonicInstant.now.duration(since: start), .milliseconds(100))
            }
            XCTAssertEqual(box.ran, 1)
        }
    }

    func testForeignPollSeesWorkLeftByAStopWhileWaiting() throws {
        let loop = try MainRunLoop()
        let box = Box()
        // Both land before the loop waits: the turn sees the stop first and returns without running.
        loop.perform { box.ran += 1 }
        loop.stop()
        try loop.run()
        var entry = pollfd(fd: loop.fileDescriptor, events: Int16(POLLIN), revents: 0)
        XCTAssertEqual(poll(&entry, 1, 0), 1, "queued work keeps the fd readable")
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(box.ran, 1)
    }
}
