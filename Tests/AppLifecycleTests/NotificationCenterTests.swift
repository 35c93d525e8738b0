import Foundation
import Synchronization
import XCTest
@testable import AppLifecycle

final class NotificationCenterTests: XCTestCase {
    var loop: MainRunLoop!
    var center: AppNotificationCenter!
    let ping = try! NotificationName("com.example.ping")
    let pong = try! NotificationName("com.example.pong")

    override func setUpWithError() throws {
        loop = try MainRunLoop()
        center = AppNotificationCenter(loop: loop)
    }

    func testDeliveryInRegistrationOrderWithUserInfoAndSenderFilter() {
        var log: [String] = []
        final class Sender {}
        let a = Sender(), b = Sender()
        center.observe(ping) { log.append("1 \($0.userInfo)") }
        center.observe(ping, sender: NotificationSender(a)) { _ in log.append("2 from a") }
        center.observe(ping) { _ in log.append("3") }
        center.observe(pong) { _ in log.append("pong") }
        center.post(ping, sender: NotificationSender(a), userInfo: ["n": 1, "s": "x", "ok": true])
        center.post(ping, sender: NotificationSender(b))
        XCTAssertEqual(log, [#"1 {"n":1,"s":"x","ok":true}"#, "2 from a", "3", "1 {}", "3"])
    }

    func testRemovalFromInsideACallbackIsImmediateEvenForLaterObservers() {
        var log: [String] = []
        var tokens: [ObserverToken] = []
        tokens.append(center.observe(ping) { [unowned self] _ in
            log.append("first")
            XCTAssertTrue(self.center.removeObserver(tokens[0]))  // itself
            XCTAssertTrue(self.center.removeObserver(tokens[2]))  // a later one, in the same dispatch
        })
        tokens.append(center.observe(ping) { _ in log.append("second") })
        tokens.append(center.observe(ping) { _ in log.append("third") })
        center.post(ping)
        XCTAssertEqual(log, ["first", "second"], "once removeObserver returns, that observer is never called")
        center.post(ping)
        XCTAssertEqual(log, ["first", "second", "second"])
        XCTAssertEqual(center.observerCount(for: ping), 1)
        XCTAssertFalse(center.removeObserver(tokens[0]), "removing twice says so")
    }

    func testAdditionFromInsideACallbackTakesEffectFromTheNextPostIncludingNestedOnes() {
        var log: [String] = []
        var added = false
        center.observe(ping) { [unowned self] note in
            log.append("outer \(note.userInfo["depth"]?.intValue ?? 0)")
            if !added {
                added = true
                self.center.observe(self.ping) { note in log.append("new \(note.userInfo["depth"]?.intValue ?? 0)") }
                self.center.post(self.ping, userInfo: ["depth": 1])  // a nested post is a next post
            }
        }
        center.post(ping)
        XCTAssertEqual(log, ["outer 0", "outer 1", "new 1"])
        center.post(ping, userInfo: ["depth": 2])
        XCTAssertEqual(log.suffix(2), ["outer 2", "new 2"])
    }

    func testManyRemovalsDuringDispatchKeepOrderAfterCompaction() {
        var log: [Int] = []
        var tokens: [ObserverToken] = []
        for i in 0..<100 {
            tokens.append(center.observe(ping) { [unowned self] _ in
                log.append(i)
                // The first observer removes every even-numbered one after it, mid-dispatch.
                if i == 0 { for k in stride(from: 2, to: 100, by: 2) { self.center.removeObserver(tokens[k]) } }
            })
        }
        let odd = Array(stride(from: 1, to: 100, by: 2))
        center.post(ping)
        XCTAssertEqual(log, [0] + odd)
        log.removeAll()
        center.post(ping)
        XCTAssertEqual(log, [0] + odd, "compaction after the dispatch kept the order")
        XCTAssertEqual(center.observerCount(for: ping), 51)
    }

    func testFourThreadsOfTenThousandPostsAllArriveOnTheLoopThreadInEachThreadsOrder() throws {
        let names = try (0..<4).map { try NotificationName("com.example.thread\($0)") }
        var next = [Int](repeating: 0, count: 4)
        var outOfOrder = 0
        var offThread = 0
        var total = 0
        for t in 0..<4 {
            center.observe(names[t]) { [unowned self] note in
                if !self.loop.isOnLoopThread { offThread += 1 }
                let i = Int(note.userInfo["i"]?.intValue ?? -1)
                if i != next[t] { outOfOrder += 1 }
                next[t] = i + 1
                total += 1
            }
        }
        let center = self.center!
        let go = Atomic<Bool>(false)
        let threads = (0..<4).map { t in
            Thread {
                while !go.load(ordering: .acquiring) {}
                for i in 0..<10_000 { center.post(names[t], userInfo: ["i": .int(Int64(i))]) }
            }
        }
        threads.forEach { $0.start() }
        go.store(true, ordering: .releasing)
        let deadline = MonotonicInstant.now + .seconds(30)
        while total < 40_000, MonotonicInstant.now < deadline { try loop.run(until: MonotonicInstant.now + .milliseconds(10)) }
        XCTAssertEqual(total, 40_000)
        XCTAssertEqual(next, [10_000, 10_000, 10_000, 10_000])
        XCTAssertEqual(outOfOrder, 0)
        XCTAssertEqual(offThread, 0)
    }

    func testPostFromAnotherThreadIsNotDeliveredInline() throws {
        var delivered = false
        center.observe(ping) { _ in delivered = true }
        let center = self.center!, ping = self.ping
        let done = Atomic<Bool>(false)
        Thread { center.post(ping); done.store(true, ordering: .releasing) }.start()
        while !done.load(ordering: .acquiring) { usleep(100) }
        XCTAssertFalse(delivered, "posted from another thread: waits for the loop")
        loop.dispatchPending()
        XCTAssertTrue(delivered)
    }

    func testRemoveObserversByOwnerAndObservedNames() {
        var log: [String] = []
        center.observe(ping, owner: "com.example.plugin") { _ in log.append("plugin ping") }
        center.observe(pong, owner: "com.example.plugin") { _ in log.append("plugin pong") }
        center.observe(ping, owner: "other") { _ in log.append("other") }
        XCTAssertEqual(center.observedNames(owner: "com.example.plugin"), [ping, pong])
        XCTAssertEqual(center.removeObservers(owner: "com.example.plugin"), 2)
        center.post(ping)
        center.post(pong)
        XCTAssertEqual(log, ["other"])
    }

    func testAsyncSequenceDeliversInOrder() async throws {
        let loop = try MainRunLoop()
        let center = AppNotificationCenter(loop: loop)
        let stream = center.notifications(named: ping)
        for i in 0..<5 { center.post(ping, userInfo: ["i": .int(Int64(i))]) }
        var got: [Int64] = []
        for try await note in stream {
            got.append(note.userInfo["i"]?.intValue ?? -1)
            if got.count == 5 { break }
        }
        XCTAssertEqual(got, [0, 1, 2, 3, 4])
        _ = loop
    }

    func testBoundedAsyncSequenceNeverDropsSilently() async throws {
        let loop = try MainRunLoop()
        let center = AppNotificationCenter(loop: loop)
        let stream = center.notifications(named: ping, bufferPolicy: .bounded(3))
        for i in 0..<5 { center.post(ping, userInfo: ["i": .int(Int64(i))]) }
        XCTAssertEqual(center.observerCount(for: ping), 1)
        var got: [Int64] = []
        var failure: String?
        do {
            for try await note in stream { got.append(note.userInfo["i"]?.intValue ?? -1) }
        } catch {
            failure = "\(error)"
        }
        XCTAssertEqual(got, [0, 1, 2], "the buffered ones first")
        XCTAssertEqual(failure, "notification stream for 'com.example.ping' overflowed its buffer of 3; the stream ended (no notification was dropped silently: this error marks where delivery stopped)")
        loop.dispatchPending()  // the overflow removed the observer through the loop
        XCTAssertEqual(center.observerCount(for: ping), 0)
    }
}
