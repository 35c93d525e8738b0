import XCTest
@testable import AppLifecycle

/// The seed readings corrected by issue 9 ("Seed readings to correct"): each test names its seed and
/// asserts the exact order, or the exact state, an application relies on.
final class SeedReadingTests: XCTestCase {
    // MARK: 1. A wake from suspension gets didEnterBackground before the event

    // seed 002 (application:didReceiveRemoteNotification:fetchCompletionHandler:): "the system wakes up
    // or launches your app and puts it into the background running state before calling the method";
    // Apple, "About the background execution sequence": resume, applicationDidEnterBackground, then the event.
    func testSeed002WakeFromSuspensionDeliversDidEnterBackgroundBeforeTheFetch() throws {
        let h = try Harness { $0.backgroundModes = [.fetch] }
        try h.launch()
        try h.perform(.home)
        try h.perform(.significantTimeChange)
        XCTAssertEqual(try h.perform(.backgroundFetch), [
            "state background",
            "notification significantTimeChange",  // queued notifications first, as on every resume
            "delegate applicationSignificantTimeChange: [a]",
            "delegate applicationDidEnterBackground: [a]",
            "notification didEnterBackground",
            "delegate application:performFetchWithCompletionHandler: [a]",
        ])
        XCTAssertTrue(h.seen.suffix(3).elementsEqual([
            "a applicationDidEnterBackground: state=background", "note didEnterBackground",
            "a application:performFetchWithCompletionHandler: state=background",
        ]))
        h.completions[0](.noData)
        XCTAssertEqual(h.app.state, .suspended)
    }

    // seed 002: as above, for a remote notification waking a suspended application.
    func testSeed002WakeFromSuspensionDeliversDidEnterBackgroundBeforeTheRemoteNotification() throws {
        let h = try Harness { $0.backgroundModes = [.remoteNotification] }
        try h.launch()
        try h.perform(.home)
        XCTAssertEqual(try h.perform(.remoteNotification(["b": 2])), [
            "state background",
            "delegate applicationDidEnterBackground: [a]",
            "notification didEnterBackground",
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
        ])
        // A running application is not "woken": the event alone.
        _ = try h.app.beginBackgroundTask(named: "hold")
        h.completions[0](.noData)
        XCTAssertEqual(h.app.state, .background)
        XCTAssertEqual(try h.perform(.remoteNotification(["c": 3])), [
            "delegate application:didReceiveRemoteNotification:fetchCompletionHandler: [a]",
        ])
    }
}
