import XCTest
@testable import AppLifecycle

/// Removing observers one by one, in any order, costs O(1) amortised (a tombstone, compacted once
/// tombstones are half the list) plus an O(log n) search, and never changes who is called or in what
/// order: what a plugin removing its observers, or a C program removing 100,000, relies on.
final class ObserverRemovalTests: XCTestCase {
    var loop: MainRunLoop!
    var center: AppNotificationCenter!
    let ping = try! NotificationName("com.example.removal.ping")

    override func setUpWithError() throws {
        loop = try MainRunLoop()
        center = AppNotificationCenter(loop: loop)
    }

    /// A C observer that appends its context (an index) to `ObserverRemovalTests.called`.
    nonisolated(unsafe) static var called: [Int] = []
    static let record: RawObserverFunction = { _, context in
        ObserverRemovalTests.called.append(Int(bitPattern: context))
    }

    /// The deterministic shuffle every test uses (a linear congruential generator, fixed seed).
    func shuffled(_ n: Int) -> [Int] {
        var list = Array(0..<n)
        var state: UInt64 = 42
        for i in stride(from: n - 1, to: 0, by: -1) {
            state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            list.swapAt(i, Int((state >> 33) % UInt64(i + 1)))
        }
        return list
    }

    /// Registers `n` observers of `ping`: C functions (context = index) or, with `swift`, closures
    /// appending their index, alternating when `mixed`.
    func register(_ n: Int, swift: Bool = false, mixed: Bool = false) -> [ObserverToken] {
        (0..<n).map { index in
            if swift || (mixed && index % 2 == 1) {
                return center.observe(ping) { _ in ObserverRemovalTests.called.append(index) }
            }
            return center.observeRaw(ping, function: Self.record, context: UnsafeMutableRawPointer(bitPattern: index))
        }
    }

    func post() -> [Int] {
        Self.called = []
        center.post(ping)
        return Self.called
    }

    func testRemovingInRegistrationReverseAndShuffledOrderKeepsTheRestInRegistrationOrder() {
        let n = 2_000
        for (kind, swift, mixed) in [("C", false, false), ("Swift", true, false), ("mixed", false, true)] {
            center = AppNotificationCenter(loop: loop)
            for (label, order) in [("registration", Array(0..<n)), ("reverse", Array((0..<n).reversed())), ("shuffled", shuffled(n))] {
                let tokens = register(n, swift: swift, mixed: mixed)
                var live = Set(0..<n)
                // In steps of 97, with a post after each: every post calls exactly the survivors, in order.
                for start in stride(from: 0, to: n, by: 97) {
                    for index in order[start..<min(start + 97, n)] {
                        XCTAssertTrue(center.removeObserver(tokens[index]), "\(kind), \(label): removing \(index)")
                        live.remove(index)
                    }
                    XCTAssertEqual(post(), live.sorted(), "\(kind), \(label): after \(n - live.count) removals")
                    XCTAssertEqual(center.observerCount(for: ping), live.count)
                }
                XCTAssertEqual(center.observerCount(for: ping), 0)
                for token in tokens { XCTAssertFalse(center.removeObserver(token), "\(kind), \(label): removing twice says so") }
            }
        }
    }

    func testEveryTokenStaysFoundAcrossTombstonesAndCompactionsWithoutAPost() {
        let n = 10_000
        let tokens = register(n)
        let order = shuffled(n)
        var removed = Set<Int>()
        for (step, index) in order.enumerated() {
            XCTAssertTrue(center.removeObserver(tokens[index]))
            removed.insert(index)
            // Now and then, every token: the removed are gone, the others found, whatever was compacted.
            if step % 1_111 == 0 || step == n / 2 || step == n / 2 + 1 {
                for probe in 0..<n {
                    XCTAssertEqual(center.isObserver(tokens[probe], ownedBy: ""), !removed.contains(probe), "token \(probe) after \(step + 1) removals")
                }
            }
        }
        XCTAssertEqual(post(), [])
    }

