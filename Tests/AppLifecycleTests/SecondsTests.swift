import AppLifecycle
import XCTest

/// `Seconds`: the one checked conversion of user-given seconds into a `Duration`.
final class SecondsTests: XCTestCase {
    private func problem(_ body: () throws(ApplicationError) -> Duration, line: UInt = #line) -> String? {
        do {
            _ = try body()
            return nil
        } catch {
            XCTAssertEqual(error.code, .invalidArgument, line: line)
            return error.message
        }
    }

    func testTextWithUnits() throws {
        XCTAssertEqual(try Seconds.parse("250ms"), .milliseconds(250))
        XCTAssertEqual(try Seconds.parse("2s"), .seconds(2))
        XCTAssertEqual(try Seconds.parse("1.5s"), .milliseconds(1500))
        XCTAssertEqual(try Seconds.parse("100us"), .microseconds(100))
        XCTAssertEqual(try Seconds.parse("1m"), .seconds(60))
        XCTAssertEqual(try Seconds.parse("2"), .seconds(2))
        XCTAssertEqual(try Seconds.parse("1e3ms"), .seconds(1))
        XCTAssertEqual(try Seconds.parse("0"), .zero)
        XCTAssertEqual(try Seconds.parse("0.1s"), .milliseconds(100), "rounded to the nanosecond, not truncated")
        // The limit itself is accepted, and converts without a trap.
        XCTAssertEqual(try Seconds.parse("9223372036s"), .seconds(9_223_372_036))
        XCTAssertEqual(try Seconds.parse("153722867m"), .seconds(9_223_372_020))
    }

    /// Each of these trapped (SIGILL) or slipped through before: `Int64(x * 1e9)` past 2^63 traps.
    func testOutOfRangeIsRefusedBeforeAnyConversion() {
        let limit = "out of range: at most 9223372036 s (about 292 years)"
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse("1e300s") }, limit)
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse("1e10s") }, limit)
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse("9223372037") }, limit)
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse("1e308m") }, limit, "the unit's product overflows to infinity")
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse("-1s") }, "cannot be negative")
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse("0", allowsZero: false) }, "must be more than 0")
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse("90000", atMost: 86_400) }, "out of range: at most 86400 s")
        let notANumber = "not a number with a unit (e.g. 250ms, 2s, 1.5s)"
        for text in ["", "s", "soon", "nan", "inf", "infs", "-inf", "0x10", "2 s", "+1s", "1e", "e3", ".", "1.2.3", "１s"] {
            XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.parse(text) }, notANumber, text)
        }
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.duration(.nan) }, "not a number")
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.duration(.infinity) }, limit)
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.duration(-.infinity) }, "cannot be negative")
        XCTAssertEqual(problem { () throws(ApplicationError) in try Seconds.duration(1e300) }, limit)
        XCTAssertEqual(try Seconds.duration(0.25), .milliseconds(250))
    }
}
