import ArgumentParser
import XCTest
@testable import lifecycle_host

/// `lifecycle-host run` has two parsers: a fast one for plain command lines (start-up time) and
/// swift-argument-parser for everything else. They must agree wherever the fast one answers.
final class CommandLineTests: XCTestCase {
    func testTheFastPathAgreesWithArgumentParser() throws {
        let lines: [[String]] = [
            ["run"],
            ["run", "--plugin", "/a.so", "--plugin", "b.so", "--plugin-dir", "/plugins", "--script", "s.scenario"],
            ["run", "--interactive", "--background-launch", "--launch-option", "url=app://x", "--launch-option", "n=3"],
            ["run", "--trace", "json", "--budget", "launch=2", "--budget", "did-enter-background=0.5", "--watchdog", "report"],
            ["run", "--background-mode", "audio", "--background-mode", "fetch", "--exits-on-suspend", "--archive", "/tmp/a"],
            ["run", "--no-signals", "--no-pressure", "--no-clock", "--no-socket", "--timeline", "t.svg", "--allow-unsafe-plugins"],
            ["run", "--socket", "/tmp/s.sock", "--pressure-file", "/proc/pressure/cpu", "--pressure-warning", "some 1 2000000",
             "--pressure-critical", "full 2 2000000"],
            ["run", "--pressure-delay", "0", "--script", "s.scenario"],
            ["run", "--pressure-delay", "1.5"],
        ]
        for line in lines {
            let fast = try XCTUnwrap(RunValues.parse(line), "\(line)")
            let parsed = try Run.parse(Array(line.dropFirst())).values
            XCTAssertEqual(fast, parsed, "\(line)")
        }
    }

    func testTheFastPathLeavesEverythingElseToArgumentParser() {
        for line: [String] in [
            ["run", "--trace=json"], ["run", "--help"], ["run", "--interactive", "--interactive"], ["run", "--script", "a", "--script", "b"],
            ["run", "--plugin"], ["run", "--plugin", "-x"], ["run", "--bogus"], ["run", "--pressure-delay", "soon"], ["run", "extra"], ["demo"], ["check", "x.so"],
        ] {
            XCTAssertNil(RunValues.parse(line), "\(line)")
        }
    }
}
