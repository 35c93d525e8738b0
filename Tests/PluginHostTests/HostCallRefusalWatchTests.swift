import CLifecycleABI
import Foundation
import Synchronization
import XCTest
@testable import PluginHost

/// The refusal watch `validate` installs (`HostCallRefusals`) costs the same at the 20,000th refused
/// call as at the first. Its handler used to be read out of a `Mutex` as a bare closure, which wrapped
/// it in two more reabstraction thunks at every read: the N-th refusal ran through 2N thunks, so a
/// plugin flooding refused calls (11,000 past its timer quota) took seconds under `validate` and
/// failed its sequences on the hang budget instead of on `host-api`.
final class HostCallRefusalWatchTests: XCTestCase {
    func testTwentyThousandRefusalsReachTheWatchInLinearTime() {
        let seen = Atomic<Int>(0)
        HostCallRefusals.watch { refusal in
            if refusal.function == "add_timer" { seen.add(1, ordering: .relaxed) }
        }
        defer { HostCallRefusals.watch(nil) }
        let start = Date()
        for _ in 0..<20_000 { HostCallRefusals.refused(nil, "add_timer", lc_status(LC_ERR_QUOTA)) }
        let elapsed = Date().timeIntervalSince(start)
        XCTAssertEqual(seen.load(ordering: .relaxed), 20_000)
        // Linear: a few milliseconds in a debug build (7.6 s when each read added two thunks).
        XCTAssertLessThan(elapsed, 1.0)
        HostCallRefusals.watch(nil)
        HostCallRefusals.refused(nil, "add_timer", lc_status(LC_ERR_QUOTA))
        XCTAssertEqual(seen.load(ordering: .relaxed), 20_000, "no watch: nothing called")
    }
}
