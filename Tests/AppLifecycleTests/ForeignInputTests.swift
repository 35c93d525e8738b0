import Foundation
import LifecycleRunLoop
import Synchronization
import XCTest
@testable import AppLifecycle

/// The foreign-input gate (`Application.foreignInputGate`, what `run --record` and `replay` order):
/// posts, queued work and a task's end from other threads are handed to it instead of run, each run
/// when (and only when) the gate runs it, once; without a gate they run on arrival as before.
final class ForeignInputTests: XCTestCase {
    private let foreign = try! NotificationName("com.example.foreign")

    private func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
        let done = DispatchSemaphore(value: 0)
        Thread {
            body()
            done.signal()
        }.start()
        done.wait()
    }

    func testPostsAndWorkFromOtherThreadsGoToTheGateAndRunWhenItRunsThem() throws {
        let h = try Harness()
        try h.launch()
        var delivered = 0
        h.app.center.observe(foreign, owner: "com.example.observer") { _ in delivered += 1 }
        var held: [ForeignInput] = []
        h.app.foreignInputGate = { held.append($0) }

        let center = h.app.center, name = foreign
        onAnotherThread { _ = center.post(name, sender: .none, userInfo: UserInfo()) }
        let owner = WorkOwner("com.example.worker")
        let work: RawWorkFunction = { context in
            Unmanaged<AtomicBox>.fromOpaque(context!).takeUnretainedValue().value.add(1, ordering: .relaxed)
        }
        let box = AtomicBox()
        let context = Unmanaged.passRetained(box).toOpaque()
        defer { Unmanaged<AtomicBox>.fromOpaque(context).release() }
        let address = UInt(bitPattern: context)
        onAnotherThread { _ = center.enqueueWork(work, context: UnsafeMutableRawPointer(bitPattern: address), owner: owner) }
        try h.loop.run(for: .milliseconds(50))

        XCTAssertEqual(held.map(\.kind), [.post(name), .work(owner: "com.example.worker")])
        XCTAssertEqual(held.map(\.kind.description), ["post com.example.foreign", "work com.example.worker"])
        XCTAssertEqual(delivered, 0, "held, not delivered")
        XCTAssertEqual(box.value.load(ordering: .relaxed), 0)
        XCTAssertEqual(owner.queuedWork, 1, "still queued until it runs")
        held[1].run()
        held[0].run()
        held[0].run()  // once only
        XCTAssertEqual(box.value.load(ordering: .relaxed), 1)
        XCTAssertEqual(owner.queuedWork, 0)
        XCTAssertEqual(delivered, 1)

        // Without a gate: delivered on arrival.
        h.app.foreignInputGate = nil
        onAnotherThread { _ = center.post(name, sender: .none, userInfo: UserInfo()) }
        try h.loop.run(for: .milliseconds(50))
        XCTAssertEqual(delivered, 2)
    }

    func testAnEndFromAnotherThreadGoesToTheGate() throws {
        let h = try Harness()
        try h.launch()
        let task = try h.app.beginBackgroundTask(named: "upload", owner: "com.example.tasks")
        try h.perform(.home)
        var held: [ForeignInput] = []
        h.app.foreignInputGate = { held.append($0) }
        let app = h.app
        onAnotherThread {
            app.performForeign(.endBackgroundTask(task)) { try? app.endBackgroundTask(task) }
        }
        try h.loop.run(for: .milliseconds(50))
        XCTAssertEqual(held.map(\.kind.description), ["end-background-task #\(task.rawValue)"])
        XCTAssertEqual(h.app.backgroundTaskCount(owner: "com.example.tasks"), 1, "not ended until it runs")
        held[0].run()
        XCTAssertEqual(h.app.backgroundTaskCount(owner: "com.example.tasks"), 0)
    }
}

private final class AtomicBox: Sendable {
    let value = Atomic<Int>(0)
}
