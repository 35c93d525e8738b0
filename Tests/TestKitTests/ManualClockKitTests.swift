import Foundation
import LifecycleTestKit
import TestSupport
import XCTest

/// The manual clock under the kit: a plugin whose background task is ended only by its expiration
/// handler is tested over the whole 30 s of background time, in no real time; the same steps give the
/// same events, at the same clock times, every run.
final class ManualClockKitTests: XCTestCase {
    /// Fixtures/uploader.c: begins a background task on didEnterBackground, ends it in its expiration
    /// handler only.
    private func uploader() throws -> (plugin: String, folder: String) {
        let folder = try CBuild.temporaryFolder("testkit-clock")
        let plugin = try CBuild.sharedObject(file: CBuild.root + "/Tests/TestKitTests/Fixtures/uploader.c", named: "uploader", in: folder)
        return (plugin, folder)
    }

    /// The run's events after the launch, as "TIME kind name [observer]" lines.
    private func runOnce(_ plugin: String) throws -> [String] {
        let harness = try LifecycleHarness()
        harness.load(plugin)
        harness.perform(.launch)
        harness.perform(.home)
        harness.expectEvent(kind: "background-task", name: "begin", observer: "com.example.uploader")
        harness.advance(by: 24.999)
        harness.expectNothingMore() // 30 s of background time, the handler warned 5 s before: not yet
        harness.advance(by: 0.001)
        harness.expectEvent(kind: "background-task", name: "expiring", observer: "com.example.uploader")
        harness.expectEvent(kind: "background-task", name: "end", observer: "com.example.uploader")
        harness.expectState(.suspended)
        harness.expectNothingMore()
        XCTAssertEqual(harness.failures, 0)
        return harness.events.drop { $0.kind != "state" || $0.name != "background" }.map { "\($0.time) \($0.kind) \($0.name)" }
    }

    func testThirtySecondsOfBackgroundTimeTakeNoRealTimeAndRepeatExactly() throws {
        let (plugin, folder) = try uploader()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let started = Date()
        let first = try runOnce(plugin)
        let second = try runOnce(plugin)
        let elapsed = Date().timeIntervalSince(started)
        XCTAssertLessThan(elapsed, 5, "two runs over 25 s of the manual clock took \(elapsed) s of real time")
        XCTAssertEqual(first, [
            "0.0 state background", "0.0 notification didEnterBackground", "0.0 background-task begin",
            "25.0 background-task expiring", "25.0 background-task end", "25.0 state suspended",
        ])
        XCTAssertEqual(second, first)
    }
}
