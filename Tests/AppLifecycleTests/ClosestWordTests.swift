import XCTest

@testable import AppLifecycle

/// The word behind every "did you mean …?" (`closestWord(to:among:atMost:)`).
final class ClosestWordTests: XCTestCase {
    func testTheClosestWithinTheLimitAndHalfTheWord() {
        let commands = ["run", "demo", "check", "send", "status", "help"]
        XCTAssertEqual(closestWord(to: "rn", among: commands), "run")
        XCTAssertEqual(closestWord(to: "stauts", among: commands), "status")
        XCTAssertEqual(closestWord(to: "run", among: commands), "run", "an exact match")
        // A word of one letter is never "corrected" (every command is 3 or more edits away, and half
        // of one letter allows 1); two letters allow 1 edit.
        XCTAssertNil(closestWord(to: "x", among: commands))
        XCTAssertNil(closestWord(to: "zz", among: commands))
        XCTAssertEqual(closestWord(to: "critcal", among: ["normal", "warning", "critical"]), "critical")
        // Ties go to the first candidate; a closer later one wins.
        XCTAssertEqual(closestWord(to: "sen", among: ["send", "seen"]), "send")
        XCTAssertEqual(closestWord(to: "seen", among: ["sewn", "seen"]), "seen")
        // The limit: at most 3 edits, whatever the word's length.
        XCTAssertNil(closestWord(to: "background-tasks-x", among: ["background-task-yyyy"]))
        XCTAssertEqual(closestWord(to: "did-enter-backgrnd", among: ["did-enter-background"]), "did-enter-background")
        XCTAssertNil(closestWord(to: String(repeating: "x", count: 1 << 16), among: commands), "a hostile length costs nothing")
    }

    func testDidYouMeanWords() {
        XCTAssertEqual(didYouMean("jsn", among: ["text", "json"]), " (did you mean 'json'?)")
        XCTAssertEqual(didYouMean("xml", among: ["text", "json"]), "")
    }
}
