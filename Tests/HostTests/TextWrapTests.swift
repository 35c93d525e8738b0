import XCTest
@testable import lifecycle_host

/// The demo's wrapping (`TextWrap`): at spaces, a word longer than a line cut, the text's own leading
/// spaces kept on every line, continuations indented, no line wider than asked nor ending in a space.
final class TextWrapTests: XCTestCase {
    func testWrapsAtSpacesCutsLongWordsAndKeepsTheLead() {
        XCTAssertEqual(TextWrap.lines("short", width: 20, indent: 4), ["short"])
        XCTAssertEqual(TextWrap.lines("aaa bbb ccc ddd eee", width: 12, indent: 2), ["aaa bbb ccc", "  ddd eee"])
        XCTAssertEqual(TextWrap.lines("  one two three four", width: 14, indent: 2), ["  one two", "    three four"])
        // A word that fits no line starts its own, cut where each line ends.
        XCTAssertEqual(TextWrap.lines("x /a/very/long/path/to/libEcho.so", width: 12, indent: 2),
                       ["x", "  /a/very/lo", "  ng/path/to", "  /libEcho.s", "  o"])
        XCTAssertEqual(TextWrap.lines("col   wide    gap", width: 10, indent: 0), ["col   wide", "gap"])
        for width in 10...40 {
            for line in TextWrap.lines(String(repeating: "word ", count: 30) + String(repeating: "z", count: 50), width: width, indent: 2) {
                XCTAssertLessThanOrEqual(line.count, width)
                XCTAssertNotEqual(line.last, " ")
            }
        }
    }
}
