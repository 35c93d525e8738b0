import Foundation
import FuzzEntries
import XCTest

/// Every input a fuzzer ever crashed (Fuzz/regressions/TARGET/) and every seed (Fuzz/corpus/TARGET/),
/// fed to the same entry point the libFuzzer executables call: each must end with a clean answer — no
/// crash, no trap, every property of the target holding, every refusal saying why.
final class FuzzRegressionTests: XCTestCase {
    /// The package's Fuzz folder.
    static let fuzzFolder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Fuzz")

    func testEveryRegressionInputGetsACleanAnswer() throws {
        for target in FuzzTarget.allCases {
            let count = try replay(target, from: "regressions")
            XCTAssertGreaterThan(count, 0, "Fuzz/regressions/\(target.rawValue) holds no input")
        }
    }

    func testEverySeedInputGetsACleanAnswer() throws {
        for target in FuzzTarget.allCases {
            let count = try replay(target, from: "corpus")
            XCTAssertGreaterThan(count, 0, "Fuzz/corpus/\(target.rawValue) holds no seed")
        }
    }

    /// The inputs that crashed the host before they were checked, with the words they get now.
    func testFormerCrashesAreRefusedWithTheirReason() throws {
        let cases: [(FuzzTarget, String, String)] = [
            (.scenario, "wait-1e300s", "fuzz.scenario:1: bad duration '1e300s': out of range: at most 9223372036 s (about 292 years)"),
            (.control, "send-wait-1e10s", "bad duration '1e10s': out of range: at most 9223372036 s (about 292 years)"),
            (.archive, "claims-2-gib", "truncated: the payload has 0 of 2147483648 bytes"),
        ]
        for (target, name, error) in cases {
            let bytes = try [UInt8](Data(contentsOf: Self.fuzzFolder.appendingPathComponent("regressions/\(target.rawValue)/\(name)")))
            let outcome = target.run(bytes)
            XCTAssertEqual(outcome.errors.first, error, "\(target.rawValue)/\(name)")
            XCTAssertEqual(outcome.violations, [], "\(target.rawValue)/\(name)")
        }
    }

    /// Runs every file of Fuzz/FOLDER/TARGET through the target; returns how many there were.
    private func replay(_ target: FuzzTarget, from folder: String) throws -> Int {
        let directory = Self.fuzzFolder.appendingPathComponent("\(folder)/\(target.rawValue)")
        let names = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { !$0.hasPrefix(".") }.sorted()
        for name in names {
            let bytes = try [UInt8](Data(contentsOf: directory.appendingPathComponent(name)))
            let outcome = target.run(bytes)
            XCTAssertEqual(outcome.violations, [], "\(folder)/\(target.rawValue)/\(name)")
            for error in outcome.errors {
                XCTAssertFalse(error.isEmpty, "\(folder)/\(target.rawValue)/\(name): an error without words")
            }
        }
        return names.count
    }
}
