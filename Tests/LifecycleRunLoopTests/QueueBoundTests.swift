import Foundation
import Glibc
import Synchronization
import XCTest

@testable import LifecycleRunLoop

/// The cross-thread queue's bound: per posting thread and in all, refusal (`send`, `tryPerform`) or
/// waiting (`perform`), nothing accepted ever lost or reordered, the loop's own thread never refused.
final class QueueBoundTests: XCTestCase {
    private let bound = MainRunLoop.maxQueuedPerThread

    /// Runs `body` on a new thread and waits for it.
    private func onAnotherThread<T: Sendable>(_ body: @escaping @Sendable () -> T) -> T {
        let result = Mutex<T?>(nil)
        let finished = DispatchSemaphore(value: 0)
        Thread {
            let value = body()
            result.withLock { $0 = value }
            finished.signal()
        }.start()
        finished.wait()
        return result.withLock { $0! }
    }

    func testTheDocumentedLimits() {
        XCTAssertEqual(MainRunLoop.maxQueuedPerThread, 65_536)
        XCTAssertEqual(MainRunLoop.maxQueued, 1_048_576)
    }

    /// Before the bound, 4 threads posting in a loop grew a host to 2.19 GB: a thread is now refused
    /// at its 65,537th waiting message, another thread is not, and after one take it may post again.
    func testAThreadIsRefusedAtItsBoundAnotherIsNotAndEveryAcceptedMessageArrivesInOrder() throws {
        let loop = try MainRunLoop()
        var received: [UInt64: [UInt]] = [:]
        let target = loop.addTarget { message in received[message.word0, default: []].append(message.word1) }
        defer { loop.removeTarget(target) }

        // The loop does not run: everything stays queued. Thread 1 posts until it is refused, then
        // stays alive (a thread that has ended may hand its pthread_t to the next one).
        let bound = self.bound
        let result = Mutex<(accepted: Int, refusedAgain: Bool)>((0, false))
        let filled = DispatchSemaphore(value: 0), release = DispatchSemaphore(value: 0)
        Thread {
            var accepted = 0
            while loop.send(LoopMessage(target: target, word0: 1, word1: UInt(accepted))) { accepted += 1 }
            // Still refused, and tryPerform is refused the same way.
            let again = !loop.send(LoopMessage(target: target, word0: 1, word1: 999_999)) && !loop.tryPerform {}
            result.withLock { $0 = (accepted, again) }
            filled.signal()
            release.wait()
        }.start()
        filled.wait()
        defer { release.signal() }
        XCTAssertEqual(result.withLock { $0.accepted }, bound, "exactly maxQueuedPerThread messages are accepted from one thread")
        XCTAssertTrue(result.withLock { $0.refusedAgain })
        // Another thread has its own bound.
        let other = onAnotherThread { () -> Int in
            var accepted = 0
            for index in 0..<1000 where loop.send(LoopMessage(target: target, word0: 2, word1: UInt(index))) { accepted += 1 }
            return accepted
        }
        XCTAssertEqual(other, 1000)
        // The loop's own thread is never refused.
        for index in 0..<1000 { XCTAssertTrue(loop.send(LoopMessage(target: target, word0: 3, word1: UInt(index)))) }

        // Delivery is waited for, not timed (a sanitizer slows it many times), then a little more.
        let deadline = MonotonicInstant.now + .seconds(30)
        while (received[1]?.count ?? 0) < bound || (received[3]?.count ?? 0) < 1000, MonotonicInstant.now < deadline {
            try loop.run(for: .milliseconds(20))
        }
        try loop.run(for: .milliseconds(50))
        XCTAssertEqual(received[1], (0..<UInt(bound)).map { $0 }, "every accepted message, in order, none of the refused")
        XCTAssertEqual(received[2], (0..<1000).map { UInt($0) })
        XCTAssertEqual(received[3], (0..<1000).map { UInt($0) })

        // After the take the thread may post again.
        let afterTake = onAnotherThread { loop.send(LoopMessage(target: target, word0: 4, word1: 0)) }
        XCTAssertTrue(afterTake)
    }

    /// `perform` is never refused: past the bound it waits until the loop has taken the queue, and the
    /// work runs in order after everything queued before it.
    func testPerformPastTheBoundWaitsForTheLoopInsteadOfLosingWork() throws {
        let loop = try MainRunLoop()
        let bound = self.bound
        let order = Mutex<[Int]>([])
        let producerDone = Atomic<Bool>(false)
        let thread = Thread {
            for index in 0..<(bound + 10) {
                loop.perform { order.withLock { $0.append(index) } }
            }
            producerDone.store(true, ordering: .releasing)
        }
        thread.start()
        // The producer fills its bound and then waits: it cannot finish while the loop does not run.
        var waited = 0
        while order.withLock({ $0.count }) == 0, waited < 200 {
            usleep(5_000)
            waited += 1
            if waited == 100 { XCTAssertFalse(producerDone.load(ordering: .acquiring), "perform returned past the bound without the loop") }
        }
        let deadline = Date().addingTimeInterval(30)
        while !producerDone.load(ordering: .acquiring) || order.withLock({ $0.count }) < bound + 10, Date() < deadline {
            try loop.run(for: .milliseconds(20))
        }
        XCTAssertTrue(producerDone.load(ordering: .acquiring))
        XCTAssertEqual(order.withLock { $0 }, Array(0..<(bound + 10)))
    }

    /// All threads together: at most `maxQueued`. Seventeen threads post in turn (each until it is
    /// refused); sixteen fill their 65,536 each, which is the total, so the seventeenth is refused from
    /// its first message. A take starts every count again.
    func testAllThreadsTogetherAreBoundedByMaxQueued() throws {
        let loop = try MainRunLoop()
        var accepted: [Int] = []
        for _ in 1...17 {
            accepted.append(onAnotherThread {
                var count = 0
                while loop.send(LoopMessage(target: .closure, payload: PerformBox({}))) { count += 1 }
                return count
            })
        }
        XCTAssertEqual(accepted.reduce(0, +), MainRunLoop.maxQueued)
        XCTAssertTrue(accepted.allSatisfy { $0 <= MainRunLoop.maxQueuedPerThread }, "\(accepted)")
        XCTAssertEqual(accepted.last, 0)
        loop.dispatchPending()
        XCTAssertTrue(onAnotherThread { loop.send(LoopMessage(target: .closure, payload: PerformBox({}))) },
                      "a take starts every count again")
    }

    /// A thread's tally belongs to one queue: filling one loop's queue to the bound does not refuse
    /// the thread on another loop, and going back to the first starts its tally again (bounded then
    /// by `maxQueued`, as documented).
    func testAThreadsTallyBelongsToOneLoop() throws {
        let first = try MainRunLoop(), second = try MainRunLoop()
        let bound = bound
        let counts = onAnotherThread { () -> [Int] in
            var filled = 0
            while first.send(LoopMessage(target: .closure, payload: PerformBox({}))), filled <= bound { filled += 1 }
            let other = second.send(LoopMessage(target: .closure, payload: PerformBox({}))) ? 1 : 0
            return [filled, other]
        }
        XCTAssertEqual(counts, [bound, 1])
    }
}
