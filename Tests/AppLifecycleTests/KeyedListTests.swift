import XCTest
@testable import AppLifecycle

/// The connected scenes and the scene sessions are found by id in O(1) and removed without shifting
/// the rest (`KeyedList`): the order stays the order of addition, and the holes a removal leaves never
/// outnumber the elements by more than the threshold at which they are closed.
final class KeyedListTests: XCTestCase {
    private func session(_ id: String) -> SceneSession { SceneSession(persistentIdentifier: id) }

    private func ids(_ list: KeyedList<SceneSession>) -> [String] { list.map(\.persistentIdentifier) }

    func testRemovingInAnyOrderKeepsTheRestInOrderAndFoundByKey() {
        let n = 1_000
        var generator = SplitMix64(seed: 19)
        let orders: [(String, [Int])] = [
            ("first to last", Array(0..<n)),
            ("last to first", Array((0..<n).reversed())),
            ("shuffled", Array(0..<n).shuffled(using: &generator)),
        ]
        for (label, order) in orders {
            var list = KeyedList<SceneSession>()
            for index in 0..<n { list.append(session("s\(index)")) }
            var live = Array(0..<n)
            for (step, index) in order.enumerated() {
                XCTAssertEqual(list.remove(key: "s\(index)")?.persistentIdentifier, "s\(index)", "\(label), step \(step)")
                live.removeAll { $0 == index }
                XCTAssertNil(list["s\(index)"], "\(label): s\(index) is gone")
                XCTAssertFalse(list.contains(key: "s\(index)"))
                XCTAssertEqual(list.count, live.count)
                XCTAssertLessThanOrEqual(list.storedSlots - list.count, max(15, list.count + 1),
                                         "\(label), step \(step): the holes are closed once they are half the slots")
                if step % 97 == 0 || live.count < 3 {
                    XCTAssertEqual(ids(list), live.map { "s\($0)" }, "\(label), step \(step)")
                    XCTAssertEqual(list.elements.map(\.persistentIdentifier), live.map { "s\($0)" })
                    XCTAssertEqual(list.first?.persistentIdentifier, live.first.map { "s\($0)" })
                    for probe in live.prefix(5) + live.suffix(5) { XCTAssertEqual(list["s\(probe)"]?.persistentIdentifier, "s\(probe)") }
                }
            }
            XCTAssertTrue(list.isEmpty)
            XCTAssertNil(list.first)
            XCTAssertNil(list.remove(key: "s0"), "\(label): removing twice finds nothing")
        }
    }

    func testRemovingTheFirstLeavesAHoleAndShiftsNothing() {
        var list = KeyedList<SceneSession>()
        for index in 0..<100 { list.append(session("s\(index)")) }
        list.remove(key: "s0")
        XCTAssertEqual(list.storedSlots, 100, "a hole, not a shift of the 99 after it")
        XCTAssertEqual(list.first?.persistentIdentifier, "s1")
        for index in 1..<50 { list.remove(key: "s\(index)") }
        XCTAssertEqual(list.storedSlots, 50, "the 50 holes were closed at once when they became half the slots")
        XCTAssertEqual(ids(list), (50..<100).map { "s\($0)" })
        list.append(session("s0"))  // a removed key may come back, at the end
        XCTAssertEqual(ids(list).last, "s0")
        XCTAssertEqual(list["s0"]?.persistentIdentifier, "s0")
        list.removeAll()
        XCTAssertEqual(list.storedSlots, 0)
        XCTAssertTrue(ids(list).isEmpty)
    }

    func testUpdateChangesTheElementInPlaceAndIterationSeesTheListAsItWas() {
        var list = KeyedList<SceneSession>()
        for index in 0..<3 { list.append(session("s\(index)")) }
        XCTAssertTrue(list.update(key: "s1") { $0.userInfo = ["k": 1] })
        XCTAssertFalse(list.update(key: "nope") { $0.userInfo = ["k": 2] })
        XCTAssertEqual(list["s1"]?.userInfo, ["k": 1])
        XCTAssertEqual(ids(list), ["s0", "s1", "s2"])
        var seen: [String] = []
        for element in list {
            seen.append(element.persistentIdentifier)
            list.remove(key: "s2")  // the loop goes on over the list as it was when it began
        }
        XCTAssertEqual(seen, ["s0", "s1", "s2"])
        XCTAssertEqual(ids(list), ["s0", "s1"])
    }