    func testARemovalShiftsNothingAndTombstonesNeverOutnumberTheLiving() throws {
        let n = 1_000
        let tokens = register(n)
        let list = try XCTUnwrap(center.list(ping.id))
        XCTAssertTrue(center.removeObserver(tokens[0]))
        XCTAssertEqual(list.pointee.count, n, "removing the first entry leaves a tombstone: no shift of the 999 after it")
        XCTAssertEqual(list.pointee.tombstones, 1)
        for index in 1..<n - 1 {
            XCTAssertTrue(center.removeObserver(tokens[index]))
            XCTAssertLessThanOrEqual(list.pointee.tombstones, list.pointee.count / 2 + 1,
                                     "compacted once tombstones are half the list (after \(index + 1) removals)")
            XCTAssertEqual(list.pointee.liveCount, n - index - 1)
        }
        XCTAssertEqual(post(), [n - 1])
        XCTAssertTrue(center.removeObserver(tokens[n - 1]))
        XCTAssertEqual(list.pointee.count, 0, "the last entry and the tombstones before it are dropped at once")
        XCTAssertEqual(list.pointee.tombstones, 0)
        XCTAssertEqual(MemoryLayout<ObserverMeta>.stride, 24, "the removed flag sits in the padding")
    }

    func testReverseOrderDropsTheTailAndTheTombstonesBeforeIt() throws {
        let tokens = register(10)
        let list = try XCTUnwrap(center.list(ping.id))
        for index in [3, 7, 8] { XCTAssertTrue(center.removeObserver(tokens[index])) }
        XCTAssertEqual(list.pointee.count, 10)
        XCTAssertEqual(list.pointee.tombstones, 3)
        XCTAssertTrue(center.removeObserver(tokens[9]))
        XCTAssertEqual(list.pointee.count, 7, "entry 9 and the tombstones of 8 and 7 dropped")
        XCTAssertEqual(list.pointee.tombstones, 1, "the tombstone of 3 stays")
        XCTAssertEqual(post(), [0, 1, 2, 4, 5, 6])
        XCTAssertEqual(list.pointee.tombstones, 0, "a post compacts the list it ran on")
        XCTAssertEqual(list.pointee.count, 6)
    }

    func testRemovalsBeforeAndDuringADispatchTogether() {
        let n = 100
        var tokens: [ObserverToken] = []
        var log: [Int] = []
        for index in 0..<n {
            tokens.append(center.observe(ping) { [unowned self] _ in
                log.append(index)
                // Observer 10 removes every observer from 50 on, the later ones before they run.
                if index == 10 { for later in 50..<n { _ = self.center.removeObserver(tokens[later]) } }
            })
        }
        // Tombstones left before the dispatch: every odd observer under 50.
        for index in stride(from: 1, to: 50, by: 2) { XCTAssertTrue(center.removeObserver(tokens[index])) }
        center.post(ping)
        XCTAssertEqual(log, Array(stride(from: 0, to: 50, by: 2)))
        log = []
        center.post(ping)
        XCTAssertEqual(log, Array(stride(from: 0, to: 50, by: 2)))
        XCTAssertEqual(center.observerCount(for: ping), 25)
        // And after it: a new observer comes last, the old tokens still found.
        center.observe(ping) { _ in log.append(1_000) }
        XCTAssertTrue(center.removeObserver(tokens[48]))
        log = []
        center.post(ping)
        XCTAssertEqual(log, Array(stride(from: 0, to: 48, by: 2)) + [1_000])
    }

