import Foundation
import Glibc
import XCTest

@testable import LifecycleRunLoop

/// State touched only on the loop thread (what these tests check), shared with `@Sendable` closures.
private final class LoopConfined<Value>: @unchecked Sendable {
    var value: Value
    init(_ value: Value) { self.value = value }
}

final class MainRunLoopTests: XCTestCase {
    private static let producers = 4
    private static let perProducer = 10_000

    /// Runs `body` on a new thread and waits for it to finish.
    private func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
        let finished = DispatchSemaphore(value: 0)
        Thread {
            body()
            finished.signal()
        }.start()
        finished.wait()
    }

    /// Starts `count` threads running `body(threadIndex)`.
    private func spawn(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
        for index in 0..<count {
            Thread { body(index) }.start()
        }
    }

    // MARK: Cross-thread work

    func testPerformFromFourThreadsRunsEverythingOnLoopThreadInEachThreadsOrder() throws {
        let loop = try MainRunLoop()
        let loopThread = pthread_self()
        let total = Self.producers * Self.perProducer
        // Per producer: the next index expected; plus counters of what went wrong.
        let state = LoopConfined((next: [Int](repeating: 0, count: Self.producers), ran: 0, offThread: 0, outOfOrder: 0))
        spawn(Self.producers) { producer in
            for index in 0..<Self.perProducer {
                loop.perform {
                    if !loop.isOnLoopThread || pthread_equal(pthread_self(), loopThread) == 0 { state.value.offThread += 1 }
                    if state.value.next[producer] != index { state.value.outOfOrder += 1 }
                    state.value.next[producer] = index + 1
                    state.value.ran += 1
                    if state.value.ran == total { loop.stop() }
                }
            }
        }
        try loop.run(for: .seconds(60))  // bound: a lost item fails instead of hanging
        XCTAssertEqual(state.value.ran, total)
        XCTAssertEqual(state.value.offThread, 0)
        XCTAssertEqual(state.value.outOfOrder, 0)
        XCTAssertEqual(state.value.next, [Int](repeating: Self.perProducer, count: Self.producers))
    }

    func testMessagesFromFourThreadsReachTheirTargetOnLoopThreadInEachThreadsOrder() throws {
        let loop = try MainRunLoop()
        let loopThread = pthread_self()
        let total = Self.producers * Self.perProducer
        var next = [Int](repeating: 0, count: Self.producers)
        var ran = 0, offThread = 0, outOfOrder = 0, wrongWord = 0
        let target = loop.addTarget { message in
            if !loop.isOnLoopThread || pthread_equal(pthread_self(), loopThread) == 0 { offThread += 1 }
            if message.word0 != 7 || message.payload != nil { wrongWord += 1 }
            // word1 encodes producer * perProducer + index.
            let producer = Int(message.word1) / Self.perProducer, index = Int(message.word1) % Self.perProducer
            if next[producer] != index { outOfOrder += 1 }
            next[producer] = index + 1
            ran += 1
            if ran == total { loop.stop() }
        }
        spawn(Self.producers) { producer in
            for index in 0..<Self.perProducer {
                loop.send(LoopMessage(target: target, word0: 7, word1: UInt(producer * Self.perProducer + index)))
            }
        }
        try loop.run(for: .seconds(60))
        loop.removeTarget(target)  // the handler captures the loop
        XCTAssertEqual(ran, total)
        XCTAssertEqual(offThread, 0)
        XCTAssertEqual(outOfOrder, 0)
        XCTAssertEqual(wrongWord, 0)
        XCTAssertEqual(next, [Int](repeating: Self.perProducer, count: Self.producers))
    }

    func testTwoTargetsOnOneLoopEachReceiveOnlyTheirOwnMessages() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        final class Text: Sendable {
            let value: String
            init(_ value: String) { self.value = value }
        }
        let a = loop.addTarget { message in
            log.value.append("a\(message.word0)" + ((message.payload as? Text).map { " " + $0.value } ?? ""))
        }
        let b = loop.addTarget { message in log.value.append("b\(message.word0)") }
        onAnotherThread {
            loop.send(LoopMessage(target: a, word0: 1))
            loop.send(LoopMessage(target: b, word0: 2))
            loop.send(LoopMessage(target: a, word0: 3, payload: Text("text")))
            loop.perform { loop.stop() }
        }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log.value, ["a1", "b2", "a3 text"])
        loop.removeTarget(a)
        loop.removeTarget(b)
    }

    func testAReceiverSubclassGetsItsMessagesInOneFIFOWithPerformAndNoneAfterRemoval() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        final class Recorder: LoopMessageReceiver {
            let log: LoopConfined<[String]>
            let loop: MainRunLoop
            init(_ log: LoopConfined<[String]>, _ loop: MainRunLoop) { self.log = log; self.loop = loop }
            override func receive(_ message: borrowing LoopMessage) {
                log.value.append("m\(message.word0)/\(message.word1)\(loop.isOnLoopThread ? "" : " off the loop thread")")
            }
        }
        weak var gone: Recorder?
        var target: LoopTarget!
        do {
            let recorder = Recorder(log, loop)
            gone = recorder
            target = loop.addTarget(recorder)
        }
        XCTAssertNotNil(gone, "the loop holds its receivers")
        onAnotherThread { [target] in
            loop.send(LoopMessage(target: target!, word0: 1, word1: 10))
            loop.perform { log.value.append("p2") }
            loop.send(LoopMessage(target: target!, word0: 3, word1: 30))
            loop.perform { loop.stop() }
        }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log.value, ["m1/10", "p2", "m3/30"])
        loop.send(LoopMessage(target: target, word0: 4))
        loop.removeTarget(target)
        XCTAssertNil(gone, "removal releases the receiver")
        loop.perform { loop.stop() }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log.value, ["m1/10", "p2", "m3/30"])
    }

    func testMessagesQueuedForARemovedTargetAreDroppedAndItsSlotIsNotConfusedWithTheNextTarget() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        let old = loop.addTarget { message in log.value.append("old\(message.word0)") }
        onAnotherThread { loop.send(LoopMessage(target: old, word0: 1)) }
        loop.removeTarget(old)
        // The new target reuses the slot with a new generation: the queued message is not its.
        let new = loop.addTarget { message in log.value.append("new\(message.word0)") }
        loop.send(LoopMessage(target: new, word0: 2))
        loop.send(LoopMessage(target: old, word0: 3))
        loop.perform { loop.stop() }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log.value, ["new2"])
        XCTAssertNotEqual(old, new)
        loop.removeTarget(new)
        loop.removeTarget(new)  // idempotent
    }

    func testATargetRemovedByAnEarlierMessageOfTheSameBatchIsNotCalled() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        var second: LoopTarget?
        let first = loop.addTarget { _ in
            log.value.append("first")
            if let second { loop.removeTarget(second) }
        }
        second = loop.addTarget { _ in log.value.append("second") }
        loop.send(LoopMessage(target: first))
        loop.send(LoopMessage(target: second!))
        loop.perform { loop.stop() }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log.value, ["first"])
        loop.removeTarget(first)
    }

    func testIOSourceInterestCanChangeBetweenReadableAndWritable() throws {
        let loop = try MainRunLoop()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        let log = LoopConfined<[String]>([])
        var source: LoopSource?
        source = try loop.addIO(fd: fds[0], events: .writable) { events in
            if events.contains(.writable) {
                log.value.append("writable")
                _ = "x".withCString { write(fds[0], $0, 1) }
                try? source?.setIOEvents(.readable)  // nothing more to write: wait for the answer
            }
            if events.contains(.readable) {
                var byte: UInt8 = 0
                _ = read(fds[0], &byte, 1)
                log.value.append("readable \(Character(Unicode.Scalar(byte)))")
                loop.stop()
            }
        }
        XCTAssertEqual(source?.events, .writable)
        let echo = try loop.addReader(fd: fds[1]) {
            var byte: UInt8 = 0
            _ = read(fds[1], &byte, 1)
            _ = "y".withCString { write(fds[1], $0, 1) }
        }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log.value, ["writable", "readable y"])
        XCTAssertEqual(source?.events, .readable)
        XCTAssertThrowsError(try loop.addTimer(after: .seconds(1)) {}.setIOEvents(.readable)) { error in
            XCTAssertEqual((error as? RunLoopError)?.code, .invalidArgument)
        }
        source?.cancel()
        echo.cancel()
    }

    func testPerformFromLoopThreadRunsOnALaterTurnNotInline() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        loop.perform {
            log.value.append("outer")
            loop.perform { log.value.append("inner") }
            log.value.append("outer-end")
        }
        XCTAssertTrue(log.value.isEmpty, "perform before the loop runs must not run inline")
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(log.value, ["outer", "outer-end"], "work posted during a turn waits for the next turn")
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(log.value, ["outer", "outer-end", "inner"])
        XCTAssertEqual(loop.dispatchPending(), 0)
    }

    /// The owner's next step (`performNext`) runs at the start of the next turn, before work other
    /// threads queued earlier; what it adds runs at the turn after, in order.
    func testPerformNextRunsBeforeWorkOtherThreadsQueuedEarlier() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        onAnotherThread {
            for index in 0..<3 { loop.perform { log.value.append("posted \(index)") } }
        }
        loop.performNext {
            log.value.append("next 1")
            loop.performNext { log.value.append("next 3") }
        }
        loop.performNext { log.value.append("next 2") }
        XCTAssertTrue(log.value.isEmpty, "performNext never runs inline")
        loop.dispatchPending()
        XCTAssertEqual(log.value, ["next 1", "next 2", "posted 0", "posted 1", "posted 2"])
        loop.dispatchPending()
        XCTAssertEqual(log.value.last, "next 3")
        XCTAssertEqual(loop.dispatchPending(), 0)
    }

    /// A turn runs at most `postedSlice` of queued work (checked every 64 items): work that takes
    /// 64 ms in all is run over several turns, and a timer that falls due in between fires between two
    /// slices, not after the whole queue.
    func testQueuedWorkRunsInSlicesAndATimerFiresBetweenThem() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        let items = 640  // 0.1 ms each: 64 ms; a slice ends after 64 of them (6.4 ms)
        onAnotherThread {
            for index in 0..<items {
                loop.perform {
                    let start = MonotonicInstant.now
                    while MonotonicInstant.now.nanoseconds - start.nanoseconds < 100_000 {}
                    log.value.append("work \(index)")
                }
            }
        }
        loop.addTimer(after: .milliseconds(1)) { log.value.append("timer") }
        var turns = 0
        while log.value.count < items + 1 {
            loop.dispatchPending()
            turns += 1
            XCTAssertLessThan(turns, 1_000)
        }
        XCTAssertGreaterThanOrEqual(turns, 10, "64 ms of work took \(turns) turns")
        let timer = try XCTUnwrap(log.value.firstIndex(of: "timer"))
        XCTAssertLessThan(timer, items / 2, "the timer fired after \(timer) of \(items) items")
        XCTAssertEqual(log.value.filter { $0 != "timer" }, (0..<items).map { "work \($0)" }, "in order")
    }

    // MARK: Timers

    func testTimersFireInDeadlineOrderAndNotBeforeTheirDeadline() throws {
        let loop = try MainRunLoop()
        let start = MonotonicInstant.now
        var fired: [Int] = []
        var early = 0
        for ms in [30, 10, 20] {
            let deadline = start + .milliseconds(ms)
            loop.addTimer(at: deadline) {
                if MonotonicInstant.now < deadline { early += 1 }
                fired.append(ms)
                if fired.count == 3 { loop.stop() }
            }
        }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(fired, [10, 20, 30])
        XCTAssertEqual(early, 0)
    }

    func testEqualDeadlinesFireInCreationOrderAndCancelWithinATurnTakesEffect() throws {
        let loop = try MainRunLoop()
        let deadline = MonotonicInstant.now + .milliseconds(20)
        var fired: [Int] = []
        var sources: [LoopSource] = []
        for index in 0..<8 {
            sources.append(loop.addTimer(at: deadline) {
                fired.append(index)
                // Cancelling a timer due in the same turn still prevents it.
                if index == 2 { sources[5].cancel() }
            })
        }
        loop.addTimer(at: deadline + .milliseconds(1)) { loop.stop() }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(fired, [0, 1, 2, 3, 4, 6, 7])
        XCTAssertFalse(sources[5].isActive)
        XCTAssertFalse(sources[0].isActive, "a one-shot timer is inactive once it fired")
    }

    func testRepeatingTimerFiresNTimesThenCancelsItselfFromItsOwnCallback() throws {
        let loop = try MainRunLoop()
        var count = 0
        var activeInsideAfterCancel = true
        var repeating: LoopSource?
        repeating = loop.addTimer(after: .milliseconds(1), repeating: .milliseconds(2)) {
            count += 1
            if count == 5 {
                repeating?.cancel()
                activeInsideAfterCancel = repeating?.isActive ?? true
                repeating?.cancel()  // idempotent
                // Leave time for a wrongly re-armed timer to fire again before stopping.
                loop.addTimer(after: .milliseconds(50)) { loop.stop() }
            }
        }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(count, 5)
        XCTAssertFalse(activeInsideAfterCancel)
        XCTAssertEqual(repeating?.isActive, false)
        XCTAssertNil(loop.nextTimerDeadline)
    }

    func testTimerCancelledBeforeFiringNeverFires() throws {
        let loop = try MainRunLoop()
        var fired = false
        let timer = loop.addTimer(after: .milliseconds(10)) { fired = true }
        XCTAssertTrue(timer.isActive)
        timer.cancel()
        XCTAssertFalse(timer.isActive)
        try loop.run(for: .milliseconds(60))
        XCTAssertFalse(fired)
    }

    func testRunUntilReturnsAtTheDeadline() throws {
        let loop = try MainRunLoop()
        let deadline = MonotonicInstant.now + .milliseconds(150)
        try loop.run(until: deadline)
        let end = MonotonicInstant.now
        XCTAssertGreaterThanOrEqual(end, deadline)
        XCTAssertLessThan(end, deadline + .seconds(1))
    }

    // MARK: Stop and reentrancy

    func testStopFromAnotherThreadEndsRun() throws {
        let loop = try MainRunLoop()
        let start = MonotonicInstant.now
        spawn(1) { _ in
            usleep(100_000)
            loop.stop()
        }
        try loop.run()
        let elapsed = MonotonicInstant.now.duration(since: start)
        XCTAssertGreaterThanOrEqual(elapsed, .milliseconds(90))
        XCTAssertLessThan(elapsed, .seconds(10))
    }

    func testStopInsideABatchKeepsTheRestQueuedInOrder() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[Int]>([])
        loop.perform { log.value.append(1); loop.stop() }
        loop.perform { log.value.append(2) }
        loop.perform { log.value.append(3) }
        try loop.run()
        XCTAssertEqual(log.value, [1], "run returns after the callback that called stop()")
        loop.perform { log.value.append(4); loop.stop() }
        try loop.run()
        XCTAssertEqual(log.value, [1, 2, 3, 4])
    }

    /// The queue is a chain of 1,024-item chunks: stops at the last item of a chunk, at the first of
    /// the next, and in the middle of one each leave the rest in order for the next run.
    func testStopsAtAndAcrossChunkBoundariesKeepTheRestInOrder() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[Int]>([])
        let total = 3_000
        let stops: Set<Int> = [1_023, 1_024, 1_500, 2_047]  // 0-based: last of chunk 1, first of chunk 2, …
        for item in 0..<total {
            loop.perform {
                log.value.append(item)
                if stops.contains(item) { loop.stop() }
            }
        }
        loop.perform { log.value.append(-1); loop.stop() }
        var runs = 0
        while log.value.last != -1, runs < 10 {
            try loop.run()
            runs += 1
        }
        XCTAssertEqual(runs, stops.count + 1)
        XCTAssertEqual(log.value, Array(0..<total) + [-1])
    }

    func testRunAndDispatchPendingFromInsideACallbackAreRefused() throws {
        let loop = try MainRunLoop()
        var runError: RunLoopError?
        var nestedDispatch = -1
        loop.addTimer(after: .zero) {
            do throws(RunLoopError) { try loop.run(for: .milliseconds(10)) } catch { runError = error }
            nestedDispatch = loop.dispatchPending()
        }
        loop.perform { /* pending work the nested dispatch must not steal */ }
        XCTAssertEqual(loop.dispatchPending(), 2)
        XCTAssertEqual(runError?.code, .reentrant)
        XCTAssertEqual(nestedDispatch, 0)
    }

    func testRunFromAnotherThreadThrowsNotOnLoopThread() throws {
        let loop = try MainRunLoop()
        let result = LoopConfined<RunLoopError.Code?>(nil)
        let done = DispatchSemaphore(value: 0)
        spawn(1) { _ in
            do throws(RunLoopError) { try loop.run(for: .milliseconds(1)) } catch { result.value = error.code }
            XCTAssertFalse(loop.isOnLoopThread)
            done.signal()
        }
        done.wait()
        XCTAssertEqual(result.value, .notOnLoopThread)
        XCTAssertTrue(loop.isOnLoopThread)
    }

    func testDeinitClosesTheLoopAndLeavesSourcesInert() throws {
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        defer { close(fds[0]); close(fds[1]) }
        weak var weakLoop: MainRunLoop?
        var epollFD: Int32 = -1
        var timer: LoopSource?
        var reader: LoopSource?
        do {
            let loop = try MainRunLoop()
            weakLoop = loop
            epollFD = loop.fileDescriptor
            timer = loop.addTimer(after: .seconds(60), repeating: .seconds(1)) {}
            reader = try loop.addReader(fd: fds[0]) {}
            loop.perform {}
        }
        XCTAssertNil(weakLoop, "sources and queued work must not keep the loop alive")
        XCTAssertEqual(fcntl(epollFD, F_GETFD), -1, "the epoll fd is closed")
        XCTAssertEqual(timer?.isActive, false)
        XCTAssertEqual(reader?.isActive, false)
        timer?.cancel()  // harmless once the loop is gone
        reader?.cancel()
    }

    // MARK: Readers

    func testReaderOnAPipeReadsWhatAnotherThreadWrites() throws {
        let loop = try MainRunLoop()
        var fds: [Int32] = [0, 0]
        XCTAssertEqual(pipe(&fds), 0)
        let (readEnd, writeEnd) = (fds[0], fds[1])
        defer { close(readEnd); close(writeEnd) }
        var received: [UInt8] = []
        var calls = 0
        var reader: LoopSource?
        reader = try loop.addReader(fd: readEnd) {
            calls += 1
            var buffer = [UInt8](repeating: 0, count: 64)
            let n = read(readEnd, &buffer, buffer.count)
            if n > 0 { received += buffer[0..<n] }
            if received.count >= 5 {
                reader?.cancel()
                loop.stop()
            }
        }
        spawn(1) { _ in
            usleep(20_000)
            _ = "hello".utf8CString.withUnsafeBufferPointer { write(writeEnd, $0.baseAddress, 5) }
        }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(String(decoding: received, as: UTF8.self), "hello")
        XCTAssertEqual(reader?.isActive, false)
        // Cancelled: more data does not call it again.
        let callsAtCancel = calls
        _ = "more".utf8CString.withUnsafeBufferPointer { write(writeEnd, $0.baseAddress, 4) }
        try loop.run(for: .milliseconds(30))
        XCTAssertEqual(calls, callsAtCancel)
        // The fd is no longer in the loop's epoll set, so it can be added again.
        let again = try loop.addReader(fd: readEnd) {}
        again.cancel()
    }

    func testAddReaderRejectsANegativeFd() throws {
        let loop = try MainRunLoop()
        XCTAssertThrowsError(try loop.addReader(fd: -1) {}) { error in
            XCTAssertEqual((error as? RunLoopError)?.code, .invalidArgument)
        }
    }

    // MARK: Signals

    func testSignalReachesCallbackWithSenderPID() throws {
        let loop = try MainRunLoop()
        var senders: [Int32] = []
        let source = try loop.addSignal(SIGUSR2) { sender in
            senders.append(sender)
            loop.stop()
        }
        defer { source.cancel() }
        // Thread-directed delivery: addSignal blocked SIGUSR2 in this (loop) thread only. XCTest and
        // Foundation started threads before this test that do not block it, so a process-directed
        // kill(getpid(), SIGUSR2) could land on one of them and kill the process. pthread_kill
        // (tgkill) keeps the signal pending on this thread, where the signalfd reads it; the kernel
        // still records our pid as the sender.
        XCTAssertEqual(pthread_kill(pthread_self(), SIGUSR2), 0)
        try loop.run(for: .seconds(10))
        XCTAssertEqual(senders, [getpid()])
        XCTAssertThrowsError(try loop.addSignal(SIGKILL) { _ in }) { error in
            XCTAssertEqual((error as? RunLoopError)?.code, .invalidArgument)
        }
    }

    // MARK: Nesting in a foreign loop

    private func pollReadable(_ fd: Int32, timeoutMS: Int32) -> Bool {
        var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        var result: Int32
        repeat { result = poll(&entry, 1, timeoutMS) } while result < 0 && errno == EINTR
        return result == 1 && entry.revents & Int16(POLLIN) != 0
    }

    func testForeignPollWakesForCrossThreadWorkAndForTimers() throws {
        let loop = try MainRunLoop()
        XCTAssertFalse(pollReadable(loop.fileDescriptor, timeoutMS: 0), "an idle loop is not readable")

        let ran = LoopConfined(0)
        spawn(1) { _ in
            usleep(20_000)
            loop.perform { ran.value += 1 }
        }
        XCTAssertTrue(pollReadable(loop.fileDescriptor, timeoutMS: 10_000))
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(ran.value, 1)
        XCTAssertFalse(pollReadable(loop.fileDescriptor, timeoutMS: 0), "drained")

        let deadline = MonotonicInstant.now + .milliseconds(50)
        var timerFired = false
        loop.addTimer(at: deadline) { timerFired = true }
        XCTAssertEqual(loop.nextTimerDeadline, deadline)
        XCTAssertFalse(pollReadable(loop.fileDescriptor, timeoutMS: 0))
        XCTAssertTrue(pollReadable(loop.fileDescriptor, timeoutMS: 10_000))
        XCTAssertGreaterThanOrEqual(MonotonicInstant.now, deadline)
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertTrue(timerFired)
        XCTAssertNil(loop.nextTimerDeadline)
        XCTAssertFalse(pollReadable(loop.fileDescriptor, timeoutMS: 0), "timer consumed and disarmed")
    }
    // MARK: Wake-ups (a producer signals only after a take found the queue empty)

    func testWorkQueuedDuringADispatchLeavesTheFdReadableAndRunsOnTheNextCall() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        onAnotherThread { loop.perform { log.value.append("a"); loop.perform { log.value.append("b") } } }
        XCTAssertTrue(pollReadable(loop.fileDescriptor, timeoutMS: 10_000))
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(log.value, ["a"])
        // No producer signalled "b" (the take had found work): the loop must have made the fd readable.
        XCTAssertTrue(pollReadable(loop.fileDescriptor, timeoutMS: 0), "queued work keeps the fd readable")
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(log.value, ["a", "b"])
        XCTAssertFalse(pollReadable(loop.fileDescriptor, timeoutMS: 0), "drained")
        // The loop is marked waiting again: the next cross-thread post signals.
        onAnotherThread { loop.perform { log.value.append("c") } }
        XCTAssertTrue(pollReadable(loop.fileDescriptor, timeoutMS: 10_000))
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(log.value, ["a", "b", "c"])
    }

    func testARunStoppedWithWorkQueuedLeavesTheFdReadableForAForeignPoller() throws {
        let loop = try MainRunLoop()
        let log = LoopConfined<[String]>([])
        onAnotherThread { loop.perform { log.value.append("a"); loop.perform { log.value.append("b") }; loop.stop() } }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log.value, ["a"])
        XCTAssertTrue(pollReadable(loop.fileDescriptor, timeoutMS: 0), "queued work keeps the fd readable")
        XCTAssertEqual(loop.dispatchPending(), 1)
        XCTAssertEqual(log.value, ["a", "b"])
        XCTAssertFalse(pollReadable(loop.fileDescriptor, timeoutMS: 0))
    }

    func testBurstsFromTwoThreadsWithPausesAreAllDeliveredWithoutALostWakeUp() throws {
        // Bursts and pauses make the loop alternate between takes that find work (no producer
        // signals) and takes that find the queue empty (the next post signals); a lost wake-up would
        // leave items queued while run waits, and show as a count short at the bound.
        let loop = try MainRunLoop()
        let bursts = 200, perBurst = 50, threads = 2
        let total = bursts * perBurst * threads
        let state = LoopConfined((ran: 0, next: [0, 0], outOfOrder: 0))
        spawn(threads) { producer in
            var index = 0
            for burst in 0..<bursts {
                for _ in 0..<perBurst {
                    let expected = index
                    loop.perform {
                        if state.value.next[producer] != expected { state.value.outOfOrder += 1 }
                        state.value.next[producer] = expected + 1
                        state.value.ran += 1
                        if state.value.ran == total { loop.stop() }
                    }
                    index += 1
                }
                if burst % 3 == 0 { usleep(UInt32(50 + producer * 70)) }
            }
        }
        let deadline = MonotonicInstant.now + .seconds(60)
        // Alternate the two ways of running the loop: run for a while, then poll as a foreign loop.
        while state.value.ran < total, MonotonicInstant.now < deadline {
            try loop.run(for: .milliseconds(2))
            if pollReadable(loop.fileDescriptor, timeoutMS: 5) { loop.dispatchPending() }
        }
        XCTAssertEqual(state.value.ran, total)
        XCTAssertEqual(state.value.outOfOrder, 0)
    }
}