    /// An application with many scenes: every lookup by id, and the application's own state, which
    /// follows whether any scene is in the foreground (now a count, not a walk over the scenes).
    func testManyScenesAreFoundByIdAndTheApplicationLeavesTheForegroundWithTheLastForegroundScene() throws {
        let h = try Harness.scenes()
        try h.launch()
        let n = 200
        for index in 0..<n { try h.perform(.connectScene("s\(index)")) }
        XCTAssertEqual(h.app.scenes.count, n + 1)
        // Every other scene closed in the app switcher: its session is discarded too.
        for index in stride(from: 0, to: n, by: 2) { try h.perform(.closeScene("s\(index)")) }
        let left = ["main"] + stride(from: 1, to: n, by: 2).map { "s\($0)" }
        XCTAssertEqual(h.app.scenes.map(\.id), left)
        XCTAssertEqual(h.app.sceneSessions.map(\.persistentIdentifier), left)
        XCTAssertNil(h.app.scene(id: "s0"))
        XCTAssertNil(h.app.sceneSession(id: "s0"))
        XCTAssertEqual(h.app.scene(id: "s199")?.state, .foregroundActive)
        // The application stays active until its last active scene resigns, and in the foreground
        // until its last foreground scene leaves.
        for id in left.dropLast() { try h.perform(.deactivateScene(id)) }
        XCTAssertEqual(h.app.state, .active)
        try h.perform(.deactivateScene(left.last!))
        XCTAssertEqual(h.app.state, .inactive)
        for id in left.dropLast() { try h.perform(.moveSceneToBackground(id)) }
        XCTAssertEqual(h.app.state, .inactive)
        let last = try h.perform(.moveSceneToBackground(left.last!))
        XCTAssertEqual(Array(last.prefix(2)), ["scene-state background {\(left.last!)}", "state background"])
        // Nothing keeps it running: the application and every scene are suspended at the action's end.
        XCTAssertEqual(Set(h.app.scenes.map(\.state)), [.suspended])
        XCTAssertEqual(h.app.state, .suspended)
    }
}

extension KeyedListTests {
    /// Open background tasks are found by id (ending one is O(1), whatever how many are open) and
    /// stay in the order they began: the listing, the expiration warnings (a handler that ends a
    /// later task keeps that task's handler from running), the owners' counts.
    func testManyBackgroundTasksEndInAnyOrderAndExpireInTheOrderTheyBegan() throws {
        let h = try Harness {
            $0.budgets.backgroundTask = .milliseconds(300)
            $0.budgets.expirationWarning = .milliseconds(100)
        }
        try h.launch()
        let n = 1_000
        var ids: [BackgroundTaskID] = []
        var expired: [UInt64] = []
        for index in 0..<n {
            ids.append(try h.app.beginBackgroundTask(named: "t\(index)", owner: index % 2 == 0 ? "even" : "odd") { [unowned h] in
                expired.append(ids[index].rawValue)
                // The handler of each task that is a multiple of 10 ends the task after it.
                if index % 10 == 0, index + 1 < n { try? h.app.endBackgroundTask(ids[index + 1]) }
            })
        }
        var generator = SplitMix64(seed: 23)
        let ended = Array(ids.indices).shuffled(using: &generator).prefix(n / 2).filter { $0 % 10 != 0 && $0 % 10 != 1 }
        for index in ended { try h.app.endBackgroundTask(ids[index]) }
        XCTAssertThrowsError(try h.app.endBackgroundTask(ids[ended[0]]), "an ended task is unknown")
        let open = ids.indices.filter { !Set(ended).contains($0) }
        XCTAssertEqual(h.app.backgroundTasks.map(\.name), open.map { "t\($0)" })
        XCTAssertEqual(h.app.backgroundTaskCount(owner: "even") + h.app.backgroundTaskCount(owner: "odd"), open.count)
        try h.perform(.home)
        try h.runLoop(until: { h.app.state != .background })
        // Every open task's handler ran, in the order they began, except the tasks ended by the
        // handler before them.
        let warned = open.filter { !($0 % 10 == 1) }
        XCTAssertEqual(expired, warned.map { ids[$0].rawValue })
    }
}
