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
            ["run", "--plugin", "/missing.so", "--allow-no-plugins"],
            ["run", "--socket", "/tmp/s.sock", "--pressure-file", "/proc/pressure/cpu", "--pressure-warning", "some 1 2000000",
             "--pressure-critical", "full 2 2000000"],
            ["run", "--pressure-delay", "0", "--script", "s.scenario"],
            ["run", "--pressure-delay", "1.5"],
            ["run", "--pressure-delay", "soon"],
            ["run", "--pressure-delay", "1e300"],
            ["run", "--trace-output", "t.json", "--trace", "json"],
            ["run", "--trace-export", "chrome=t.json", "--timeline", "t.svg"], ["run", "--trace-export", "chrom=t.json"],
            ["run", "--trace-export", "chrome="], ["run", "--trace-export", "t.json"],
            ["run", "--scenes", "--script", "s.scenario"], ["run", "--scenes"], ["run", "--no-clock", "--scenes", "single"],
            ["run", "--scenes", "singel", "--no-socket"],
            ["run", "--memory-warning-limit", "3"], ["run", "--memory-warning-limit", "0"], ["run", "--memory-warning-limit", "1001"],
            ["run", "--memory-warning-limit", "99999999999999999999999"], ["run", "--memory-warning-limit", "two"],
            ["run", "--clock", "virtual", "--script", "s.scenario"], ["run", "--clock", "real"], ["run", "--clock", "wall"],
        ]
        for line in lines {
            let fast = try XCTUnwrap(RunValues.parse(line), "\(line)")
            // A line whose values do not validate is refused by both, with the same words.
            if let refusal = refusal({ _ = try fast.options() }) {
                XCTAssertEqual(refusal, self.refusal({ _ = try Run.parse(IsolateOption.spelledForParser(Array(line.dropFirst()))) }), "\(line)")
                continue
            }
            let parsed = try Run.parse(IsolateOption.spelledForParser(Array(line.dropFirst()))).values
            XCTAssertEqual(fast, parsed, "\(line)")
        }
    }

    /// The message of the error `body` throws (nil when it throws none), as the command line shows it.
    private func refusal(_ body: () throws -> Void) -> String? {
        do { try body() } catch { return Run.message(for: error) }
        return nil
    }

    /// `main` starts the runners' server first thing only for a command line that plainly asks `run` to
    /// isolate (a look at the words, before any parse).
    func testTheRunnersServerStartsFirstOnlyForAPlainIsolatedRun() {
        for line in [["run", "--isolate"], ["run", "--plugin", "a.so", "--isolate", "com.a,b"], ["run", "--isolate=*"],
                     ["run", "--trace", "json", "--isolate", "--plugin", "a.so"]] {
            XCTAssertTrue(RunValues.plainlyIsolates(line), "\(line)")
        }
        for line in [["run"], ["run", "--plugin", "a.so"], ["demo", "--isolate"], ["check", "--isolate"], ["run", "--isolate", "--help"],
                     ["run", "-h", "--isolate"], ["run", "--version", "--isolate"], ["run", "--isolated"], [], ["--isolate", "run"]] {
            XCTAssertFalse(RunValues.plainlyIsolates(line), "\(line)")
        }
    }

    func testTheFastPathLeavesEverythingElseToArgumentParser() {
        for line: [String] in [
            ["run", "--trace=json"], ["run", "--help"], ["run", "--interactive", "--interactive"], ["run", "--script", "a", "--script", "b"],
            ["run", "--plugin"], ["run", "--plugin", "-x"], ["run", "--bogus"], ["run", "extra"], ["demo"], ["check", "x.so"],
        ] {
            XCTAssertNil(RunValues.parse(line), "\(line)")
        }
    }

    /// Numbers on the command line are range-checked before they become durations: `--budget
    /// launch=1e10` trapped in the conversion (SIGILL) and killed the host before it started.
    func testNumbersAreCheckedBeforeTheyAreConverted() throws {
        for (line, message) in [
            (["run", "--budget", "launch=1e10"], "--budget launch=1e10: out of range: at most 9223372036 s (about 292 years)"),
            (["run", "--budget", "launch=1e300"], "--budget launch=1e300: out of range: at most 9223372036 s (about 292 years)"),
            (["run", "--budget", "completion=0"], "--budget completion=0: must be more than 0"),
            (["run", "--budget", "launch=-5"], "--budget launch=-5: cannot be negative"),
            (["run", "--budget", "launch=nan"], "--budget launch=nan: not a number with a unit (e.g. 250ms, 2s, 1.5s)"),
            (["run", "--pressure-delay", "1e300"], "--pressure-delay 1e300: out of range: at most 86400 s"),
            (["run", "--pressure-delay", "soon"], "--pressure-delay soon: not a number with a unit (e.g. 250ms, 2s, 1.5s)"),
        ] {
            let values = try XCTUnwrap(RunValues.parse(line), "\(line)")
            XCTAssertThrowsError(try values.options(), "\(line)") { error in
                XCTAssertEqual((error as? ValidationError)?.message, message, "\(line)")
            }
        }
        // Units are accepted where seconds are.
        let options = try XCTUnwrap(RunValues.parse(["run", "--budget", "launch=250ms", "--pressure-delay", "1.5s"])).options()
        XCTAssertEqual(options.configuration.budgets.launch, .milliseconds(250))
        XCTAssertEqual(options.osEvents.pressureDelay, .milliseconds(1500))
    }
}