    func testRemovingAnOwnersObserversClearsTheTombstonesOfOthersToo() throws {
        var tokens: [ObserverToken] = []
        for index in 0..<20 {
            tokens.append(center.observe(ping, owner: index % 2 == 0 ? "com.example.even" : "com.example.odd") { _ in
                ObserverRemovalTests.called.append(index)
            })
        }
        let list = try XCTUnwrap(center.list(ping.id))
        XCTAssertTrue(center.removeObserver(tokens[1], owner: "com.example.odd"))
        XCTAssertFalse(center.removeObserver(tokens[2], owner: "com.example.odd"), "another owner's observer")
        XCTAssertEqual(center.removeObservers(owner: "com.example.even"), 10)
        XCTAssertEqual(list.pointee.tombstones, 0)
        XCTAssertEqual(list.pointee.count, 9)
        XCTAssertEqual(post(), [3, 5, 7, 9, 11, 13, 15, 17, 19])
        XCTAssertEqual(center.observerCount(owner: "com.example.odd"), 9)
        XCTAssertEqual(center.observedNames(owner: "com.example.even"), [])
        XCTAssertEqual(center.observedNames(owner: "com.example.odd"), [ping])
    }

    /// What `recordOwner` saw: each call's index and the owner marked in the probe while it ran.
    nonisolated(unsafe) static var marked: [String] = []
    nonisolated(unsafe) static var probe: CallbackProbe?
    nonisolated(unsafe) static var hook: (() -> Void)?
    static let growing: RawObserverFunction = { _, _ in
        ObserverRemovalTests.marked.append("grow:\(ObserverRemovalTests.probe?.running()?.innermost.owner ?? "?")")
        ObserverRemovalTests.hook?()
    }
    static let recordOwner: RawObserverFunction = { _, context in
        ObserverRemovalTests.marked.append("\(Int(bitPattern: context)):\(ObserverRemovalTests.probe?.running()?.innermost.owner ?? "?")")
    }

    /// The C-only loop marks the owner in the callback probe once a run of one owner's observers (the
    /// watchdog names the plugin by it): with owners interleaved, after a removal and its compaction,
    /// after the tail's drop, and with observers added during a dispatch, every call runs marked with
    /// its own owner, in registration order.
    func testEveryCObserverRunsMarkedWithItsOwnOwner() {
        Self.probe = center.probe
        var tokens: [ObserverToken] = []
        func add(_ index: Int, _ owner: String) {
            tokens.append(center.observeRaw(ping, owner: owner, function: Self.recordOwner, context: UnsafeMutableRawPointer(bitPattern: index)))
        }
        func posted() -> [String] {
            Self.marked = []
            center.post(ping)
            return Self.marked
        }
        for (index, owner) in ["a", "a", "b", "a", "b", "b", "c"].enumerated() { add(index + 1, owner) }
        XCTAssertEqual(posted(), ["1:a", "2:a", "3:b", "4:a", "5:b", "6:b", "7:c"])
        XCTAssertTrue(center.removeObserver(tokens[2], owner: "b"))  // 3: the runs a and a meet
        XCTAssertTrue(center.removeObserver(tokens[4], owner: "b"))
        XCTAssertTrue(center.removeObserver(tokens[5], owner: "b"))  // tombstones outnumber: compacted
        XCTAssertEqual(posted(), ["1:a", "2:a", "4:a", "7:c"])
        XCTAssertTrue(center.removeObserver(tokens[6], owner: "c"))  // the tail dropped
        add(8, "d")
        XCTAssertEqual(posted(), ["1:a", "2:a", "4:a", "8:d"])
        // Added during a dispatch (by a C observer of owner e): not called by it, called by the next,
        // marked as its owner's.
        Self.hook = { add(9, "a"); ObserverRemovalTests.hook = nil }
        let grow = center.observeRaw(ping, owner: "e", function: Self.growing, context: nil)
        XCTAssertEqual(posted(), ["1:a", "2:a", "4:a", "8:d", "grow:e"])
        XCTAssertEqual(posted(), ["1:a", "2:a", "4:a", "8:d", "grow:e", "9:a"])
        XCTAssertTrue(center.removeObserver(grow, owner: "e"))
        XCTAssertEqual(posted(), ["1:a", "2:a", "4:a", "8:d", "9:a"])
    }
}
