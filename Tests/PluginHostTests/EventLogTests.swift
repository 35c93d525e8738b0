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

    /// Frames in a row with the same facts (a stream sent within one tick of the coarse clock) are held
    /// as one run, and each is still found by its number, finished in part, and named after it finished.
    func testAStreamSentWithinOneTickIsOneRunAndEachFrameIsStillFound() {
        var log = EventLog()
        let tick = EventLog.Entry(what: .notification(7), budget: .call, deadline: 5_000, sentAt: 1_000)
        for step in 1...1_000 { XCTAssertEqual(log.append(tick), UInt64(step)) }
        let other = EventLog.Entry(what: .notification(8), budget: .call, deadline: 5_000, sentAt: 1_000)
        XCTAssertEqual(log.append(other), 1_001)
        let later = EventLog.Entry(what: .notification(7), budget: .call, deadline: 6_000, sentAt: 2_000)
        for _ in 1...500 { _ = log.append(later) }
        XCTAssertEqual(log.storedCount.entries, 3, "three runs: 1,000 ticks, one other name, 500 later ticks")
        XCTAssertEqual(log.entry(1), tick)
        XCTAssertEqual(log.entry(1_000), tick)
        XCTAssertEqual(log.entry(1_001), other)
        XCTAssertEqual(log.entry(1_002), later)
        XCTAssertEqual(log.entry(1_501), later)
        XCTAssertNil(log.entry(1_502), "not sent")
        XCTAssertNil(log.entry(0))

        log.finish(through: 600, at: 3_000)
        XCTAssertNil(log.entry(600), "finished")
        XCTAssertEqual(log.entry(601), tick)
        XCTAssertEqual(log.earliest?.number, 601)
        XCTAssertEqual(log.earliest?.deadline, 3_000 + 4_000, "the call budget from when the host saw progress")
        XCTAssertEqual(log.what(of: 600), .notification(7), "named after it finished")
        XCTAssertEqual(log.what(of: 600 - UInt64(EventLog.recentCapacity) + 1), .notification(7))
        XCTAssertNil(log.what(of: 600 - UInt64(EventLog.recentCapacity)), "past the ring")

        log.finish(through: 1_100, at: 3_000)
        XCTAssertEqual(log.storedCount.entries, 1, "only the later run is left")
        XCTAssertEqual(log.what(of: 1_001), .notification(8))
        XCTAssertEqual(log.what(of: 1_000), .notification(7))
        XCTAssertEqual(log.what(of: 1_100), .notification(7))
        XCTAssertEqual(log.earliest?.number, 1_101)
        XCTAssertEqual(log.earliest?.deadline, 3_000 + 4_000)

        log.postpone(by: 10_000)
        XCTAssertEqual(log.entry(1_200)?.deadline, 16_000)
        XCTAssertEqual(log.append(later), 1_502, "a postponed run is not continued by an entry that was not")
        XCTAssertEqual(log.storedCount.entries, 2)
        log.finish(through: 1_502)
        XCTAssertFalse(log.hasPending)
        XCTAssertNil(log.earliest)
        XCTAssertEqual(log.storedCount.entries, 0)
    }
}
