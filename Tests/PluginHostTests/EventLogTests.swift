import XCTest
@testable import PluginHost

/// The host's log of the frames an isolated plugin has not finished: what a long one-way stream
/// leaves in it is what is in flight, however long the stream (4,000,000 notifications once grew the
/// host by 98 MiB: the earliest-deadline queue kept every frame until a deadline was looked up).
final class EventLogTests: XCTestCase {
    func testAStreamFinishedAsItGoesKeepsOnlyWhatIsInFlight() {
        var log = EventLog()
        let inFlight = 3_000
        var deadline: UInt64 = 1_000
        for step in 1...200_000 {
            deadline += 10  // each frame's deadline later than the one before: a notification stream
            let number = log.append(EventLog.Entry(what: .notification(7), budget: .call, deadline: deadline))
            XCTAssertEqual(number, UInt64(step))
            if step > inFlight { log.finish(through: UInt64(step - inFlight)) }
            if step % 10_000 == 0 {
                let stored = log.storedCount
                XCTAssertLessThanOrEqual(stored.entries, 2 * inFlight + 4_096, "entries after \(step) frames")
                XCTAssertLessThanOrEqual(stored.minimums, 2 * inFlight + 1_024, "deadlines after \(step) frames")
            }
        }
        // The earliest unfinished deadline is the oldest unfinished frame's.
        let earliest = log.earliest
        XCTAssertEqual(earliest?.number, UInt64(200_000 - inFlight + 1))
        XCTAssertEqual(earliest?.deadline, 1_000 + 10 * UInt64(200_000 - inFlight + 1))
        log.finish(through: 200_000)
        XCTAssertNil(log.earliest)
        XCTAssertEqual(log.storedCount.entries, 0)
        XCTAssertEqual(log.storedCount.minimums, 0)
        XCTAssertEqual(log.what(of: 200_000), .notification(7), "the last finished frames are still named")
    }

    func testAnEarlierDeadlineSentLaterIsTheEarliestUntilItFinishes() {
        var log = EventLog()
        _ = log.append(EventLog.Entry(what: .notification(1), budget: .call, deadline: 500))
        _ = log.append(EventLog.Entry(what: .delegate(3), budget: .phase(.launch), deadline: 200))
        _ = log.append(EventLog.Entry(what: .sync, budget: .call, deadline: 900))
        XCTAssertEqual(log.earliest?.number, 2)
        log.finish(through: 2)
        XCTAssertEqual(log.earliest?.number, 3)
        XCTAssertEqual(log.earliest?.deadline, 900)
    }
}
