import Foundation
import XCTest
@testable import AppLifecycle

/// Posts from other threads travel to the loop addressed to their own center (issue: one shared
/// slot on the loop delivered a post to the wrong application, and a post queued for an application
/// released meanwhile aborted the process).
final class CrossThreadRoutingTests: XCTestCase {
    let ping = try! NotificationName("com.example.ping")

    /// Runs `body` on a new thread and waits for it.
    private func onAnotherThread(_ body: @escaping @Sendable () -> Void) {
        let finished = DispatchSemaphore(value: 0)
        Thread {
            body()
            finished.signal()
        }.start()
        finished.wait()
    }

    func testTwoApplicationsOnOneLoopEachReceiveOnlyTheirOwnCrossThreadPosts() throws {
        let loop = try MainRunLoop()
        let first = Application(loop: loop), second = Application(loop: loop)
        try first.perform(.launch())
        try second.perform(.launch())
        var log: [String] = []
        first.center.observe(ping) { note in log.append("first \(note.userInfo["n"]?.intValue ?? -1)") }
        second.center.observe(ping) { note in log.append("second \(note.userInfo["n"]?.intValue ?? -1)") }
        let firstCenter = first.center, secondCenter = second.center, name = ping
        onAnotherThread {
            firstCenter.post(name, userInfo: ["n": 1])
            secondCenter.post(name, userInfo: ["n": 2])
            firstCenter.post(name, userInfo: ["n": 3])
            loop.perform { loop.stop() }
        }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log, ["first 1", "second 2", "first 3"])
    }

    func testReleasingAnApplicationWithPostsQueuedDropsThemSafely() throws {
        let loop = try MainRunLoop()
        var doomed: Application? = Application(loop: loop)
        let survivor = Application(loop: loop)
        try doomed?.perform(.launch())
        try survivor.perform(.launch())
        var log: [String] = []
        doomed?.center.observe(ping) { _ in log.append("doomed") }
        survivor.center.observe(ping) { _ in log.append("survivor") }
        final class Handover: @unchecked Sendable { var center: AppNotificationCenter? }
        let handover = Handover()
        handover.center = doomed?.center
        let survivorCenter = survivor.center, name = ping
        onAnotherThread {
            for _ in 0..<100 { handover.center?.post(name) }
            handover.center = nil  // the producer lets go of it once its posts are queued
            survivorCenter.post(name)
        }
        // Released on the loop thread while its 100 posts wait in the loop's queue.
        weak let goneCenter = doomed?.center
        doomed = nil
        XCTAssertNil(goneCenter, "the application and its center are gone before the loop runs")
        loop.perform { loop.stop() }
        try loop.run(for: .seconds(10))
        XCTAssertEqual(log, ["survivor"])
    }
}
